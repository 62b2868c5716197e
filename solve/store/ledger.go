package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/llmkernels/kernels/internal/sqldb"
	"github.com/llmkernels/kernels/solve/record"
)

// The budget ledger (spec §2D) is authoritative: every allocation, spend
// and refund is a row, and nodes.budget_* / time_* are caches updated in
// the same transaction. Money is never counted twice: a transfer between
// two nodes of a tree (a parent's allocation to a child, a top-up from the
// parent's reserve, an invalidated child's unspent money going back) is a
// pair of rows naming each other's node in counterpart_node_id, and money
// from outside the tree (the root budget, a human's top-up) is an
// allocation without a counterpart. A paid call is a spend with a
// resolver_id; budget.go holds the reservations that precede paid calls.

// Ledger events.
const (
	Allocate = "allocate"
	Spend    = "spend"
	Refund   = "refund"
)

// LedgerEntry is a budget_ledger row.
type LedgerEntry struct {
	Node, Event, Resolver, Description string
	// Counterpart is the other node of a transfer inside the tree ("" =
	// money from or to outside it).
	Counterpart string
	// Reservation is the reservation a paid call's spend settles.
	Reservation  string
	Amount, Time float64
	// Unknown is the part of a paid call's Amount whose outcome is
	// unknown (Settlement.Unknown).
	Unknown float64
}

// cacheColumns are the node cache columns each event moves.
var cacheColumns = map[string]string{
	Allocate: "budget_allocated = budget_allocated + ?, time_allocated = time_allocated + ?",
	Spend:    "budget_spent = budget_spent + ?, time_spent = time_spent + ?",
	Refund:   "budget_spent = budget_spent - ?, time_spent = time_spent - ?",
}

// WriteLedger appends a ledger row and updates the node's budget cache.
func (c *Conn) WriteLedger(ctx context.Context, e LedgerEntry) error {
	col := cacheColumns[e.Event]
	if col == "" {
		return fmt.Errorf("ledger: unknown event %q (allocate, spend or refund)", e.Event)
	}
	if err := c.insertLedger(ctx, e); err != nil {
		return err
	}
	return c.setNode(ctx, "update the budget cache", e.Node, col, e.Amount, e.Time)
}

