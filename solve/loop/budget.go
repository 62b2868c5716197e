package loop

import (
	"context"

	"github.com/llmkernels/kernels/solve/store"
)

// budgetSession gates the resolver calls of one node step against the
// ledger (spec §2D, authoritative). Its entries are written in the step's
// commit transaction, with the attempt they paid for.
type budgetSession struct {
	node    string
	parent  string
	own     store.Balance
	par     store.Balance
	entries []store.LedgerEntry
}

func newBudget(ctx context.Context, st *store.Store, node, parent string) (*budgetSession, error) {
	s := &budgetSession{node: node, parent: parent}
	var err error
	if s.own, err = st.Balance(ctx, node); err != nil {
		return nil, err
	}
	if parent != "" {
		if s.par, err = st.Balance(ctx, parent); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// preCheck is PRE_CHECK: ALLOWED when the estimate fits the node's
// remaining budget, or the parent's remainder can cover it (then it is
// reallocated from the parent's reserve); otherwise DENIED.
func (s *budgetSession) preCheck(cost, seconds float64) bool {
	if cost <= s.own.RemainingCost()+1e-12 && seconds <= s.own.RemainingTime()+1e-9 {
		return true
	}
	if s.parent != "" && s.par.RemainingCost() >= cost && s.par.RemainingTime() >= seconds {
		// The parent's remainder moves to the child: spent by the parent
		// as an allocation, allocated to the child.
		s.entries = append(s.entries,
			store.LedgerEntry{Node: s.parent, Event: store.Spend, Amount: cost, Time: seconds, Description: "reserve reallocated to child " + s.node},
			store.LedgerEntry{Node: s.node, Event: store.Allocate, Amount: cost, Time: seconds, Description: "from parent reserve"})
		s.par.Spent += cost
		s.par.TimeSpent += seconds
		s.own.Allocated += cost
		s.own.TimeAllocated += seconds
		return true
	}
	return false
}

// record is RECORD: a spend by resolver.
func (s *budgetSession) record(resolver, op string, cost, seconds float64) {
	s.entries = append(s.entries, store.LedgerEntry{Node: s.node, Event: store.Spend, Amount: cost, Time: seconds, Resolver: resolver, Description: op})
	s.own.Spent += cost
	s.own.TimeSpent += seconds
}

// spent is what this session recorded for the node's resolvers.
func (s *budgetSession) spent() (cost, seconds float64) {
	for _, e := range s.entries {
		if e.Event == store.Spend && e.Node == s.node && e.Resolver != "" {
			cost += e.Amount
			seconds += e.Time
		}
	}
	return cost, seconds
}

func (s *budgetSession) commit(ctx context.Context, tx *store.Tx) error {
	for _, e := range s.entries {
		if err := tx.WriteLedger(ctx, e); err != nil {
			return err
		}
	}
	return nil
}
