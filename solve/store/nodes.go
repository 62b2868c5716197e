package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/llmkernels/kernels/internal/plainjson"
	"github.com/llmkernels/kernels/internal/sqldb"
)

// Node statuses (spec §2), plus "failed" (the first iteration's notes).
const (
	StatusPending          = "pending"
	StatusIdentifying      = "identifying_constraints"
	StatusSelectingCons    = "selecting_constraints"
	StatusSelectingResolve = "selecting_resolver"
	StatusResolving        = "resolving"
	StatusVerifying        = "verifying"
	StatusDecomposing      = "decomposing"
	StatusGated            = "gated"
	StatusResolved         = "resolved"
	StatusInfeasible       = "infeasible"
	StatusFailed           = "failed"
)

// Statuses lists every node status in the order of the state machine.
var Statuses = []string{StatusPending, StatusIdentifying, StatusSelectingCons, StatusSelectingResolve, StatusResolving, StatusVerifying,
	StatusDecomposing, StatusGated, StatusResolved, StatusInfeasible, StatusFailed}

// transitions are the spec's valid node state transitions (§2), plus
// "failed" from any state (the first iteration's notes).
var transitions = map[string][]string{
	StatusPending:          {StatusIdentifying},
	StatusIdentifying:      {StatusSelectingCons},
	StatusSelectingCons:    {StatusSelectingResolve},
	StatusSelectingResolve: {StatusResolving, StatusInfeasible},
	StatusResolving:        {StatusVerifying},
	StatusVerifying:        {StatusDecomposing, StatusResolved, StatusGated, StatusSelectingResolve, StatusResolving, StatusPending},
	StatusDecomposing:      {StatusPending},
	StatusGated:            {StatusPending},
}

// Allowed reports whether the spec lets a node move from one status to another.
func Allowed(from, to string) bool {
	return to == StatusFailed || slices.Contains(transitions[from], to)
}

// DefaultMaxAttempts is the schema's max_attempts default: the spec's T_max.
const DefaultMaxAttempts = 5

// Confidence thresholds (spec §0 config defaults), stored on each node at
// creation for auditability.
const (
	TauLocal  = 0.70 // a constraint passes when σ_i ≥ τ_local
	TauGlobal = 0.50 // a non-leaf with σ_path below τ_global is gated
)

// Constraint types and attempt verdicts as kernel.db stores them.
const (
	Logic    = "logic"
	Semantic = "semantic"
	SAT      = "SAT"
	UNSAT    = "UNSAT"
)

// Node is a nodes row.
type Node struct {
	ID, Parent, Root, Goal, Summary, Modality, Status     string
	Core, Eligible, Selected, Inherited, Resolved, Inputs []string
	ResolverID, Plan, Output, LastAttempt                 string
	Verification                                          string
	SigmaV, SigmaPath                                     *float64 // nil before the node is verified
	TauLocal, TauGlobal                                   float64
	AttemptCount, MaxAttempts                             int
	Invalidated                                           bool
	LeafKind                                              string
	// The budget cache (budget_ledger and budget_reservations are
	// authoritative).
	BudgetAllocated, BudgetSpent, TimeAllocated, TimeSpent float64
	BudgetReserved, TimeReserved                           float64
	Created, ResolvedAt                                    string
}

const nodeCols = `id, COALESCE(parent_id, ''), root_id, goal_description, goal_summary, goal_modality, status,
	constraints_core_ids, constraints_eligible_ids, constraints_selected_ids, constraints_inherited_ids, constraints_resolved_ids,
	input_artifact_ids, COALESCE(resolver_id, ''), COALESCE(execution_plan_artifact_id, ''), COALESCE(output_artifact_id, ''),
	COALESCE(last_attempt_id, ''), COALESCE(CAST(verification AS TEXT), ''), sigma_v, sigma_path, tau_local, tau_global, attempt_count, max_attempts,
	invalidated_at IS NOT NULL, COALESCE(leaf_kind, ''), budget_allocated, budget_spent, time_allocated, time_spent,
	budget_reserved, time_reserved, COALESCE(created_at, ''), COALESCE(resolved_at, '')`