// insertLedger appends the row alone (the caller keeps the cache).
func (c *Conn) insertLedger(ctx context.Context, e LedgerEntry) error {
	if _, err := c.exec(ctx, `INSERT INTO budget_ledger (id, node_id, event_type, amount, time_amount, resolver_id, description, counterpart_node_id, reservation_id, unknown_amount, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, NewID(), e.Node, e.Event, e.Amount, e.Time, nullStr(e.Resolver), e.Description, nullStr(e.Counterpart),
		nullStr(e.Reservation), e.Unknown, now()); err != nil {
		return fmt.Errorf("ledger: %s %.6f to node %s: %w", e.Event, e.Amount, e.Node, err)
	}
	return nil
}

// Balance is a node's ledger sums and its open reservations.
type Balance struct {
	Allocated, Spent, Reserved, TimeAllocated, TimeSpent, TimeReserved float64
}

// RemainingCost is what the node may still spend or reserve.
func (b Balance) RemainingCost() float64 { return b.Allocated - b.Spent - b.Reserved }

// RemainingTime is the wall time (seconds) the node may still use or reserve.
func (b Balance) RemainingTime() float64 { return b.TimeAllocated - b.TimeSpent - b.TimeReserved }

// Balance sums a node's ledger rows and open reservations.
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
	if err := c.row(ctx, `SELECT COALESCE(SUM(amount), 0), COALESCE(SUM(time_amount), 0) FROM budget_reservations WHERE node_id = ? AND status = 'open'`,
		node).Scan(&b.Reserved, &b.TimeReserved); err != nil {
		return b, fmt.Errorf("open reservations of node %s: %w", node, err)
	}
	return b, nil
}

// TreeBudget is what a run cost: the money its paid calls spent (and the
// part of it whose outcome is unknown), the allowance it was given from
// outside (the root budget and every human top-up, wherever in the tree
// it went), and what open reservations hold.
type TreeBudget struct {
	SpentUSD, UnknownUSD, AllowanceUSD, ReservedUSD float64
	SpentSeconds, AllowanceSeconds, HeldSeconds     float64
}

// TreeBudget sums a root's tree. It reads the whole ledger of the tree:
// the read side and the end of a run call it, never a step.
func (c *Conn) TreeBudget(ctx context.Context, root string) (TreeBudget, error) {
	var t TreeBudget
	err := c.row(ctx, `SELECT
		COALESCE(SUM(CASE WHEN l.event_type = 'spend' AND l.resolver_id IS NOT NULL THEN l.amount END), 0),
		COALESCE(SUM(CASE WHEN l.event_type = 'spend' AND l.resolver_id IS NOT NULL THEN l.time_amount END), 0),
		COALESCE(SUM(CASE WHEN l.event_type = 'spend' AND l.resolver_id IS NOT NULL THEN l.unknown_amount END), 0),
		COALESCE(SUM(CASE WHEN l.event_type = 'allocate' AND l.counterpart_node_id IS NULL THEN l.amount END), 0),
		COALESCE(SUM(CASE WHEN l.event_type = 'allocate' AND l.counterpart_node_id IS NULL THEN l.time_amount END), 0)
		FROM budget_ledger l JOIN nodes n ON n.id = l.node_id WHERE n.root_id = ?`, root).Scan(&t.SpentUSD, &t.SpentSeconds, &t.UnknownUSD, &t.AllowanceUSD, &t.AllowanceSeconds)
	if err != nil {
		return t, fmt.Errorf("ledger totals of %s: %w", root, err)
	}
	if err := c.row(ctx, `SELECT COALESCE(SUM(amount), 0), COALESCE(SUM(time_amount), 0) FROM budget_reservations WHERE root_id = ? AND status = 'open'`,
		root).Scan(&t.ReservedUSD, &t.HeldSeconds); err != nil {
		return t, fmt.Errorf("open reservations of %s: %w", root, err)
	}
	return t, nil
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

func scanLog(r *sql.Rows) (record.LogEntry, error) {
	var l record.LogEntry
	var d string
	err := r.Scan(&l.Tier, &l.Node, &l.Goal, &l.Time, &l.Summary, &d)
	if d != "" {
		l.Detail = json.RawMessage(d)
	}
	return l, err
}

// Logs lists log rows, oldest first, of one tier (0 = all) and of the
// nodes whose id starts with nodePrefix ("" = all).
func (c *Conn) Logs(ctx context.Context, tier int, nodePrefix string) ([]record.LogEntry, error) {
	return sqldb.List(ctx, c.query, "list logs", scanLog, `SELECT l.tier, COALESCE(l.node_id, ''), COALESCE(n.goal_summary, ''), l.timestamp, COALESCE(l.summary, ''), COALESCE(CAST(l.detail AS TEXT), '')
		FROM logs l LEFT JOIN nodes n ON n.id = l.node_id
		WHERE (? = 0 OR l.tier = ?) AND (? = '' OR l.node_id LIKE ? || '%') ORDER BY l.{seq}`, tier, tier, nodePrefix, nodePrefix)
}

// RunEvents lists the decisions of a root's tree that change its shape,
// oldest first: reopened nodes, conflicts between leaves (Step 12),
// merge conflicts, gating.
func (c *Conn) RunEvents(ctx context.Context, root string) ([]record.LogEntry, error) {
	return sqldb.List(ctx, c.query, "list the events of "+root, scanLog, `SELECT l.tier, COALESCE(l.node_id, ''), n.goal_summary, l.timestamp, COALESCE(l.summary, ''), COALESCE(CAST(l.detail AS TEXT), '')
		FROM logs l JOIN nodes n ON n.id = l.node_id
		WHERE n.root_id = ? AND l.tier = 2 AND l.detail->>'decision' IN ('reopen', 'coupling_conflict', 'merge_conflict', 'gated') ORDER BY l.{seq}`, root)
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

// Tokens are the LLM tokens of a root's calls, from their tier-3 rows.
type Tokens struct {
	Input, Output, CacheWrite, CacheRead int
}

// Tokens sums the tokens of a root's calls (cache writes and reads
// apart from the uncached input).
func (c *Conn) Tokens(ctx context.Context, root string) (Tokens, error) {
	var t Tokens
	if err := c.row(ctx, `SELECT COALESCE(SUM(CAST(l.detail->>'input_tokens' AS INTEGER)), 0), COALESCE(SUM(CAST(l.detail->>'output_tokens' AS INTEGER)), 0),
		COALESCE(SUM(CAST(l.detail->>'cache_creation_input_tokens' AS INTEGER)), 0), COALESCE(SUM(CAST(l.detail->>'cache_read_input_tokens' AS INTEGER)), 0)
		FROM logs l JOIN nodes n ON n.id = l.node_id WHERE n.root_id = ? AND l.tier = 3`, root).Scan(&t.Input, &t.Output, &t.CacheWrite, &t.CacheRead); err != nil {
		return t, fmt.Errorf("sum the tokens of %s: %w", root, err)
	}
	return t, nil
}

// CountLogs counts the log rows of a root's tree whose summary contains text.
func (c *Conn) CountLogs(ctx context.Context, root, text string) (int, error) {
	var n int
	if err := c.row(ctx, "SELECT COUNT(*) FROM logs WHERE node_id IN (SELECT id FROM nodes WHERE root_id = ?) AND summary LIKE '%' || ? || '%'", root, text).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %q logs of %s: %w", text, root, err)
	}
	return n, nil
}
