package store

import "context"

// SettleOpenOf settles at the amount they hold the open reservations of
// root that pick chooses: with `solve worker`, those a dead attempt left
// (the caller knows which calls no live process owns: a step's next
// attempt, or a coordinator resuming, leaving the nodes workers hold
// alone). It returns the reservations settled.
func (s *Store) SettleOpenOf(ctx context.Context, root string, pick func(OpenReservation) bool) ([]OpenReservation, error) {
	open, err := s.OpenReservations(ctx, root)
	if err != nil {
		return nil, err
	}
	var chosen []OpenReservation
	for _, o := range open {
		if pick(o) {
			chosen = append(chosen, o)
		}
	}
	return chosen, s.settleAtReservation(ctx, chosen)
}
