package solve

import (
	"context"
	"fmt"
)

// The budget ledger (spec §2D) is authoritative: every allocation and
// spend is a row, and nodes.budget_* / time_* are caches updated in the
// same transaction.

type ledgerEntry struct {
	Node, Event, Resolver, Description string
	Amount, Time                       float64
}

func writeLedger(ctx context.Context, q execer, e ledgerEntry) error {
	if _, err := q.ExecContext(ctx, `INSERT INTO budget_ledger (id, node_id, event_type, amount, time_amount, resolver_id, description, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, newID(), e.Node, e.Event, e.Amount, e.Time, nullStr(e.Resolver), e.Description, now()); err != nil {
		return err
	}
	col := map[string]string{"allocate": "budget_allocated = budget_allocated + ?, time_allocated = time_allocated + ?",
		"spend":  "budget_spent = budget_spent + ?, time_spent = time_spent + ?",
		"refund": "budget_spent = budget_spent - ?, time_spent = time_spent - ?"}[e.Event]
	if col == "" {
		return fmt.Errorf("ledger: unknown event %q (allocate, spend or refund)", e.Event)
	}
	_, err := q.ExecContext(ctx, "UPDATE nodes SET "+col+" WHERE id = ?", e.Amount, e.Time, e.Node)
	return err
}

// Balance is a node's ledger sums.
type Balance struct {
	Allocated, Spent, TimeAllocated, TimeSpent float64
}

func (b Balance) RemainingCost() float64 { return b.Allocated - b.Spent }
func (b Balance) RemainingTime() float64 { return b.TimeAllocated - b.TimeSpent }

func balance(ctx context.Context, q querier, node string) (Balance, error) {
	var b Balance
	err := q.QueryRowContext(ctx, `SELECT
		COALESCE(SUM(CASE WHEN event_type='allocate' THEN amount END), 0),
		COALESCE(SUM(CASE WHEN event_type='spend' THEN amount WHEN event_type='refund' THEN -amount END), 0),
		COALESCE(SUM(CASE WHEN event_type='allocate' THEN time_amount END), 0),
		COALESCE(SUM(CASE WHEN event_type='spend' THEN time_amount WHEN event_type='refund' THEN -time_amount END), 0)
		FROM budget_ledger WHERE node_id = ?`, node).Scan(&b.Allocated, &b.Spent, &b.TimeAllocated, &b.TimeSpent)
	return b, err
}

// budgetSession gates the resolver calls of one node step. Its entries are
// written in the step's commit transaction, with the attempt they paid for.
type budgetSession struct {
	k       *Kernel
	node    string
	parent  string
	own     Balance
	par     Balance
	entries []ledgerEntry
}

func (k *Kernel) newBudget(ctx context.Context, node, parent string) (*budgetSession, error) {
	s := &budgetSession{k: k, node: node, parent: parent}
	var err error
	if s.own, err = balance(ctx, k.db, node); err != nil {
		return nil, err
	}
	if parent != "" {
		if s.par, err = balance(ctx, k.db, parent); err != nil {
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
			ledgerEntry{Node: s.parent, Event: "spend", Amount: cost, Time: seconds, Description: "reserve reallocated to child " + s.node},
			ledgerEntry{Node: s.node, Event: "allocate", Amount: cost, Time: seconds, Description: "from parent reserve"})
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
	s.entries = append(s.entries, ledgerEntry{Node: s.node, Event: "spend", Amount: cost, Time: seconds, Resolver: resolver, Description: op})
	s.own.Spent += cost
	s.own.TimeSpent += seconds
}

func (s *budgetSession) commit(ctx context.Context, q execer) error {
	for _, e := range s.entries {
		if err := writeLedger(ctx, q, e); err != nil {
			return err
		}
	}
	return nil
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}
