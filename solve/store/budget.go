package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"
)

// Reservations (the loop's rule: reserve before every paid call, settle
// after it). A reservation holds part of a node's remaining budget for one
// resolver call. It is taken in one transaction that checks the remaining
// budget with a conditional UPDATE of the node's row — the statement reads
// and changes the row under its write lock, so two workers, two processes
// or (on PostgreSQL) two machines can never both take the last of a
// budget — and it is settled after the call, in one transaction that
// records the spend with its actual cost and time and frees the hold. A
// process killed in between leaves the reservation open; Resume settles it
// (SettleOpen) at the amount held, an unknown outcome, so a paid call is
// never forgotten, and at the time it ran: while a call runs, its process
// writes a heartbeat (Heartbeat) every HeartbeatInterval.
//
// The node's cache columns budget_reserved and time_reserved always equal
// the sum of its open reservations (same transactions).

// Hold asks for a reservation.
type Hold struct {
	Node, Parent, Root string
	Resolver, Op       string
	Owner              string // the process (or worker) that makes the call
	Cost, Time         float64
	// Upto is the most the call may cost when that is more than Cost (the
	// estimate): after Cost is held, the hold grows towards Upto from what
	// the node itself has left (never from the parent's reserve), so the
	// call can be capped at what is held. Zero: hold Cost.
	Upto float64
	// Leased: Owner must hold Root's lease (a run's call), else the hold
	// is refused with ErrLeaseLost.
	Leased bool
}

// Reservation is a granted hold.
type Reservation struct {
	ID         string
	Cost, Time float64 // held: Cost is at least the Hold's, at most its Upto
	// TimeLeft is the node's wall time left for this call (seconds): its
	// remaining time including what this reservation holds. The call's
	// deadline.
	TimeLeft float64
	// TopUp is the cost and time moved from the parent's reserve first
	// (the spec's PRE_CHECK reallocation), zero when the node's own budget
	// covered the call.
	TopUpCost, TopUpTime float64
}

// DeniedError is a reservation the node's budget (and its parent's
// reserve) cannot cover: the spec's PRE_CHECK DENIED.
type DeniedError struct {
	Node                         string
	Cost, Time                   float64 // asked
	RemainingCost, RemainingTime float64 // the node's
	HasParent                    bool
	ParentCost, ParentTime       float64 // the parent's remaining
}

func (e *DeniedError) Error() string {
	msg := fmt.Sprintf("estimated $%.4f / %.0fs, remaining $%.4f / %.0fs", e.Cost, e.Time, e.RemainingCost, e.RemainingTime)
	if e.HasParent {
		msg += fmt.Sprintf(" (the parent's reserve: $%.4f / %.0fs)", e.ParentCost, e.ParentTime)
	}
	return msg
}

// tolerances below which a float comparison of money or time is equal.
const (
	costEps = 1e-12
	timeEps = 1e-9
)

