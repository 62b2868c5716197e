package solve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/pgdb"
	"github.com/llmkernels/kernels/internal/plainjson"
	"github.com/llmkernels/kernels/solve/kg"
	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/record"
	"github.com/llmkernels/kernels/solve/store"
)

// The read side of the kernel: plain result structs for the CLI to print
// as text or as JSON (solve status|log|artifacts|kg --json; the shapes are
// documented in docs/solve.md).

// RunSummary is one run in the list of runs.
type RunSummary struct {
	Result
	Goal string `json:"goal"` // the root's goal summary
}

// Runs lists every SOLVE-loop run in kernel.db, oldest first.
func (k *Kernel) Runs(ctx context.Context) ([]RunSummary, error) {
	roots, err := k.st.RunRoots(ctx)
	if err != nil {
		return nil, err
	}
	out := []RunSummary{}
	for _, r := range roots {
		res, err := loop.Outcome(ctx, k.st, r)
		if err != nil {
			return nil, err
		}
		n, err := k.st.Node(ctx, r)
		if err != nil {
			return nil, err
		}
		out = append(out, RunSummary{Result: *res, Goal: n.Summary})
	}
	return out, nil
}

// NodeStatus is one node of a run's tree.
type NodeStatus struct {
	ID     string `json:"id"`
	Parent string `json:"parent_id,omitempty"`
	Depth  int    `json:"depth"`
	// Status is the node's state-machine status as stored; State says
	// where it stands for a person: "achieved" for the root of an
	// achieved run, "done (N children)" for a decomposed node whose
	// children are all done, "waiting on children (k of N done)",
	// "waiting for a human", "invalidated", or the status.
	Status      string   `json:"status"`
	State       string   `json:"state"`
	Invalidated bool     `json:"invalidated"`
	SigmaV      *float64 `json:"sigma_v"`    // null before the node is verified
	SigmaPath   *float64 `json:"sigma_path"` // null before the node is verified
	// Money: what the node's own paid calls cost (spent), what it was
	// given (allocated: by its parent, or from outside the tree — the
	// root budget and human top-ups), what it handed to its children
	// (delegated, net of what invalidated children gave back), what it gave
	// back to its parent (returned), what calls in flight hold (held), and
	// what it has left (reserve = allocated − spent − delegated − returned −
	// held). Time the same, in seconds. Unknown is the part of spent whose
	// outcome is unknown (calls cut off in flight, settled at their hold);
	// the rest was billed for certain.
	SpentUSD         float64 `json:"spent_usd"`
	UnknownUSD       float64 `json:"unknown_usd"`
	AllocatedUSD     float64 `json:"allocated_usd"`
	DelegatedUSD     float64 `json:"delegated_usd"`
	ReturnedUSD      float64 `json:"returned_usd"`
	HeldUSD          float64 `json:"held_usd"`
	ReserveUSD       float64 `json:"reserve_usd"`
	SpentSeconds     float64 `json:"spent_seconds"`
	AllocatedSeconds float64 `json:"allocated_seconds"`
	ReserveSeconds   float64 `json:"reserve_seconds"`
	Attempts         int     `json:"attempts"`
	MaxAttempts      int     `json:"max_attempts"`
	Summary          string  `json:"summary"`
	Goal             string  `json:"goal"`
	Created          string  `json:"created_at"`            // UTC
	Resolved         string  `json:"resolved_at,omitempty"` // UTC, when a leaf was resolved
	Reopened         int     `json:"reopened"`              // times the node was reopened (gating, Step 12)
}

// Event is a change of a run's shape: a node reopened, a conflict between
// leaves (Step 12), a merge conflict, a gated node.
type Event struct {
	Time   string `json:"timestamp"` // UTC
	NodeID string `json:"node_id"`
	Goal   string `json:"goal"`
	Kind   string `json:"kind"` // reopen | coupling_conflict | merge_conflict | gated
	Detail string `json:"detail"`
}

// RunStatus is a run's tree, depth first in creation order, where the
// run stands, and the events that changed its shape.
type RunStatus struct {
	Result Result       `json:"result"`
	Nodes  []NodeStatus `json:"nodes"`
	Events []Event      `json:"events"`
	// Held are the steps `solve worker` processes hold now (a PostgreSQL
	// store with run --remote; empty otherwise).
	Held []HeldStep `json:"held"`
	// Confinement is how this machine confines the commands a run starts
	// (checks, built and hired tools), as ConfinementText says it; a run
	// started with --unconfined runs them as the user.
	Confinement string `json:"confinement"`
}

// HeldStep is a node step a worker is running.
type HeldStep struct {
	NodeID  string    `json:"node_id"`
	Status  string    `json:"status"` // the node's status the step started from
	Worker  string    `json:"worker"` // host/pid/id
	Attempt int       `json:"attempt"`
	Since   time.Time `json:"since"`
}

