package solve

import (
	"context"
	"fmt"

	"github.com/llmkernels/kernels/solve/kg"
	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/store"
)

// The read side of the kernel: plain result structs for the CLI to print
// as text or as JSON (solve status|log|artifacts|kg --json; the shapes are
// documented in docs/solve.md).

// RunSummary is one run in the list of runs.
type RunSummary struct {
	loop.Result
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
	ID           string   `json:"id"`
	Parent       string   `json:"parent_id,omitempty"`
	Depth        int      `json:"depth"`
	Status       string   `json:"status"`
	Invalidated  bool     `json:"invalidated"`
	SigmaV       *float64 `json:"sigma_v"`    // null before the node is verified
	SigmaPath    *float64 `json:"sigma_path"` // null before the node is verified
	SpentUSD     float64  `json:"spent_usd"`  // a parent's includes what it allocated to children
	AllocatedUSD float64  `json:"allocated_usd"`
	Attempts     int      `json:"attempts"`
	MaxAttempts  int      `json:"max_attempts"`
	Summary      string   `json:"summary"`
}

// RunStatus is a run's tree, depth first in creation order, and where
// the run stands.
type RunStatus struct {
	Result loop.Result  `json:"result"`
	Nodes  []NodeStatus `json:"nodes"`
}

// Status is the tree of the run whose root id starts with root.
func (k *Kernel) Status(ctx context.Context, root string) (*RunStatus, error) {
	root, err := loop.FindRoot(ctx, k.st, root)
	if err != nil {
		return nil, err
	}
	nodes, err := k.st.TreeNodes(ctx, root)
	if err != nil {
		return nil, err
	}
	kids := map[string][]*store.Node{}
	for _, n := range nodes {
		kids[n.Parent] = append(kids[n.Parent], n)
	}
	st := &RunStatus{Nodes: []NodeStatus{}}
	var walk func(n *store.Node, depth int) error
	walk = func(n *store.Node, depth int) error {
		bal, err := k.st.Balance(ctx, n.ID)
		if err != nil {
			return err
		}
		ns := NodeStatus{ID: n.ID, Parent: n.Parent, Depth: depth, Status: n.Status, Invalidated: n.Invalidated, SpentUSD: bal.Spent,
			AllocatedUSD: bal.Allocated, Attempts: n.AttemptCount, MaxAttempts: n.MaxAttempts, Summary: n.Summary}
		if n.SigmaV.Valid {
			v, p := n.SigmaV.Float64, n.SigmaPath.Float64
			ns.SigmaV, ns.SigmaPath = &v, &p
		}
		st.Nodes = append(st.Nodes, ns)
		for _, c := range kids[n.ID] {
			if err := walk(c, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	for _, n := range kids[""] {
		if err := walk(n, 0); err != nil {
			return nil, err
		}
	}
	res, err := loop.Outcome(ctx, k.st, root)
	if err != nil {
		return nil, err
	}
	st.Result = *res
	return st, nil
}

// Logs lists log rows, oldest first, of one tier (0 = all) and of the
// nodes whose id starts with node ("" = all).
func (k *Kernel) Logs(ctx context.Context, tier int, node string) ([]store.LogRow, error) {
	if tier < 0 || tier > 3 {
		return nil, fmt.Errorf("log tier %d: give 1, 2 or 3 (0 = all)", tier)
	}
	rows, err := k.st.Logs(ctx, tier, node)
	if rows == nil && err == nil {
		rows = []store.LogRow{}
	}
	return rows, err
}

// Artifacts lists the artifacts of the runs whose root id starts with
// root ("" = every run), oldest first.
func (k *Kernel) Artifacts(ctx context.Context, root string) ([]store.Artifact, error) {
	arts, err := k.st.Artifacts(ctx, root)
	if arts == nil && err == nil {
		arts = []store.Artifact{}
	}
	return arts, err
}

// PatternHistory is what the boot-time queries know of one goal pattern.
type PatternHistory struct {
	ID      string      `json:"id"`
	Goal    string      `json:"goal"`
	History *kg.Context `json:"history"`
}

// KGReport is the knowledge graph as solve kg shows it.
type KGReport struct {
	Edges    []store.RelationCount `json:"edges"`
	Patterns []PatternHistory      `json:"patterns"`
	// Lookup is lookup-before-build for the capability asked about.
	Lookup *Lookup `json:"lookup,omitempty"`
}

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
	r := &KGReport{Edges: edges, Patterns: []PatternHistory{}}
	if r.Edges == nil {
		r.Edges = []store.RelationCount{}
	}
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