// Reserve takes a reservation for one call, in one transaction: a hold on
// the node when its remaining budget covers the estimate; otherwise, when
// the node has a parent whose remaining budget covers the estimate, the
// estimate is first moved from the parent to the node (a parent spend and
// a node allocation naming each other), then held. Anything else is a
// *DeniedError and changes nothing.
func (s *Store) Reserve(ctx context.Context, h Hold) (*Reservation, error) {
	r := &Reservation{ID: NewID(), Cost: h.Cost, Time: h.Time}
	err := s.Write(ctx, func(tx *Tx) error {
		if h.Leased {
			if err := tx.HoldsLease(ctx, h.Root, h.Owner); err != nil {
				return err
			}
		}
		ok, err := tx.hold(ctx, h)
		if err != nil {
			return err
		}
		if !ok && h.Parent != "" {
			// PRE_CHECK's reallocation: the parent's remainder covers the
			// estimate; it moves to the child, conditionally, then is held.
			moved, err := tx.transfer(ctx, h.Parent, h.Node, h.Cost, h.Time, "reserve reallocated to child "+h.Node, "from parent reserve")
			if err != nil {
				return err
			}
			if moved {
				r.TopUpCost, r.TopUpTime = h.Cost, h.Time
				if ok, err = tx.hold(ctx, h); err != nil {
					return err
				}
			}
		}
		if !ok {
			d := &DeniedError{Node: h.Node, Cost: h.Cost, Time: h.Time, HasParent: h.Parent != ""}
			if d.RemainingCost, d.RemainingTime, err = tx.remaining(ctx, h.Node); err != nil {
				return err
			}
			if h.Parent != "" {
				if d.ParentCost, d.ParentTime, err = tx.remaining(ctx, h.Parent); err != nil {
					return err
				}
			}
			return d
		}
		if h.Upto > h.Cost {
			if r.Cost, err = tx.extend(ctx, h); err != nil {
				return err
			}
		}
		if _, err := tx.exec(ctx, `INSERT INTO budget_reservations (id, node_id, root_id, resolver_id, operation, amount, time_amount, owner, status, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'open', ?)`, r.ID, h.Node, h.Root, h.Resolver, h.Op, r.Cost, h.Time, h.Owner, now()); err != nil {
			return fmt.Errorf("node %s: record the reservation: %w", Short(h.Node), err)
		}
		_, left, err := tx.remaining(ctx, h.Node)
		r.TimeLeft = left + h.Time
		return err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// hold is the conditional UPDATE that takes the hold when the node's
// remaining cost and time cover it (false: they do not; nothing changed).
func (c *Conn) hold(ctx context.Context, h Hold) (bool, error) {
	res, err := c.exec(ctx, `UPDATE nodes SET budget_reserved = budget_reserved + ?, time_reserved = time_reserved + ?
		WHERE id = ? AND budget_allocated - budget_spent - budget_reserved >= ? AND time_allocated - time_spent - time_reserved >= ?`,
		h.Cost, h.Time, h.Node, h.Cost-costEps, h.Time-timeEps)
	if err != nil {
		return false, fmt.Errorf("node %s: reserve $%.6f / %.3fs: %w", Short(h.Node), h.Cost, h.Time, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("node %s: reserve: %w", Short(h.Node), err)
	}
	return n == 1, nil
}

// extend grows a granted hold of h.Cost towards h.Upto with what the node
// has left, in the transaction that took it (whose write lock on the node's
// row it still holds), and returns the cost now held.
func (c *Conn) extend(ctx context.Context, h Hold) (float64, error) {
	left, _, err := c.remaining(ctx, h.Node)
	if err != nil {
		return 0, err
	}
	extra := math.Min(h.Upto-h.Cost, left)
	if extra <= costEps {
		return h.Cost, nil
	}
	res, err := c.exec(ctx, `UPDATE nodes SET budget_reserved = budget_reserved + ? WHERE id = ? AND budget_allocated - budget_spent - budget_reserved >= ?`,
		extra, h.Node, extra-costEps)
	if err != nil {
		return 0, fmt.Errorf("node %s: extend a reservation by $%.6f: %w", Short(h.Node), extra, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return h.Cost, err
	}
	return h.Cost + extra, nil
}

// remaining reads a node's remaining cost and time from its cache.
func (c *Conn) remaining(ctx context.Context, node string) (cost, secs float64, err error) {
	err = c.row(ctx, `SELECT budget_allocated - budget_spent - budget_reserved, time_allocated - time_spent - time_reserved FROM nodes WHERE id = ?`, node).Scan(&cost, &secs)
	if err != nil {
		err = fmt.Errorf("node %s: read its remaining budget: %w", Short(node), err)
	}
	return
}

// Remaining is a node's remaining cost and time (allocated − spent −
// held), read in the caller's transaction.
func (c *Conn) Remaining(ctx context.Context, node string) (cost, secs float64, err error) {
	return c.remaining(ctx, node)
}

// transfer moves cost and time from one node of a tree to another when
// the giver's remaining budget covers both (a conditional UPDATE of the
// giver's row, then the two ledger rows and the receiver's cache). It
// reports whether anything moved.
func (c *Conn) transfer(ctx context.Context, from, to string, cost, secs float64, out, in string) (bool, error) {
	res, err := c.exec(ctx, `UPDATE nodes SET budget_spent = budget_spent + ?, time_spent = time_spent + ?
		WHERE id = ? AND budget_allocated - budget_spent - budget_reserved >= ? AND time_allocated - time_spent - time_reserved >= ?`,
		cost, secs, from, cost-costEps, secs-timeEps)
	if err != nil {
		return false, fmt.Errorf("node %s: move $%.6f / %.3fs to node %s: %w", Short(from), cost, secs, Short(to), err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return false, err
	}
	if err := c.insertLedger(ctx, LedgerEntry{Node: from, Event: Spend, Amount: cost, Time: secs, Counterpart: to, Description: out}); err != nil {
		return false, err
	}
	return true, c.WriteLedger(ctx, LedgerEntry{Node: to, Event: Allocate, Amount: cost, Time: secs, Counterpart: from, Description: in})
}

// Cover makes sure a node's remaining budget covers cost and time, in one
// transaction: true when it does, or when its parent's remaining budget
// covers them and they were moved to the node (the PRE_CHECK
// reallocation); false, changing nothing, otherwise.
func (s *Store) Cover(ctx context.Context, node, parent string, cost, secs float64) (bool, error) {
	ok := false
	err := s.Write(ctx, func(tx *Tx) error {
		rc, rt, err := tx.remaining(ctx, node)
		if err != nil {
			return err
		}
		if rc >= cost-costEps && rt >= secs-timeEps {
			ok = true
			return nil
		}
		if parent == "" {
			return nil
		}
		ok, err = tx.transfer(ctx, parent, node, cost, secs, "reserve reallocated to child "+node, "from parent reserve")
		return err
	})
	return ok, err
}

// ErrInsufficient is a transfer the giver's remaining budget cannot cover.
var ErrInsufficient = errors.New("the remaining budget does not cover the transfer")

// Delegate allocates cost and time from a parent to a child of its tree
// (decomposition, a BUILD subgoal): a parent spend and a child allocation
// naming each other, refused with ErrInsufficient when the parent's
// remaining budget does not cover it.
func (c *Conn) Delegate(ctx context.Context, parent, child string, cost, secs float64, out, in string) error {
	moved, err := c.transfer(ctx, parent, child, cost, secs, out, in)
	if err != nil {
		return err
	}
	if !moved {
		return fmt.Errorf("node %s: allocate $%.6f / %.3fs to node %s: %w", Short(parent), cost, secs, Short(child), ErrInsufficient)
	}
	return nil
}

// Settlement is a reservation's outcome: what the call actually cost and
// took, and its tier-3 row.
type Settlement struct {
	Reservation string
	Cost, Time  float64
	// Unknown is the part of Cost whose outcome is unknown: a call cut off
	// with a request in flight is settled at its hold, and whether the
	// provider billed it is not known.
	Unknown    float64
	LogSummary string
	LogDetail  any
}

// Settle closes an open reservation in one transaction: the spend with
// the call's actual cost and time (a ledger row naming the resolver and
// the reservation), the hold freed, and the call's tier-3 row. It reports
// false, changing nothing, when the reservation is already settled. A
// node invalidated while its call ran returns what it has left to the
// nearest live ancestor.
func (s *Store) Settle(ctx context.Context, st Settlement) (bool, error) {
	settled := false
	err := s.Write(ctx, func(tx *Tx) error {
		var err error
		settled, err = tx.settle(ctx, st)
		return err
	})
	return settled, err
}

func (c *Conn) settle(ctx context.Context, st Settlement) (bool, error) {
	var node, resolver, op, status string
	var held, heldTime float64
	err := c.row(ctx, `SELECT node_id, resolver_id, operation, amount, time_amount, status FROM budget_reservations WHERE id = ?`, st.Reservation).
		Scan(&node, &resolver, &op, &held, &heldTime, &status)
	if err != nil {
		return false, fmt.Errorf("settle reservation %s: %w", st.Reservation, err)
	}
	res, err := c.exec(ctx, `UPDATE budget_reservations SET status = 'settled', settled_at = ?, settled_amount = ?, settled_time = ? WHERE id = ? AND status = 'open'`,
		now(), st.Cost, st.Time, st.Reservation)
	if err != nil {
		return false, fmt.Errorf("settle reservation %s: %w", st.Reservation, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return false, err // settled before (by this process, or by a resume)
	}
	desc := op
	if st.Unknown > 0 {
		desc += " (unknown outcome: settled at its hold)"
	}
	if err := c.insertLedger(ctx, LedgerEntry{Node: node, Event: Spend, Amount: st.Cost, Unknown: st.Unknown, Time: st.Time, Resolver: resolver,
		Reservation: st.Reservation, Description: desc}); err != nil {
		return false, err
	}
	if err := c.setNode(ctx, "settle a reservation", node, `budget_reserved = budget_reserved - ?, time_reserved = time_reserved - ?,
		budget_spent = budget_spent + ?, time_spent = time_spent + ?`, held, heldTime, st.Cost, st.Time); err != nil {
		return false, err
	}
	if st.LogSummary != "" {
		if err := c.Log(ctx, 3, node, st.LogSummary, st.LogDetail); err != nil {
			return false, err
		}
	}
	return true, c.ReturnUnspent(ctx, node)
}

// OpenReservation is a reservation not yet settled.
type OpenReservation struct {
	ID, Node, Resolver, Op, Owner string
	Cost, Time                    float64
	// Alive is how long the call had run at its last heartbeat (seconds).
	Alive float64
}

// OpenReservations lists a root's open reservations, oldest first.
func (c *Conn) OpenReservations(ctx context.Context, root string) ([]OpenReservation, error) {
	return list(ctx, c, "list the open reservations of "+root, func(r *sql.Rows) (OpenReservation, error) {
		var o OpenReservation
		err := r.Scan(&o.ID, &o.Node, &o.Resolver, &o.Op, &o.Owner, &o.Cost, &o.Time, &o.Alive)
		return o, err
	}, `SELECT id, node_id, resolver_id, operation, owner, amount, time_amount, COALESCE(alive_seconds, 0) FROM budget_reservations WHERE root_id = ? AND status = 'open' ORDER BY {seq}`, root)
}

// HeartbeatInterval is how often a call in flight records that its
// process is alive (Heartbeat).
const HeartbeatInterval = time.Second

// Heartbeat records that the call holding an open reservation had run
// alive seconds and its process was alive then.
func (s *Store) Heartbeat(ctx context.Context, reservation string, alive float64) error {
	return s.Write(ctx, func(tx *Tx) error {
		if _, err := tx.exec(ctx, `UPDATE budget_reservations SET alive_seconds = ? WHERE id = ? AND status = 'open'`, alive, reservation); err != nil {
			return fmt.Errorf("reservation %s: record its heartbeat: %w", reservation, err)
		}
		return nil
	})
}

// Ran is the wall time a call stopped in flight is taken to have run: up
// to its last heartbeat, plus the interval before the next one it did not
// write (it may have run that long more, never longer), at most what it
// held. The time its process was dead is not the node's.
func (o OpenReservation) Ran() float64 {
	return math.Min(o.Time, o.Alive+HeartbeatInterval.Seconds())
}

// SettleOpen settles every open reservation of a root: the reservations
// of a process that stopped during a call (the caller holds the run's
// lease, so no live process owns them). The call may or may not have been
// served: its outcome is unknown, and it is settled at the amount held,
// the most it was allowed to cost, so the ledger never records less than
// was spent (the whole amount marked unknown), and at the time it ran
// (Ran). It returns the reservations settled.
func (s *Store) SettleOpen(ctx context.Context, root string) ([]OpenReservation, error) {
	open, err := s.OpenReservations(ctx, root)
	if err != nil {
		return nil, err
	}
	return open, s.settleAtReservation(ctx, open)
}

// settleAtReservation settles each of open at the amount it holds and the
// time it ran.
func (s *Store) settleAtReservation(ctx context.Context, open []OpenReservation) error {
	for _, o := range open {
		detail := map[string]any{"resolver": o.Resolver, "op": o.Op, "cost": o.Cost, "unknown_usd": o.Cost, "time_seconds": o.Ran(), "held_seconds": o.Time,
			"reservation_id": o.ID, "settled_at_reservation": true, "outcome": "unknown", "raw_io_policy": "redacted_by_default",
			"why": "the process that made this call stopped before recording its cost; the amount reserved is settled, the most the call was allowed to cost, and the time it ran until its last heartbeat"}
		if _, err := s.Settle(ctx, Settlement{Reservation: o.ID, Cost: o.Cost, Unknown: o.Cost, Time: o.Ran(),
			LogSummary: fmt.Sprintf("%s %s (settled at its reservation after a stop: unknown outcome)", o.Resolver, o.Op), LogDetail: detail}); err != nil {
			return err
		}
	}
	return nil
}

// ReturnUnspent gives what an invalidated node has left (allocated −
// spent − held, when positive) back to its parent — a spend of the node
// and a refund of the parent naming each other — and goes on up while
// the parent is invalidated too, so the money reaches the nearest live
// ancestor, which reallocates it when it decomposes again. A live node is
// left alone.
func (c *Conn) ReturnUnspent(ctx context.Context, node string) error {
	for node != "" {
		var parent string
		var invalidated bool
		var cost, secs float64
		err := c.row(ctx, `SELECT COALESCE(parent_id, ''), invalidated_at IS NOT NULL, budget_allocated - budget_spent - budget_reserved,
			time_allocated - time_spent - time_reserved FROM nodes WHERE id = ?`, node).Scan(&parent, &invalidated, &cost, &secs)
		if err != nil {
			return fmt.Errorf("node %s: read what it has left: %w", Short(node), err)
		}
		if !invalidated || parent == "" {
			return nil
		}
		cost, secs = math.Max(cost, 0), math.Max(secs, 0)
		if cost > costEps || secs > timeEps {
			if err := c.WriteLedger(ctx, LedgerEntry{Node: node, Event: Spend, Amount: cost, Time: secs, Counterpart: parent,
				Description: "unspent, returned to parent " + parent + " (invalidated)"}); err != nil {
				return err
			}
			if err := c.WriteLedger(ctx, LedgerEntry{Node: parent, Event: Refund, Amount: cost, Time: secs, Counterpart: node,
				Description: "returned by invalidated child " + node}); err != nil {
				return err
			}
		}
		node = parent
	}
	return nil
}

// SubtreeSpend is what the paid calls of a node and its descendants
// (invalidated ones included: that money was spent) cost and took.
func (c *Conn) SubtreeSpend(ctx context.Context, node string) (cost, secs float64, err error) {
	// CROSS JOIN keeps the subtree outside (SQLite takes it as the join
	// order, PostgreSQL as a plain join): otherwise SQLite scans the whole
	// ledger against the subtree, and a step costs more as the tree grows.
	err = c.row(ctx, `WITH RECURSIVE sub(id) AS (SELECT ? UNION ALL SELECT n.id FROM nodes n JOIN sub ON n.parent_id = sub.id)
		SELECT COALESCE(SUM(l.amount), 0), COALESCE(SUM(l.time_amount), 0) FROM sub CROSS JOIN budget_ledger l
		WHERE l.node_id = sub.id AND l.event_type = 'spend' AND l.resolver_id IS NOT NULL`, node).Scan(&cost, &secs)
	if err != nil {
		err = fmt.Errorf("node %s: sum the spend of its subtree: %w", Short(node), err)
	}
	return
}

// NodeBudget is one node's money and time as a person reads them.
type NodeBudget struct {
	// Received: allocations to the node (from its parent, or from outside
	// the tree: the root budget and human top-ups).
	ReceivedUSD, ReceivedSeconds float64
	// External: the part of Received from outside the tree.
	ExternalUSD float64
	// Spent: the node's own paid calls (money actually spent, or held by
	// a call whose outcome is unknown).
	SpentUSD, SpentSeconds float64
	// Unknown: the part of Spent whose outcome is unknown (calls cut off
	// with a request in flight, settled at their hold); the rest was
	// billed for certain.
	UnknownUSD float64
	// Delegated: handed to its children (allocations and reserve top-ups,
	// less what invalidated children gave back).
	DelegatedUSD, DelegatedSeconds float64
	// Returned: given back to its parent after it was invalidated.
	ReturnedUSD, ReturnedSeconds float64
	// Held: open reservations (calls in flight).
	HeldUSD, HeldSeconds float64
}

// ReserveUSD is what the node has left: received − spent − delegated −
// returned − held.
func (b NodeBudget) ReserveUSD() float64 {
	return b.ReceivedUSD - b.SpentUSD - b.DelegatedUSD - b.ReturnedUSD - b.HeldUSD
}

// ReserveSeconds is the wall time the node has left.
func (b NodeBudget) ReserveSeconds() float64 {
	return b.ReceivedSeconds - b.SpentSeconds - b.DelegatedSeconds - b.ReturnedSeconds - b.HeldSeconds
}

// NodeBudgets reads the budget of every node of a root's tree in one
// query (and one for the open reservations).
func (c *Conn) NodeBudgets(ctx context.Context, root string) (map[string]NodeBudget, error) {
	type row struct {
		node string
		b    NodeBudget
	}
	rows, err := list(ctx, c, "read the budgets of "+root, func(r *sql.Rows) (row, error) {
		var x row
		err := r.Scan(&x.node, &x.b.ReceivedUSD, &x.b.ReceivedSeconds, &x.b.ExternalUSD, &x.b.SpentUSD, &x.b.SpentSeconds, &x.b.UnknownUSD,
			&x.b.DelegatedUSD, &x.b.DelegatedSeconds, &x.b.ReturnedUSD, &x.b.ReturnedSeconds)
		return x, err
	}, `SELECT l.node_id,
		COALESCE(SUM(CASE WHEN l.event_type = 'allocate' THEN l.amount END), 0),
		COALESCE(SUM(CASE WHEN l.event_type = 'allocate' THEN l.time_amount END), 0),
		COALESCE(SUM(CASE WHEN l.event_type = 'allocate' AND l.counterpart_node_id IS NULL THEN l.amount END), 0),
		COALESCE(SUM(CASE WHEN l.event_type = 'spend' AND l.resolver_id IS NOT NULL THEN l.amount END), 0),
		COALESCE(SUM(CASE WHEN l.event_type = 'spend' AND l.resolver_id IS NOT NULL THEN l.time_amount END), 0),
		COALESCE(SUM(CASE WHEN l.event_type = 'spend' AND l.resolver_id IS NOT NULL THEN l.unknown_amount END), 0),
		COALESCE(SUM(CASE WHEN l.event_type = 'spend' AND l.resolver_id IS NULL AND (l.counterpart_node_id IS NULL OR l.counterpart_node_id <> COALESCE(n.parent_id, '')) THEN l.amount
			WHEN l.event_type = 'refund' THEN -l.amount END), 0),
		COALESCE(SUM(CASE WHEN l.event_type = 'spend' AND l.resolver_id IS NULL AND (l.counterpart_node_id IS NULL OR l.counterpart_node_id <> COALESCE(n.parent_id, '')) THEN l.time_amount
			WHEN l.event_type = 'refund' THEN -l.time_amount END), 0),
		COALESCE(SUM(CASE WHEN l.event_type = 'spend' AND l.resolver_id IS NULL AND l.counterpart_node_id = n.parent_id THEN l.amount END), 0),
		COALESCE(SUM(CASE WHEN l.event_type = 'spend' AND l.resolver_id IS NULL AND l.counterpart_node_id = n.parent_id THEN l.time_amount END), 0)
		FROM budget_ledger l JOIN nodes n ON n.id = l.node_id WHERE n.root_id = ? GROUP BY l.node_id`, root)
	if err != nil {
		return nil, err
	}
	out := make(map[string]NodeBudget, len(rows))
	for _, x := range rows {
		out[x.node] = x.b
	}
	held, err := list(ctx, c, "read the open reservations of "+root, func(r *sql.Rows) (row, error) {
		var x row
		err := r.Scan(&x.node, &x.b.HeldUSD, &x.b.HeldSeconds)
		return x, err
	}, `SELECT node_id, SUM(amount), SUM(time_amount) FROM budget_reservations WHERE root_id = ? AND status = 'open' GROUP BY node_id`, root)
	if err != nil {
		return nil, err
	}
	for _, x := range held {
		b := out[x.node]
		b.HeldUSD, b.HeldSeconds = x.b.HeldUSD, x.b.HeldSeconds
		out[x.node] = b
	}
	return out, nil
}