func scanNode(row interface{ Scan(...any) error }) (*Node, error) {
	var n Node
	var core, elig, sel, inh, res, in string
	if err := row.Scan(&n.ID, &n.Parent, &n.Root, &n.Goal, &n.Summary, &n.Modality, &n.Status, &core, &elig, &sel, &inh, &res, &in,
		&n.ResolverID, &n.Plan, &n.Output, &n.LastAttempt, &n.Verification, &n.SigmaV, &n.SigmaPath, &n.TauLocal, &n.TauGlobal,
		&n.AttemptCount, &n.MaxAttempts, &n.Invalidated, &n.LeafKind, &n.BudgetAllocated, &n.BudgetSpent, &n.TimeAllocated, &n.TimeSpent,
		&n.BudgetReserved, &n.TimeReserved, &n.Created, &n.ResolvedAt); err != nil {
		return nil, err
	}
	for _, p := range []struct {
		s   string
		dst *[]string
	}{{core, &n.Core}, {elig, &n.Eligible}, {sel, &n.Selected}, {inh, &n.Inherited}, {res, &n.Resolved}, {in, &n.Inputs}} {
		var err error
		if *p.dst, err = idList(n.ID, p.s); err != nil {
			return nil, err
		}
	}
	return &n, nil
}

// Node loads one node.
func (c *Conn) Node(ctx context.Context, id string) (*Node, error) {
	n, err := scanNode(c.row(ctx, "SELECT "+nodeCols+" FROM nodes WHERE id = ?", id))
	if err != nil {
		return nil, fmt.Errorf("load node %s: %w", id, err)
	}
	return n, nil
}

func (c *Conn) nodes(ctx context.Context, op, where string, args ...any) ([]*Node, error) {
	return sqldb.List(ctx, c.query, fmt.Sprintf("%s", op), func(r *sql.Rows) (*Node, error) { return scanNode(r) }, "SELECT "+nodeCols+" FROM nodes WHERE "+where+" ORDER BY {seq}", args...)
}

// TreeNodes loads every node of a root's tree, invalidated ones included,
// in creation order.
func (c *Conn) TreeNodes(ctx context.Context, root string) ([]*Node, error) {
	return c.nodes(ctx, "load the tree of "+root, "root_id = ?", root)
}

// AssemblyNodes loads the live nodes of a root's tree that belong to the
// goal's artifact: build subgoals and their subtrees made tools, not parts.
func (c *Conn) AssemblyNodes(ctx context.Context, root string) ([]*Node, error) {
	return c.nodes(ctx, "load the assembly nodes of "+root, `root_id = ? AND invalidated_at IS NULL AND id NOT IN (WITH RECURSIVE b(id) AS (
		SELECT node_id FROM artifacts WHERE type = 'build_goal' UNION ALL SELECT n.id FROM nodes n JOIN b ON n.parent_id = b.id) SELECT id FROM b)`, root)
}

// NewNode is a node to insert, in status pending.
type NewNode struct {
	ID                             string // "" = a new id
	Parent                         string // "" = a root
	Root                           string // "" = the node is its own root
	Goal, Summary                  string
	Core, Inherited, Inputs        []string
	TauLocal, TauGlobal            float64
	MaxAttempts                    int     // 0 = DefaultMaxAttempts
	BudgetAllocated, TimeAllocated float64 // planning's caches; the loop allocates through the ledger
}

