package solve

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// runConfig is stored with the run (a run_config artifact of the root) so
// `solve resume` continues with the same settings.
type runConfig struct {
	Goal        string  `json:"goal"`
	Workspace   string  `json:"workspace"`
	Model       string  `json:"model"`
	Workers     int     `json:"workers"`
	TMax        int     `json:"t_max"`
	Interactive bool    `json:"interactive"`
	BudgetUSD   float64 `json:"budget_usd"`
	TimeSeconds float64 `json:"time_seconds"`
}

// engine is one dispatch loop over one root's tree.
type engine struct {
	k        *Kernel
	opts     Options
	cfg      runConfig
	root     string
	rmu      sync.Mutex
	res      map[string]Resolver
	patterns []patternInfo
	crashes  atomic.Int64
	termMu   sync.Mutex    // one interactive question at a time
	term     *bufio.Reader // opts.In, buffered once for every question

	// scheduler state, touched only by the loop goroutine
	nodes    map[string]*snode
	queued   map[string]bool
	inflight map[string]bool
	queue    []string
}

// snode is a node as the scheduler sees it.
type snode struct {
	id, parent, status string
	seq                int
	children           []string // decomposition children (build subgoals are dependencies)
	deps, dependents   []string
	build, waitHire    bool
	invalidated        bool
}

// stepResult is what a node step reports to the scheduler.
type stepResult struct {
	node     string
	status   string
	children []*snode
	waitHire bool
	reload   bool
	err      error
}