// Status is the tree of the run whose root id starts with root.
func (k *Kernel) Status(ctx context.Context, root string) (*RunStatus, error) {
	root, err := loop.FindRoot(ctx, k.st, root)
	if err != nil {
		return nil, err
	}
	t, err := k.readTree(ctx, root)
	if err != nil {
		return nil, err
	}
	events, err := k.st.RunEvents(ctx, root)
	if err != nil {
		return nil, err
	}
	st := &RunStatus{Result: *t.result, Nodes: []NodeStatus{}, Confinement: ConfinementText()}
	if st.Held, err = k.held(ctx, root); err != nil {
		return nil, err
	}
	var reopened map[string]int
	if st.Events, reopened, err = runEvents(root, events); err != nil {
		return nil, err
	}
	for _, n := range t.kids[""] {
		st.Nodes = t.walk(st.Nodes, n, 0, reopened)
	}
	return st, nil
}

// runTree is what Status reads of a run: its nodes by parent, their
// budgets and scheduling flags, and where the run stands.
type runTree struct {
	kids    map[string][]*store.Node // by parent id ("" for the root)
	budgets map[string]store.NodeBudget
	flags   map[string]store.TreeNode
	result  *Result
}

// readTree reads the run's nodes, budgets, flags and outcome.
func (k *Kernel) readTree(ctx context.Context, root string) (*runTree, error) {
	nodes, err := k.st.TreeNodes(ctx, root)
	if err != nil {
		return nil, err
	}
	t := &runTree{kids: map[string][]*store.Node{}, flags: map[string]store.TreeNode{}}
	if t.budgets, err = k.st.NodeBudgets(ctx, root); err != nil {
		return nil, err
	}
	if t.result, err = loop.Outcome(ctx, k.st, root); err != nil {
		return nil, err
	}
	sched, err := k.st.Tree(ctx, root)
	if err != nil {
		return nil, err
	}
	for _, n := range sched {
		t.flags[n.ID] = n
	}
	for _, n := range nodes {
		t.kids[n.Parent] = append(t.kids[n.Parent], n)
	}
	return t, nil
}

// held lists the steps `solve worker` processes hold now (PostgreSQL
// only; none otherwise).
func (k *Kernel) held(ctx context.Context, root string) ([]HeldStep, error) {
	out := []HeldStep{}
	if !pgdb.IsURL(k.db) {
		return out, nil
	}
	held, err := loop.Holders(ctx, k.db, root)
	if err != nil {
		return nil, err
	}
	for _, h := range held {
		out = append(out, HeldStep{NodeID: h.Node, Status: h.Status, Worker: h.Worker, Attempt: h.Attempt, Since: h.Since})
	}
	return out, nil
}

// runEvents words the decisions that changed the run's shape, and counts
// the times each node was reopened.
func runEvents(root string, rows []LogEntry) ([]Event, map[string]int, error) {
	events, reopened := []Event{}, map[string]int{}
	for _, e := range rows {
		var d struct {
			Decision string   `json:"decision"`
			To       string   `json:"to"`
			Reason   string   `json:"reason"`
			Paths    []string `json:"paths"`
			Weakest  string   `json:"weakest_ancestor"`
			Path     float64  `json:"sigma_path"`
			Tau      float64  `json:"tau_global"`
			Coupling []string `json:"coupling_constraints"`
		}
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			return nil, nil, fmt.Errorf("run %s: event %q: %w", root, e.Summary, err)
		}
		var text string
		switch d.Decision {
		case "reopen":
			reopened[e.Node]++
			text = "reopened to " + d.To
		case "coupling_conflict":
			text = fmt.Sprintf("leaves conflict (%s); coupling constraints added here: %s", d.Reason, strings.Join(d.Coupling, "; "))
		case "merge_conflict":
			text = "its files changed in the workspace since the attempt was made: " + strings.Join(d.Paths, ", ")
		case "gated":
			p, t := loop.Apart(d.Path, d.Tau)
			text = fmt.Sprintf("σ_path %s < τ_global %s; backtracked to %s", p, t, store.Short(d.Weakest))
		}
		events = append(events, Event{Time: e.Time, NodeID: e.Node, Goal: e.Goal, Kind: d.Decision, Detail: text})
	}
	return events, reopened, nil
}

// live is a node's live children (build subgoals are dependencies, not
// children).
func (t *runTree) live(n *store.Node) (c []*store.Node) {
	for _, k := range t.kids[n.ID] {
		if !k.Invalidated && !t.flags[k.ID].Build {
			c = append(c, k)
		}
	}
	return c
}

// done mirrors the scheduler: resolved, or decomposed with every live
// child done.
func (t *runTree) done(n *store.Node) bool {
	if n.Invalidated {
		return false
	}
	if n.Status == store.StatusResolved {
		return true
	}
	c := t.live(n)
	if n.Status != store.StatusPending || len(c) == 0 {
		return false
	}
	for _, k := range c {
		if !t.done(k) {
			return false
		}
	}
	return true
}