// InsertNode inserts a pending node and returns its id.
func (c *Conn) InsertNode(ctx context.Context, n NewNode) (string, error) {
	if n.ID == "" {
		n.ID = NewID()
	}
	if n.Root == "" {
		n.Root = n.ID
	}
	if n.MaxAttempts == 0 {
		n.MaxAttempts = DefaultMaxAttempts
	}
	_, err := c.exec(ctx, `INSERT INTO nodes (id, parent_id, root_id, goal_description, goal_summary, goal_modality, status,
		constraints_core_ids, constraints_inherited_ids, input_artifact_ids, tau_local, tau_global, max_attempts,
		budget_allocated, time_allocated, created_at) VALUES (?, ?, ?, ?, ?, 'text', 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		n.ID, nullStr(n.Parent), n.Root, n.Goal, n.Summary, asJSON(plainjson.List(n.Core)), asJSON(plainjson.List(n.Inherited)), asJSON(plainjson.List(n.Inputs)),
		n.TauLocal, n.TauGlobal, n.MaxAttempts, n.BudgetAllocated, n.TimeAllocated, now())
	if err != nil {
		return "", fmt.Errorf("insert node %s: %w", Short(n.ID), err)
	}
	return n.ID, nil
}

// Transition moves a node from one status to another, refusing moves the
// spec does not allow and moves from a status the node is not in.
func (c *Conn) Transition(ctx context.Context, node, from, to string) error {
	if !Allowed(from, to) {
		return &RefusedTransition{Node: node, From: from, To: to, Why: "invalid transition"}
	}
	res, err := c.exec(ctx, "UPDATE nodes SET status = ? WHERE id = ? AND status = ?", to, node, from)
	if err != nil {
		return fmt.Errorf("node %s: %s → %s: %w", node, from, to, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return &RefusedTransition{Node: node, From: from, To: to, Why: "the node is not in status " + from}
	}
	return nil
}

// RefusedTransition is a transition Transition refused: not in the
// spec's table, or the node is not in the status it would leave. (A
// database error, such as a serialization failure Store.Write runs
// again, is not a refusal.)
type RefusedTransition struct {
	Node, From, To, Why string
}

func (e *RefusedTransition) Error() string {
	return fmt.Sprintf("node %s: %s → %s: %s", e.Node, e.From, e.To, e.Why)
}

// EndInfeasible ends a node whose HIRE request was declined (spec §5
// escalate_to_hire sets infeasible from the node's current state;
// selecting_resolver → infeasible is the table's transition, the others
// follow the pseudocode).
func (c *Conn) EndInfeasible(ctx context.Context, node, from string) error {
	if from == StatusSelectingResolve {
		return c.Transition(ctx, node, from, StatusInfeasible)
	}
	if _, err := c.exec(ctx, "UPDATE nodes SET status = 'infeasible' WHERE id = ? AND status = ?", node, from); err != nil {
		return fmt.Errorf("node %s: %s → infeasible: %w", node, from, err)
	}
	return nil
}

func (c *Conn) setNode(ctx context.Context, op, node, set string, args ...any) error {
	if _, err := c.exec(ctx, "UPDATE nodes SET "+set+" WHERE id = ?", append(args, node)...); err != nil {
		return fmt.Errorf("node %s: %s: %w", node, op, err)
	}
	return nil
}

// SetConstraintSets sets a node's core, eligible and selected sets.
func (c *Conn) SetConstraintSets(ctx context.Context, node string, core, eligible, selected []string) error {
	return c.setNode(ctx, "set constraint sets", node, "constraints_core_ids = ?, constraints_eligible_ids = ?, constraints_selected_ids = ?",
		asJSON(plainjson.List(core)), asJSON(plainjson.List(eligible)), asJSON(plainjson.List(selected)))
}

// SetEligible sets a node's eligible constraints (Step 2).
func (c *Conn) SetEligible(ctx context.Context, node string, ids []string) error {
	return c.setNode(ctx, "set eligible constraints", node, "constraints_eligible_ids = ?", asJSON(plainjson.List(ids)))
}

// SetSelected sets a node's selected constraints (Step 3).
func (c *Conn) SetSelected(ctx context.Context, node string, ids []string) error {
	return c.setNode(ctx, "set selected constraints", node, "constraints_selected_ids = ?", asJSON(plainjson.List(ids)))
}

// SetResolver sets the node's resolver.
func (c *Conn) SetResolver(ctx context.Context, node, resolver string) error {
	return c.setNode(ctx, "set resolver", node, "resolver_id = ?", resolver)
}

// SetPlan records the node's tool plan, its resolver and its attempt cap.
func (c *Conn) SetPlan(ctx context.Context, node, plan, resolver string, maxAttempts int) error {
	return c.setNode(ctx, "set tool plan", node, "execution_plan_artifact_id = ?, resolver_id = ?, max_attempts = ?", plan, resolver, maxAttempts)
}

// SetInputs sets the node's input artifacts.
func (c *Conn) SetInputs(ctx context.Context, node string, ids []string) error {
	return c.setNode(ctx, "set input artifacts", node, "input_artifact_ids = ?", asJSON(plainjson.List(ids)))
}

// SetVerification records a node's last verification, σ_v, σ_path and the
// constraints it proved.
func (c *Conn) SetVerification(ctx context.Context, node string, verification any, sigmaV, sigmaPath float64, resolved []string) error {
	return c.setNode(ctx, "record verification", node, "verification = ?, sigma_v = ?, sigma_path = ?, constraints_resolved_ids = ?",
		asJSON(verification), sigmaV, sigmaPath, asJSON(plainjson.List(resolved)))
}

// MarkResolved records a resolved leaf's kind and reason.
func (c *Conn) MarkResolved(ctx context.Context, node, kind, reason string) error {
	return c.setNode(ctx, "mark resolved", node, "leaf_kind = ?, leaf_reason = ?, resolved_at = ?", kind, reason, now())
}

// ClearResult clears what a node's last resolution produced (a reopened
// node); clearSelected also drops its selected constraints.
func (c *Conn) ClearResult(ctx context.Context, node string, clearSelected bool) error {
	set := "execution_plan_artifact_id = NULL, output_artifact_id = NULL, verification = NULL, constraints_resolved_ids = '[]', sigma_v = NULL, sigma_path = NULL"
	if clearSelected {
		set += ", constraints_selected_ids = '[]'"
	}
	return c.setNode(ctx, "clear the result", node, set)
}

// InvalidateSubtree marks every live descendant of u invalidated (their
// rows, attempts and logs are kept): outputs cleared, status pending,
// dependencies deleted, and what they did not spend returned to u. It
// returns their ids.
func (c *Conn) InvalidateSubtree(ctx context.Context, u string) ([]string, error) {
	ids, err := sqldb.List(ctx, c.query, "list the subtree of "+u, sqldb.Column[string], `WITH RECURSIVE d(id) AS (SELECT id FROM nodes WHERE parent_id = ? AND invalidated_at IS NULL
		UNION ALL SELECT n.id FROM nodes n JOIN d ON n.parent_id = d.id WHERE n.invalidated_at IS NULL) SELECT id FROM d`, u)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if err := c.setNode(ctx, "invalidate", id, `status = 'pending', invalidated_at = ?, output_artifact_id = NULL, verification = NULL,
			constraints_resolved_ids = '[]', sigma_v = NULL, sigma_path = NULL`, now()); err != nil {
			return nil, err
		}
		if _, err := c.exec(ctx, "DELETE FROM node_dependencies WHERE node_id = ? OR depends_on = ?", id, id); err != nil {
			return nil, fmt.Errorf("node %s: delete dependencies: %w", id, err)
		}
	}
	// What the subtree did not spend goes back to u, which reallocates it.
	for i := len(ids) - 1; i >= 0; i-- {
		if err := c.ReturnUnspent(ctx, ids[i]); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// AddDependency records that node waits for dependsOn.
func (c *Conn) AddDependency(ctx context.Context, node, dependsOn string) error {
	if _, err := c.exec(ctx, "INSERT INTO node_dependencies (node_id, depends_on) VALUES (?, ?)", node, dependsOn); err != nil {
		return fmt.Errorf("node %s: add dependency on %s: %w", node, dependsOn, err)
	}
	return nil
}

// Dependency is a node_dependencies row: Node waits for DependsOn.
type Dependency struct{ Node, DependsOn string }

// Dependencies lists the dependencies of a root's tree.
func (c *Conn) Dependencies(ctx context.Context, root string) ([]Dependency, error) {
	return sqldb.List(ctx, c.query, fmt.Sprintf("list the dependencies of %s", root), func(r *sql.Rows) (Dependency, error) {
		var d Dependency
		err := r.Scan(&d.Node, &d.DependsOn)
		return d, err
	}, "SELECT d.node_id, d.depends_on FROM node_dependencies d JOIN nodes n ON n.id = d.node_id WHERE n.root_id = ?", root)
}

// TreeNode is a node as the scheduler sees it.
type TreeNode struct {
	ID, Parent, Status string
	Invalidated        bool
	Build              bool // a BUILD subgoal (it has a build_goal artifact)
	WaitHire           bool // it waits on an open capability request
}

// Tree lists a root's nodes for the scheduler, in creation order.
func (c *Conn) Tree(ctx context.Context, root string) ([]TreeNode, error) {
	return sqldb.List(ctx, c.query, fmt.Sprintf("load the schedule of %s", root), func(r *sql.Rows) (TreeNode, error) {
		var n TreeNode
		err := r.Scan(&n.ID, &n.Parent, &n.Status, &n.Invalidated, &n.Build, &n.WaitHire)
		return n, err
	}, `SELECT n.id, COALESCE(n.parent_id, ''), n.status, n.invalidated_at IS NOT NULL,
		EXISTS (SELECT 1 FROM artifacts a WHERE a.node_id = n.id AND a.type = 'build_goal'),
		`+waitingOnRequest+`
		FROM nodes n WHERE n.root_id = ? ORDER BY n.{seq}`, root)
}

// waitingOnRequest is true for a node n waiting on an open capability
// request: the scheduler leaves it alone until `solve hire` answers.
const waitingOnRequest = `EXISTS (SELECT 1 FROM capability_request_nodes w JOIN capability_requests c ON c.id = w.request_id
	WHERE w.node_id = n.id AND c.status = 'requested')`

// Sigmas are a node's σ_v and σ_path and its parent.
type Sigmas struct {
	SigmaV, SigmaPath *float64 // nil before the node is verified
	Parent            string
}

// NodeSigmas reads a node's σ_v, σ_path and parent.
func (c *Conn) NodeSigmas(ctx context.Context, id string) (Sigmas, error) {
	var s Sigmas
	if err := c.row(ctx, "SELECT sigma_v, sigma_path, COALESCE(parent_id, '') FROM nodes WHERE id = ?", id).Scan(&s.SigmaV, &s.SigmaPath, &s.Parent); err != nil {
		return s, fmt.Errorf("read the sigmas of node %s: %w", id, err)
	}
	return s, nil
}

// Depth is the number of ancestors of a node.
func (c *Conn) Depth(ctx context.Context, id string) (int, error) {
	s, err := c.NodeSigmas(ctx, id)
	if err != nil {
		return 0, err
	}
	d := 0
	for p := s.Parent; p != ""; d++ {
		if err := c.row(ctx, "SELECT COALESCE(parent_id, '') FROM nodes WHERE id = ?", p).Scan(&p); err != nil {
			return d, fmt.Errorf("read the parent of node %s: %w", p, err)
		}
	}
	return d, nil
}

// CountChildren counts a node's children with the given goal summary.
func (c *Conn) CountChildren(ctx context.Context, parent, summary string) (int, error) {
	var n int
	if err := c.row(ctx, "SELECT COUNT(*) FROM nodes WHERE parent_id = ? AND goal_summary = ?", parent, summary).Scan(&n); err != nil {
		return 0, fmt.Errorf("count children %q of node %s: %w", summary, parent, err)
	}
	return n, nil
}

// LiveNodeCount counts the nodes of a root's live tree.
func (c *Conn) LiveNodeCount(ctx context.Context, root string) (int, error) {
	var n int
	if err := c.row(ctx, "SELECT COUNT(*) FROM nodes WHERE root_id = ? AND invalidated_at IS NULL", root).Scan(&n); err != nil {
		return 0, fmt.Errorf("count the live nodes of %s: %w", root, err)
	}
	return n, nil
}

// RunRoots lists the roots of SOLVE-loop runs (those with a run_config),
// oldest first.
func (c *Conn) RunRoots(ctx context.Context) ([]string, error) {
	return sqldb.List(ctx, c.query, "list runs", sqldb.Column[string], "SELECT n.id FROM nodes n JOIN artifacts a ON a.node_id = n.id AND a.type = 'run_config' WHERE n.parent_id IS NULL ORDER BY n.{seq}")
}

// RootsWithPrefix lists the root nodes whose id starts with prefix.
func (c *Conn) RootsWithPrefix(ctx context.Context, prefix string) ([]string, error) {
	return sqldb.List(ctx, c.query, fmt.Sprintf("find root %q", prefix), sqldb.Column[string], "SELECT id FROM nodes WHERE parent_id IS NULL AND id LIKE ? || '%'", prefix)
}

// LatestUnfinishedRun is the root of the newest run without an assembly
// ("" when there is none).
func (c *Conn) LatestUnfinishedRun(ctx context.Context) (string, error) {
	var root string
	err := c.row(ctx, `SELECT a.node_id FROM artifacts a WHERE a.type = 'run_config'
		AND NOT EXISTS (SELECT 1 FROM artifacts b WHERE b.node_id = a.node_id AND b.type = 'assembly')
		ORDER BY a.{seq} DESC LIMIT 1`).Scan(&root)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("find the latest unfinished run: %w", err)
	}
	return root, nil
}