// Run starts a new run for the goal and dispatches until the goal is
// achieved, every remaining node waits for a human, or nothing can move.
func (k *Kernel) Run(ctx context.Context, req RunRequest, opts Options) (*Result, error) {
	if strings.TrimSpace(req.Goal) == "" {
		return nil, errors.New(`the goal is empty: give it as the first argument, e.g. solve run "Add a Median function with tests" --workspace ./ws`)
	}
	if !(req.BudgetUSD > 0) {
		return nil, fmt.Errorf("--budget %v: give a positive budget in USD", req.BudgetUSD)
	}
	if !(req.Time > 0) {
		return nil, fmt.Errorf("--time %v: give a positive duration such as 30m", req.Time)
	}
	if req.Workspace != "" {
		abs, err := absDir(req.Workspace)
		if err != nil {
			return nil, err
		}
		req.Workspace = abs
	}
	if req.TMax <= 0 {
		req.TMax = DefaultTMax
	}
	if req.Workers <= 0 {
		req.Workers = 1
	}
	if err := k.boot(ctx); err != nil {
		return nil, err
	}
	cfg := runConfig{Goal: req.Goal, Workspace: req.Workspace, Model: req.Model, Workers: req.Workers, TMax: req.TMax,
		Interactive: req.Interactive, BudgetUSD: req.BudgetUSD, TimeSeconds: req.Time.Seconds()}
	root := newID()
	e := k.newEngine(root, cfg, opts)
	core := req.Constraints
	var synth *Output // the extraction dialogue's call, recorded with the root
	if req.Interactive {
		var err error
		if core, synth, err = e.extractionDialogue(ctx, req.Goal, core, req.BudgetUSD); err != nil {
			return nil, err
		}
	}
	err := k.write(ctx, func(tx *sql.Tx) error {
		var coreIDs []string
		for _, c := range core {
			id, err := insertConstraint(ctx, tx, newConstraint{Type: Semantic, Domain: "goal", Title: c, Rubric: c}, "human", "", nil)
			if err != nil {
				return err
			}
			coreIDs = append(coreIDs, id)
		}
		summary := req.Goal
		if r := []rune(summary); len(r) > 120 {
			summary = string(r[:119]) + "…"
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO nodes (id, parent_id, root_id, goal_description, goal_summary, goal_modality, status,
			constraints_core_ids, tau_local, tau_global, max_attempts, created_at) VALUES (?, NULL, ?, ?, ?, 'text', 'pending', ?, ?, ?, ?, ?)`,
			root, root, req.Goal, summary, jsonText(nonNil(coreIDs)), TauLocal, TauGlobal, req.TMax, now()); err != nil {
			return err
		}
		var inputs []string
		for _, s := range req.Suggest {
			// A human idea is an unprivileged candidate: its author is not
			// recorded anywhere a resolver or verifier can see it.
			id, err := k.putArtifact(ctx, tx, artifactIn{Node: root, Type: "suggestion", Format: "text", Content: []byte(s),
				Metadata: map[string]any{"candidate": true}})
			if err != nil {
				return err
			}
			inputs = append(inputs, id)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE nodes SET input_artifact_ids = ? WHERE id = ?", jsonText(nonNil(inputs)), root); err != nil {
			return err
		}
		if _, err := k.putArtifact(ctx, tx, artifactIn{Node: root, Type: "run_config", Format: "json", Content: []byte(jsonText(cfg))}); err != nil {
			return err
		}
		if err := writeLedger(ctx, tx, ledgerEntry{Node: root, Event: "allocate", Amount: req.BudgetUSD, Time: req.Time.Seconds(), Description: "root budget (--budget, --time)"}); err != nil {
			return err
		}
		if synth != nil {
			if err := writeLedger(ctx, tx, ledgerEntry{Node: root, Event: "spend", Amount: synth.Cost, Time: synth.Seconds, Resolver: ClaudeCodeID, Description: OpSynthesize}); err != nil {
				return err
			}
			if err := logRow(ctx, tx, 3, root, ClaudeCodeID+" "+OpSynthesize, map[string]any{"resolver": ClaudeCodeID, "op": OpSynthesize,
				"raw_io_policy": "redacted_by_default", "cost": synth.Cost, "time_seconds": synth.Seconds, "llm_calls": synth.LLMCalls}); err != nil {
				return err
			}
		}
		return logRow(ctx, tx, 1, root, fmt.Sprintf("Node %s: GOAL %q (budget $%.2f, time %s, workspace %s)", short(root), summary, req.BudgetUSD, req.Time, orNone(req.Workspace)), nil)
	})
	if err != nil {
		return nil, fmt.Errorf("kernel.db %s: %w", k.path, err)
	}
	return e.dispatch(ctx)
}

// Resume continues a run (the latest unfinished one when root is "").
func (k *Kernel) Resume(ctx context.Context, root string, opts Options) (*Result, error) {
	if err := k.boot(ctx); err != nil {
		return nil, err
	}
	if root == "" {
		err := k.db.QueryRowContext(ctx, `SELECT a.node_id FROM artifacts a WHERE a.type = 'run_config'
			AND NOT EXISTS (SELECT 1 FROM artifacts b WHERE b.node_id = a.node_id AND b.type = 'assembly')
			ORDER BY a.rowid DESC LIMIT 1`).Scan(&root)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("kernel.db %s has no unfinished run to resume; start one with solve run", k.path)
		} else if err != nil {
			return nil, err
		}
	}
	root, err := k.resolveRoot(ctx, root)
	if err != nil {
		return nil, err
	}
	var cfgText string
	if err := k.db.QueryRowContext(ctx, "SELECT id FROM artifacts WHERE node_id = ? AND type = 'run_config'", root).Scan(&cfgText); err != nil {
		return nil, fmt.Errorf("node %s is not the root of a solve run (no run_config): %w", root, err)
	}
	_, data, err := k.artifact(ctx, k.db, cfgText)
	if err != nil {
		return nil, err
	}
	var cfg runConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("run %s: run_config: %w", root, err)
	}
	e := k.newEngine(root, cfg, opts)
	_ = logRow(ctx, k.db, 1, root, fmt.Sprintf("Node %s: RESUME", short(root)), nil)
	return e.dispatch(ctx)
}

// resolveRoot accepts a full root id or a unique prefix.
func (k *Kernel) resolveRoot(ctx context.Context, prefix string) (string, error) {
	rows, err := k.db.QueryContext(ctx, "SELECT id FROM nodes WHERE parent_id IS NULL AND id LIKE ? || '%'", prefix)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return "", err
		}
		ids = append(ids, id)
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("no root node %q in %s; list runs with solve status", prefix, k.path)
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("root %q is ambiguous (%d roots start with it); give more characters", prefix, len(ids))
}

func (k *Kernel) newEngine(root string, cfg runConfig, opts Options) *engine {
	e := &engine{k: k, opts: opts, cfg: cfg, root: root, res: map[string]Resolver{
		SelfModelID:  &selfModel{k: k},
		ClaudeCodeID: &claudeCode{client: opts.Client},
		CodexToolsID: &codexTools{costPerInvocation: 0.01},
	}}
	for id, r := range opts.Resolvers {
		e.res[id] = r
	}
	if opts.In != nil {
		e.term = bufio.NewReader(opts.In)
	}
	return e
}

// resolver returns the implementation of a registered resolver.
func (e *engine) resolver(ctx context.Context, id string) (Resolver, error) {
	e.rmu.Lock()
	defer e.rmu.Unlock()
	if r, ok := e.res[id]; ok {
		return r, nil
	}
	entries, err := e.k.resolvers(ctx, e.k.db, id)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, permanent("capability_mismatch", fmt.Errorf("resolver %q is not in the registry (see solve resolvers)", id))
	}
	if cmd, _ := entries[0].Metadata["command"].(string); cmd == "" {
		return nil, permanent("capability_mismatch", fmt.Errorf("resolver %q has no command to run in this kernel", id))
	}
	r := &commandTool{k: e.k, entry: entries[0]}
	e.res[id] = r
	return r, nil
}

// crashPoint is the fault injection of Options.CrashAfter.
func (e *engine) crashPoint() {
	if e.opts.CrashAfter > 0 && e.crashes.Add(1) == int64(e.opts.CrashAfter) {
		// os.Process.Kill is SIGKILL on Unix and TerminateProcess on
		// Windows: the process dies as abruptly as a kill -9.
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Kill()
		}
		select {}
	}
}

func (e *engine) progress(format string, args ...any) {
	if e.opts.Progress != nil {
		fmt.Fprintf(e.opts.Progress, "solve: "+format+"\n", args...)
	}
}

// load reads the root's live tree into the scheduler.
func (e *engine) load(ctx context.Context) error {
	e.nodes, e.queued, e.queue = map[string]*snode{}, map[string]bool{}, nil
	rows, err := e.k.db.QueryContext(ctx, `SELECT n.id, COALESCE(n.parent_id, ''), n.status, n.invalidated_at IS NOT NULL,
		EXISTS (SELECT 1 FROM artifacts a WHERE a.node_id = n.id AND a.type = 'build_goal'),
		EXISTS (SELECT 1 FROM capability_requests c WHERE c.status = 'requested' AND c.detail->>'node_id' = n.id)
		FROM nodes n WHERE n.root_id = ? ORDER BY n.rowid`, e.root)
	if err != nil {
		return err
	}
	var order []*snode
	for rows.Next() {
		n := &snode{seq: len(order)}
		if err := rows.Scan(&n.id, &n.parent, &n.status, &n.invalidated, &n.build, &n.waitHire); err != nil {
			rows.Close()
			return err
		}
		e.nodes[n.id] = n
		order = append(order, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, n := range order {
		if p := e.nodes[n.parent]; p != nil && !n.invalidated && !n.build {
			p.children = append(p.children, n.id)
		}
	}
	rows, err = e.k.db.QueryContext(ctx, "SELECT d.node_id, d.depends_on FROM node_dependencies d JOIN nodes n ON n.id = d.node_id WHERE n.root_id = ?", e.root)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var a, b string
		if err := rows.Scan(&a, &b); err != nil {
			return err
		}
		if na, nb := e.nodes[a], e.nodes[b]; na != nil && nb != nil {
			na.deps = append(na.deps, b)
			nb.dependents = append(nb.dependents, a)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, n := range order {
		e.recheck(n.id)
	}
	return nil
}

// done: resolved, or decomposed with every live child done.
func (e *engine) done(id string) bool {
	n := e.nodes[id]
	if n == nil || n.invalidated {
		return false
	}
	if n.status == StatusResolved {
		return true
	}
	if n.status != StatusPending || len(n.children) == 0 {
		return false
	}
	for _, c := range n.children {
		if !e.done(c) {
			return false
		}
	}
	return true
}

func (e *engine) ready(n *snode) bool {
	if n.invalidated || n.waitHire || e.inflight[n.id] || e.queued[n.id] {
		return false
	}
	switch n.status {
	case StatusResolved, StatusInfeasible, StatusGated, StatusFailed:
		return false
	case StatusPending:
		if len(n.children) > 0 {
			return false
		}
	}
	for _, d := range n.deps {
		if !e.done(d) {
			return false
		}
	}
	return true
}

func (e *engine) recheck(id string) {
	if n := e.nodes[id]; n != nil && e.ready(n) {
		e.queued[id] = true
		e.queue = append(e.queue, id)
	}
}

// settled re-examines what a node's change may have unblocked: itself,
// and up its ancestors, everything depending on a node now done.
func (e *engine) settled(id string) {
	e.recheck(id)
	for cur := id; cur != ""; cur = e.nodes[cur].parent {
		if !e.done(cur) {
			break
		}
		for _, d := range e.nodes[cur].dependents {
			e.recheck(d)
		}
	}
}

// dispatch is the dispatch loop (spec §5) with Workers parallel workers.
func (e *engine) dispatch(ctx context.Context) (*Result, error) {
	workers := e.cfg.Workers
	if e.opts.Workers > 0 {
		workers = e.opts.Workers
	}
	var err error
	if e.patterns, err = e.k.otherPatterns(ctx, e.root); err != nil {
		return nil, err
	}
	e.inflight = map[string]bool{}
	if err := e.load(ctx); err != nil {
		return nil, err
	}
	results := make(chan stepResult)
	var firstErr error
	for {
		for firstErr == nil && len(e.queue) > 0 && len(e.inflight) < workers {
			id := e.queue[0]
			e.queue = e.queue[1:]
			delete(e.queued, id)
			e.inflight[id] = true
			go func() { results <- e.step(ctx, id) }()
		}
		if len(e.inflight) == 0 {
			if firstErr != nil {
				return nil, firstErr
			}
			if !e.done(e.root) {
				break
			}
			finished, err := e.finalize(ctx)
			if err != nil {
				return nil, err
			}
			if finished {
				break
			}
			if err := e.load(ctx); err != nil {
				return nil, err
			}
			continue
		}
		r := <-results
		delete(e.inflight, r.node)
		if r.err != nil {
			if firstErr == nil {
				firstErr = r.err
			}
			continue
		}
		if r.reload {
			if err := e.load(ctx); err != nil {
				return nil, err
			}
			e.live()
			continue
		}
		n := e.nodes[r.node]
		n.status, n.waitHire = r.status, r.waitHire
		for _, c := range r.children {
			c.seq = len(e.nodes)
			e.nodes[c.id] = c
			if c.build {
				n.deps = append(n.deps, c.id)
				c.dependents = append(c.dependents, n.id)
			} else {
				n.children = append(n.children, c.id)
			}
		}
		for _, c := range r.children {
			for _, d := range c.deps {
				e.nodes[d].dependents = append(e.nodes[d].dependents, c.id)
			}
		}
		for _, c := range r.children {
			e.recheck(c.id)
		}
		e.settled(r.node)
		e.live()
	}
	return e.result(ctx)
}

// live prints the live view line: node states and budget.
func (e *engine) live() {
	if e.opts.Progress == nil {
		return
	}
	counts := map[string]int{}
	for _, n := range e.nodes {
		if !n.invalidated {
			counts[n.status]++
		}
	}
	var parts []string
	for _, s := range []string{StatusPending, StatusIdentifying, StatusSelectingCons, StatusSelectingResolve, StatusResolving, StatusVerifying,
		StatusDecomposing, StatusGated, StatusResolved, StatusInfeasible} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, counts[s]))
		}
	}
	spent, alloc, _ := e.k.treeBudget(context.Background(), e.root)
	e.progress("live: %s · running %d · spent $%.4f of $%.2f", strings.Join(parts, ", "), len(e.inflight), spent, alloc)
}

// treeBudget is what the tree's resolvers spent and the root's allocation.
func (k *Kernel) treeBudget(ctx context.Context, root string) (spent, allocated float64, err error) {
	err = k.db.QueryRowContext(ctx, `SELECT
		COALESCE((SELECT SUM(l.amount) FROM budget_ledger l JOIN nodes n ON n.id = l.node_id WHERE n.root_id = ? AND l.event_type = 'spend' AND l.resolver_id IS NOT NULL), 0),
		COALESCE((SELECT SUM(amount) FROM budget_ledger WHERE node_id = ? AND event_type = 'allocate'), 0)`, root, root).Scan(&spent, &allocated)
	return
}

func (e *engine) result(ctx context.Context) (*Result, error) {
	return e.k.RunResult(ctx, e.root)
}

// RunResult reports where a run stands.
func (k *Kernel) RunResult(ctx context.Context, root string) (*Result, error) {
	r := &Result{RootID: root}
	var err error
	if r.SpentUSD, r.AllocatedUSD, err = k.treeBudget(ctx, root); err != nil {
		return nil, err
	}
	if err := k.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(CAST(l.detail->>'llm_calls' AS INTEGER)), 0) FROM logs l JOIN nodes n ON n.id = l.node_id
		WHERE n.root_id = ? AND l.tier = 3`, root).Scan(&r.LLMCalls); err != nil {
		return nil, err
	}
	if err := k.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM nodes WHERE root_id = ? AND invalidated_at IS NULL", root).Scan(&r.Nodes); err != nil {
		return nil, err
	}
	if err := k.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM capability_requests WHERE root_id = ? AND status = 'requested'", root).Scan(&r.OpenRequests); err != nil {
		return nil, err
	}
	var id, meta string
	err = k.db.QueryRowContext(ctx, "SELECT id, metadata FROM artifacts WHERE node_id = ? AND type = 'assembly' ORDER BY rowid DESC LIMIT 1", root).Scan(&id, &meta)
	switch {
	case err == nil:
		r.Outcome, r.ArtifactID = OutcomeAchieved, id
		var m struct {
			SigmaSystem float64 `json:"sigma_system"`
			Summary     string  `json:"summary"`
		}
		_ = json.Unmarshal([]byte(meta), &m)
		r.SigmaSystem, r.Summary = m.SigmaSystem, m.Summary
	case errors.Is(err, sql.ErrNoRows):
		r.Outcome = OutcomeInfeasible
		if r.OpenRequests > 0 {
			r.Outcome = OutcomeWaiting
		}
	default:
		return nil, err
	}
	return r, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func absDir(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("--workspace %s: %w", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--workspace %s: %w", dir, err)
	}
	return abs, nil
}

// retryWait is the pause before repeating a resolver call that failed
// with a retryable error.
const retryWait = 200 * time.Millisecond
