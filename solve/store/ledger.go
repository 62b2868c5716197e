package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// The budget ledger (spec §2D) is authoritative: every allocation and
// spend is a row, and nodes.budget_* / time_* are caches updated in the
// same statement sequence (callers write inside a transaction).

// Ledger events.
const (
	Allocate = "allocate"
	Spend    = "spend"
	Refund   = "refund"
)

// LedgerEntry is a budget_ledger row.
type LedgerEntry struct {
	Node, Event, Resolver, Description string
	Amount, Time                       float64
}

// WriteLedger appends a ledger row and updates the node's budget cache.
func (c *Conn) WriteLedger(ctx context.Context, e LedgerEntry) error {
	col := map[string]string{Allocate: "budget_allocated = budget_allocated + ?, time_allocated = time_allocated + ?",
		Spend:  "budget_spent = budget_spent + ?, time_spent = time_spent + ?",
		Refund: "budget_spent = budget_spent - ?, time_spent = time_spent - ?"}[e.Event]
	if col == "" {
		return fmt.Errorf("ledger: unknown event %q (allocate, spend or refund)", e.Event)
	}
	if _, err := c.exec(ctx, `INSERT INTO budget_ledger (id, node_id, event_type, amount, time_amount, resolver_id, description, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, NewID(), e.Node, e.Event, e.Amount, e.Time, nullStr(e.Resolver), e.Description, now()); err != nil {
		return fmt.Errorf("ledger: %s %.6f to node %s: %w", e.Event, e.Amount, e.Node, err)
	}
	return c.setNode(ctx, "update the budget cache", e.Node, col, e.Amount, e.Time)
}

// Balance is a node's ledger sums.
type Balance struct {
	Allocated, Spent, TimeAllocated, TimeSpent float64
}

// RemainingCost is what the node may still spend.
func (b Balance) RemainingCost() float64 { return b.Allocated - b.Spent }

// RemainingTime is the wall time (seconds) the node may still use.
func (b Balance) RemainingTime() float64 { return b.TimeAllocated - b.TimeSpent }

// Balance sums a node's ledger rows.
func (c *Conn) Balance(ctx context.Context, node string) (Balance, error) {
	var b Balance
	err := c.row(ctx, `SELECT
		COALESCE(SUM(CASE WHEN event_type='allocate' THEN amount END), 0),
		COALESCE(SUM(CASE WHEN event_type='spend' THEN amount WHEN event_type='refund' THEN -amount END), 0),
		COALESCE(SUM(CASE WHEN event_type='allocate' THEN time_amount END), 0),
		COALESCE(SUM(CASE WHEN event_type='spend' THEN time_amount WHEN event_type='refund' THEN -time_amount END), 0)
		FROM budget_ledger WHERE node_id = ?`, node).Scan(&b.Allocated, &b.Spent, &b.TimeAllocated, &b.TimeSpent)
	if err != nil {
		return b, fmt.Errorf("ledger balance of node %s: %w", node, err)
	}
	return b, nil
}

// TreeBudget is what a tree's resolvers spent and the root's allocation.
func (c *Conn) TreeBudget(ctx context.Context, root string) (spent, allocated float64, err error) {
	err = c.row(ctx, `SELECT
		COALESCE((SELECT SUM(l.amount) FROM budget_ledger l JOIN nodes n ON n.id = l.node_id WHERE n.root_id = ? AND l.event_type = 'spend' AND l.resolver_id IS NOT NULL), 0),
		COALESCE((SELECT SUM(amount) FROM budget_ledger WHERE node_id = ? AND event_type = 'allocate'), 0)`, root, root).Scan(&spent, &allocated)
	if err != nil {
		err = fmt.Errorf("ledger totals of %s: %w", root, err)
	}
	return
}

// Log tiers: 1 flow, 2 decision, 3 io.
var logCategory = map[int]string{1: "flow", 2: "decision", 3: "io"}

// Log writes one tiered log row; detail (nil = none) is stored as JSON.
func (c *Conn) Log(ctx context.Context, tier int, node, summary string, detail any) error {
	if _, err := c.exec(ctx, "INSERT INTO logs (id, tier, node_id, timestamp, category, summary, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
		NewID(), tier, node, now(), logCategory[tier], summary, nullJSON(detail)); err != nil {
		return fmt.Errorf("write tier-%d log of node %s: %w", tier, node, err)
	}
	return nil
}

// LogRow is a logs row.
type LogRow struct {
	Tier    int             `json:"tier"`
	Node    string          `json:"node_id"`
	Time    string          `json:"timestamp"`
	Summary string          `json:"summary"`
	Detail  json.RawMessage `json:"detail,omitempty"`
}

// Logs lists log rows, oldest first, of one tier (0 = all) and of the
// nodes whose id starts with nodePrefix ("" = all).
func (c *Conn) Logs(ctx context.Context, tier int, nodePrefix string) ([]LogRow, error) {
	return list(ctx, c, "list logs", func(r *sql.Rows) (LogRow, error) {
		var l LogRow
		var d string
		err := r.Scan(&l.Tier, &l.Node, &l.Time, &l.Summary, &d)
		if d != "" {
			l.Detail = json.RawMessage(d)
		}
		return l, err
	}, `SELECT tier, COALESCE(node_id, ''), timestamp, COALESCE(summary, ''), COALESCE(detail, '') FROM logs
		WHERE (? = 0 OR tier = ?) AND (? = '' OR node_id LIKE ? || '%') ORDER BY {seq}`, tier, tier, nodePrefix, nodePrefix)
}

// LLMCalls sums the LLM calls the tier-3 rows of a root's tree record.
func (c *Conn) LLMCalls(ctx context.Context, root string) (int, error) {
	var n int
	if err := c.row(ctx, `SELECT COALESCE(SUM(CAST(l.detail->>'llm_calls' AS INTEGER)), 0) FROM logs l JOIN nodes n ON n.id = l.node_id
		WHERE n.root_id = ? AND l.tier = 3`, root).Scan(&n); err != nil {
		return 0, fmt.Errorf("count the LLM calls of %s: %w", root, err)
	}
	return n, nil
}

// CountLogs counts the log rows of a root's tree whose summary contains text.
func (c *Conn) CountLogs(ctx context.Context, root, text string) (int, error) {
	var n int
	if err := c.row(ctx, "SELECT COUNT(*) FROM logs WHERE node_id IN (SELECT id FROM nodes WHERE root_id = ?) AND summary LIKE '%' || ? || '%'", root, text).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %q logs of %s: %w", text, root, err)
	}
	return n, nil
}