// state says where a node stands for a person (NodeStatus.State).
func (t *runTree) state(n *store.Node) string {
	c := t.live(n)
	switch {
	case n.Invalidated:
		return "invalidated"
	case n.Parent == "" && t.result.Outcome == loop.OutcomeAchieved:
		return "achieved"
	case t.flags[n.ID].WaitHire:
		return "waiting for a human"
	case n.Status == store.StatusPending && len(c) > 0 && t.done(n):
		return fmt.Sprintf("done (%d children)", len(c))
	case n.Status == store.StatusPending && len(c) > 0:
		k := 0
		for _, x := range c {
			if t.done(x) {
				k++
			}
		}
		return fmt.Sprintf("waiting on children (%d of %d done)", k, len(c))
	}
	return n.Status
}

// walk appends n and its subtree, depth first in creation order.
func (t *runTree) walk(out []NodeStatus, n *store.Node, depth int, reopened map[string]int) []NodeStatus {
	b := t.budgets[n.ID]
	ns := NodeStatus{ID: n.ID, Parent: n.Parent, Depth: depth, Status: n.Status, State: t.state(n), Invalidated: n.Invalidated,
		SpentUSD: b.SpentUSD, UnknownUSD: b.UnknownUSD, AllocatedUSD: b.ReceivedUSD, DelegatedUSD: b.DelegatedUSD, ReturnedUSD: b.ReturnedUSD, HeldUSD: b.HeldUSD,
		ReserveUSD: b.ReserveUSD(), SpentSeconds: b.SpentSeconds, AllocatedSeconds: b.ReceivedSeconds, ReserveSeconds: b.ReserveSeconds(),
		Attempts: n.AttemptCount, MaxAttempts: n.MaxAttempts, Summary: n.Summary, Goal: n.Goal, Created: n.Created, Resolved: n.ResolvedAt,
		Reopened: reopened[n.ID]}
	if n.SigmaV != nil {
		v, p := *n.SigmaV, store.Value(n.SigmaPath)
		ns.SigmaV, ns.SigmaPath = &v, &p
	}
	out = append(out, ns)
	for _, c := range t.kids[n.ID] {
		out = t.walk(out, c, depth+1, reopened)
	}
	return out
}

// Logs lists log rows, oldest first, of one tier (0 = all) and of the
// nodes whose id starts with node ("" = all).
// A tier other than those is an OptionError of the field "tier".
func (k *Kernel) Logs(ctx context.Context, tier int, node string) ([]LogEntry, error) {
	if err := checkTier(tier); err != nil {
		return nil, err
	}
	rows, err := k.st.Logs(ctx, tier, node)
	if err != nil {
		return nil, err
	}
	return plainjson.List(rows), nil
}

// Artifacts lists the artifacts of the runs whose root id starts with
// root ("" = every run), oldest first.
func (k *Kernel) Artifacts(ctx context.Context, root string) ([]Artifact, error) {
	arts, err := k.st.Artifacts(ctx, root)
	if err != nil {
		return nil, err
	}
	return plainjson.List(arts), nil
}

// PatternHistory is what the boot-time queries know of one goal pattern.
type PatternHistory struct {
	ID      string      `json:"id"`
	Goal    string      `json:"goal"`
	History *kg.Context `json:"history"`
}

// KGReport is the knowledge graph as solve kg shows it.
type KGReport struct {
	Edges    []EdgeCount      `json:"edges"`
	Patterns []PatternHistory `json:"patterns"`
	// Lookup is lookup-before-build for the capability asked about.
	Lookup *Lookup `json:"lookup,omitempty"`
}

// EdgeCount is how many edges of the graph have a relation.
type EdgeCount = record.EdgeCount

// Lookup is the resolvers that provide a capability, oldest first.
type Lookup struct {
	Capability string   `json:"capability"`
	Resolvers  []string `json:"resolvers"`
}

// KG runs the three boot-time queries for a goal summary (or for every
// goal pattern when goal is ""), counts the edges by relation, and with a
// capability runs lookup-before-build.
func (k *Kernel) KG(ctx context.Context, goal, capability string) (*KGReport, error) {
	edges, err := k.st.EdgeCounts(ctx)
	if err != nil {
		return nil, err
	}
	r := &KGReport{Edges: plainjson.List(edges), Patterns: []PatternHistory{}}
	var patterns []store.Pattern
	if goal != "" {
		patterns = []store.Pattern{{ID: kg.PatternID(goal), Label: goal}}
	} else if patterns, err = k.st.GoalPatterns(ctx, ""); err != nil {
		return nil, err
	}
	for _, p := range patterns {
		c, err := kg.Query(ctx, &k.st.Conn, p.ID)
		if err != nil {
			return nil, err
		}
		r.Patterns = append(r.Patterns, PatternHistory{ID: p.ID, Goal: p.Label, History: c})
	}
	if capability != "" {
		found, err := kg.LookupBeforeBuild(ctx, &k.st.Conn, capability)
		if err != nil {
			return nil, err
		}
		if found == nil {
			found = []string{}
		}
		r.Lookup = &Lookup{Capability: capability, Resolvers: found}
	}
	return r, nil
}
