package loop

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/mcp"
	"github.com/llmkernels/kernels/solve/record"
	"github.com/llmkernels/kernels/solve/store"
	"github.com/llmkernels/kernels/solve/workspace"
)

// Defaults (spec §0, §2).
const (
	DefaultTMax       = store.DefaultMaxAttempts
	ReserveShare      = 0.20 // kept by a parent when it allocates to children
	StagnationEpsilon = 0.05 // Δσ below this over two consecutive attempts is stagnation
)

// Request is a new run: the goal and its limits, stored with the run.
type Request struct {
	Goal        string
	Constraints []string      // the human-seeded irreducible core
	Suggest     []string      // human ideas, unprivileged candidate artifacts
	BudgetUSD   float64       // root budget
	Time        time.Duration // root wall-time budget
	Workspace   string        // directory where software goals run for real
	Workers     int           // steps run at once (0: unset, 1 in process, RemoteInFlight with Options.Remote)
	TMax        int           // attempts before BUILD (default DefaultTMax)
	Interactive bool          // ask the human on Options.In at Step 1 and Step 11
	Model       string
	// MCP are the MCP servers whose tools claude-code-0 is offered when it
	// resolves or verifies (runmcp.go).
	MCP []MCPServer
	// Scripted: the calls are scripted (llm.Client.Scripted), metered as
	// Model would charge for them, nothing charged; the run's results say
	// so (Result.CostNote).
	Scripted bool
}

// Options are how this process runs (not stored with the run).
type Options struct {
	// Resolvers are the implementations by resolver id: the boot resolvers
	// and any replacement (tests, benchmarks).
	Resolvers map[string]Resolver
	// Tool makes the implementation of a registered resolver that is not
	// in Resolvers (a built or hired tool); nil = none can run.
	Tool     func(record.Resolver) (Resolver, error)
	Progress io.Writer // live view lines; nil = none
	In       io.Reader // the terminal for Request.Interactive
	Workers  int       // overrides the stored worker count when > 0 (resume)
	// Remote, when set, sends each ready node's step to the `solve worker`
	// processes through the job queue (remote.go) instead of running it in
	// this process; the worker count then caps the steps in flight
	// (unset: RemoteInFlight). PostgreSQL only; an interactive run is
	// refused.
	Remote *Remote
	// MCPUnconfined is a person's --unconfined: the run's MCP servers that
	// are started by a command may run (solve cannot confine them).
	MCPUnconfined bool
}

// Result is where a run stands when the dispatch loop stops.
type Result struct {
	RootID       string  `json:"root_id"`
	Outcome      string  `json:"outcome"` // achieved | waiting_for_human | infeasible | stopped
	SigmaSystem  float64 `json:"sigma_system"`
	ArtifactID   string  `json:"artifact_id,omitempty"`
	Summary      string  `json:"summary,omitempty"`
	LLMCalls     int     `json:"llm_calls"`
	SpentUSD     float64 `json:"spent_usd"`     // what the run's paid calls cost
	UnknownUSD   float64 `json:"unknown_usd"`   // the part of SpentUSD whose outcome is unknown (calls cut off in flight, at their hold)
	AllocatedUSD float64 `json:"allocated_usd"` // its allowance: --budget and every human top-up
	ReservedUSD  float64 `json:"reserved_usd"`  // held by calls in flight (or by a stopped process until resume)
	OpenRequests int     `json:"open_requests"`
	Nodes        int     `json:"nodes"`
	// The tokens of the run's LLM calls: uncached input, output, and the
	// input written to and read from the prompt cache.
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheWriteTokens int `json:"cache_creation_input_tokens"`
	CacheReadTokens  int `json:"cache_read_input_tokens"`
	// CacheReadShare is the part of the input read from the cache (0 to 1).
	CacheReadShare float64 `json:"cache_read_share"`
	// CostNote says what the money of a run started on a scripted
	// provider (Request.Scripted) is: "scripted: what MODEL would charge;
	// nothing is charged" (llm.ScriptedNote); "" for a real run.
	CostNote string `json:"cost_note,omitempty"`
}

// CostLabel is CostNote as shown once after the run's money: " (…)", or
// "" for a real run.
func (r *Result) CostLabel() string {
	if r.CostNote == "" {
		return ""
	}
	return " (" + r.CostNote + ")"
}

// Usage is the run's tokens as an llm.Usage (for llm.CostLine).
func (r *Result) Usage() llm.Usage {
	return llm.Usage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CacheCreationInputTokens: r.CacheWriteTokens, CacheReadInputTokens: r.CacheReadTokens}
}

// Outcomes.
const (
	OutcomeAchieved   = "achieved"
	OutcomeWaiting    = "waiting_for_human"
	OutcomeInfeasible = "infeasible"
	// OutcomeStopped is a run that still has work a resume would do: a
	// node ready to step, or a finished tree not yet assembled. Its process
	// stopped (a signal, kill -9, a lease taken over) or is running now.
	OutcomeStopped = "stopped"
)

// runConfig is stored with the run (a run_config artifact of the root) so
// a resumed run continues with the same settings.
type runConfig struct {
	Goal        string      `json:"goal"`
	Workspace   string      `json:"workspace"`
	Model       string      `json:"model"`
	Workers     int         `json:"workers"` // 0: not given (Request.Workers)
	TMax        int         `json:"t_max"`
	Interactive bool        `json:"interactive"`
	BudgetUSD   float64     `json:"budget_usd"`
	TimeSeconds float64     `json:"time_seconds"`
	MCP         []MCPServer `json:"mcp,omitempty"`
	Scripted    bool        `json:"scripted,omitempty"`
}

// engine is one dispatch loop over one root's tree.
type engine struct {
	st       *store.Store
	opts     Options
	cfg      runConfig
	root     string
	owner    string // this process's id in leases and reservations
	rmu      sync.Mutex
	res      map[string]Resolver
	patterns []store.Pattern
	termMu   sync.Mutex    // one interactive question at a time
	term     *bufio.Reader // opts.In, buffered once for every question
	mergeMu  sync.Mutex    // one merge into the workspace at a time
	mcp      *mcp.Set      // the run's MCP servers that answered at the start; nil: none
	mcpMu    sync.Mutex
	mcpNoted map[string]bool // notes of the MCP servers logged already
	// With remote workers: the workspace is stored in the database
	// (remotews.go); a worker's step merges there (stored), and the
	// coordinator has written the first merged merges to the user's.
	stored bool
	merged int
	lease  func() // stops renewing the run's lease and releases it
	stop   context.CancelCauseFunc

	// The live view's money, kept as it changes (never summed per step).
	moneyMu          sync.Mutex
	spent, allowance float64
	usage            llm.Usage // the tokens of the calls settled by this process
	// With remote workers: what each node's calls had cost when its last
	// step's result came (the next result's figure less this is what that
	// step spent).
	callSpend map[string]float64

	// scheduler state, touched only by the loop goroutine
	nodes    map[string]*snode
	queued   map[string]bool
	inflight map[string]bool
	queue    []string
	counts   map[string]int // live nodes by status
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
	spent    *float64 // with remote workers: what the node's calls have cost (stepOutput.SpentUSD)
	err      error
}

// RemoteInFlight is how many steps a coordinator keeps enqueued at once
// with Options.Remote when no worker count was given (Request.Workers,
// Options.Workers).
const RemoteInFlight = 256

// remoteUsable refuses what remote steps cannot do.
func remoteUsable(cfg runConfig) error {
	switch {
	case cfg.Interactive:
		return errors.New("an interactive run asks its questions on this terminal; it cannot send its steps to remote workers")
	case len(cfg.MCP) > 0:
		return ErrRemoteMCP
	}
	return nil
}

// ErrRemoteMCP refuses remote workers to a run that offers MCP servers.
var ErrRemoteMCP = errors.New("remote workers cannot offer a run's MCP servers yet; run it without remote workers")

// ResumeError is a run this process cannot take further that a resume
// continues: Remote says whether the resume sends its steps to remote
// workers, When (in words, or "") when to resume. Err says why.
type ResumeError struct {
	Root   string
	Remote bool
	When   string
	Err    error
}

func (e *ResumeError) Error() string {
	how := "resume the run without remote workers"
	if e.Remote {
		how = "resume the run with remote workers"
	}
	if e.When != "" {
		how += " " + e.When
	}
	return e.Err.Error() + " (" + how + ")"
}

func (e *ResumeError) Unwrap() error { return e.Err }

// ErrEmptyCore is the refusal of an interactive run whose irreducible
// core is empty.
var ErrEmptyCore = errors.New("the irreducible core is empty")

// Run starts a new run for the goal and dispatches until the goal is
// achieved, every remaining node waits for a human, or nothing can move.
func Run(ctx context.Context, st *store.Store, req Request, opts Options) (*Result, error) {
	if err := checkRequest(&req); err != nil {
		return nil, err
	}
	if err := Boot(ctx, st); err != nil {
		return nil, err
	}
	if err := CheckMCP(req.MCP, opts.MCPUnconfined); err != nil {
		return nil, err
	}
	cfg := runConfig{Goal: req.Goal, Workspace: req.Workspace, Model: req.Model, Workers: req.Workers, TMax: req.TMax,
		Interactive: req.Interactive, BudgetUSD: req.BudgetUSD, TimeSeconds: req.Time.Seconds(), MCP: req.MCP, Scripted: req.Scripted}
	if opts.Remote != nil {
		if err := remoteUsable(cfg); err != nil {
			return nil, err
		}
	}
	e := newEngine(st, store.NewID(), cfg, opts)
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	e.stop = stop
	if err := e.acquire(ctx); err != nil {
		return nil, err
	}
	defer e.release()
	core := make([]NewConstraint, 0, len(req.Constraints))
	for _, c := range req.Constraints {
		// A constraint in words is judged (semantic); one the dialogue
		// proposed keeps the type, domain and check it was proposed with.
		core = append(core, NewConstraint{Type: store.Semantic, Domain: "goal", Title: c, Rubric: c})
	}
	var synth *Output // the extraction dialogue's call, recorded with the root
	if req.Interactive {
		var err error
		if core, synth, err = e.extractionDialogue(ctx, req.Goal, core, req.BudgetUSD); err != nil {
			return nil, err
		}
	}
	var base *store.NewArtifact
	if opts.Remote != nil && req.Workspace != "" {
		a, err := baseArtifact(e.root, req.Workspace)
		if err != nil {
			return nil, err
		}
		base = &a
	}
	err := st.Write(ctx, func(tx *store.Tx) error {
		return e.startRoot(ctx, tx, req, cfg, core, synth, base)
	})
	if err != nil {
		return nil, fmt.Errorf("kernel database %s: start the run: %w", st.Path(), err)
	}
	e.progress("run %s started (kernel database %s)", e.root, st.Path())
	closeMCP, err := e.openMCP(ctx)
	if err != nil {
		return nil, err
	}
	defer closeMCP()
	return e.dispatch(ctx)
}

// checkRequest refuses a request the run could not honour, before any
// store is touched, and fills in its defaults (an absolute workspace,
// the default attempt limit).
func checkRequest(req *Request) error {
	if strings.TrimSpace(req.Goal) == "" {
		return option.Errorf("goal", "is empty: give the goal to solve")
	}
	if !(req.BudgetUSD > 0) || math.IsInf(req.BudgetUSD, 0) {
		return option.Errorf("budget_usd", "%v: give a positive, finite budget in USD", req.BudgetUSD)
	}
	if !(req.Time > 0) {
		return option.Errorf("time", "%v: give a positive duration", req.Time)
	}
	if req.Workers < 0 {
		return option.Errorf("workers", "%d: give at least 1 worker (0 = the default)", req.Workers)
	}
	if req.TMax < 0 {
		return option.Errorf("tmax", "%d: give at least 1 attempt (0 = the default %d)", req.TMax, DefaultTMax)
	}
	if req.Workspace != "" {
		// Refused before anything is asked of a resolver: a workspace the
		// kernel cannot write would fail only after money was spent.
		abs, err := filepath.Abs(req.Workspace)
		if err != nil {
			return option.Errorf("workspace", "%s: %w", req.Workspace, err)
		}
		if err := workspace.Usable(abs); err != nil {
			return &option.Error{Field: "workspace", Problem: strings.TrimPrefix(err.Error(), "workspace "), Err: err}
		}
		req.Workspace = abs
	}
	if req.TMax == 0 {
		req.TMax = DefaultTMax
	}
	return nil
}

// startRoot writes the run's start in one transaction, so a run either
// exists whole or not at all: the workspace's base (remote runs), the
// core constraints, the root node with its suggestions, the run's
// configuration, the root budget, and the extraction dialogue's call.
func (e *engine) startRoot(ctx context.Context, tx *store.Tx, req Request, cfg runConfig, core []NewConstraint, synth *Output, base *store.NewArtifact) error {
	root := e.root
	if base != nil {
		if _, err := tx.PutArtifact(ctx, *base); err != nil {
			return err
		}
	}
	var coreIDs []string
	for _, c := range core {
		id, err := insertConstraint(ctx, &tx.Conn, c, "human", "", nil)
		if err != nil {
			return err
		}
		coreIDs = append(coreIDs, id)
	}
	summary := clip.Text(req.Goal, 119) // goal_summary: at most 120 characters
	if _, err := tx.InsertNode(ctx, store.NewNode{ID: root, Goal: req.Goal, Summary: summary, Core: coreIDs,
		TauLocal: store.TauLocal, TauGlobal: store.TauGlobal, MaxAttempts: req.TMax}); err != nil {
		return err
	}
	var inputs []string
	for _, s := range req.Suggest {
		// A human idea is an unprivileged candidate: its author is not
		// recorded anywhere a resolver or verifier can see it.
		id, err := tx.PutArtifact(ctx, store.NewArtifact{Node: root, Type: "suggestion", Format: "text", Content: []byte(s),
			Metadata: map[string]any{"candidate": true}})
		if err != nil {
			return err
		}
		inputs = append(inputs, id)
	}
	if err := tx.SetInputs(ctx, root, inputs); err != nil {
		return err
	}
	content, err := store.JSONText(cfg)
	if err != nil {
		return fmt.Errorf("the run's configuration: %w", err)
	}
	if _, err := tx.PutArtifact(ctx, store.NewArtifact{Node: root, Type: "run_config", Format: "json", Content: []byte(content)}); err != nil {
		return err
	}
	if err := tx.WriteLedger(ctx, store.LedgerEntry{Node: root, Event: store.Allocate, Amount: req.BudgetUSD, Time: req.Time.Seconds(), Description: "root budget (--budget, --time)"}); err != nil {
		return err
	}
	if synth != nil {
		if err := tx.WriteLedger(ctx, store.LedgerEntry{Node: root, Event: store.Spend, Amount: synth.Cost, Time: synth.Seconds, Resolver: ClaudeCodeID, Description: OpSynthesize}); err != nil {
			return err
		}
		if err := tx.Log(ctx, 3, root, ClaudeCodeID+" "+OpSynthesize, map[string]any{"resolver": ClaudeCodeID, "op": OpSynthesize,
			"raw_io_policy": "redacted_by_default", "cost": synth.Cost, "time_seconds": synth.Seconds, "llm_calls": synth.LLMCalls}); err != nil {
			return err
		}
	}
	return tx.Log(ctx, 1, root, fmt.Sprintf("Node %s: GOAL %q (budget $%.2f, time %s, workspace %s)", store.Short(root), summary, req.BudgetUSD, req.Time, orNone(req.Workspace)), nil)
}

// Resume continues a run (the latest unfinished one when root is "").
func Resume(ctx context.Context, st *store.Store, root string, opts Options) (*Result, error) {
	if err := Boot(ctx, st); err != nil {
		return nil, err
	}
	if root == "" {
		latest, err := st.LatestUnfinishedRun(ctx)
		if err != nil {
			return nil, err
		}
		if latest == "" {
			return nil, fmt.Errorf("kernel database %s has no unfinished run to resume; start one with solve run", st.Path())
		}
		root = latest
	}
	root, err := FindRoot(ctx, st, root)
	if err != nil {
		return nil, err
	}
	cfg, err := loadConfig(ctx, st, root)
	if err != nil {
		return nil, err
	}
	if cfg.Workspace != "" {
		if err := workspace.Usable(cfg.Workspace); err != nil {
			return nil, fmt.Errorf("run %s: %w", root, err)
		}
	}
	if opts.Remote != nil {
		if err := remoteUsable(cfg); err != nil {
			return nil, fmt.Errorf("run %s: %w", root, err)
		}
	}
	e := newEngine(st, root, cfg, opts)
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	e.stop = stop
	if err := e.acquire(ctx); err != nil {
		return nil, err
	}
	defer e.release()
	closeMCP, err := e.openMCP(ctx)
	if err != nil {
		return nil, err
	}
	defer closeMCP()
	// Calls a stopped process made but did not record: settled at what
	// they reserved, never forgotten.
	var open []store.OpenReservation
	if opts.Remote == nil {
		open, err = st.SettleOpen(ctx, root)
	} else {
		// Workers may be in the middle of steps of this run: the calls
		// they hold are theirs (a dead worker's are settled by the step's
		// next attempt).
		var held []Holder
		if held, err = opts.Remote.Holders(ctx, root); err == nil {
			open, err = st.SettleOpenOf(ctx, root, func(o store.OpenReservation) bool {
				return !slices.ContainsFunc(held, func(h Holder) bool { return h.Node == o.Node })
			})
		}
	}
	if err != nil {
		return nil, err
	}
	for _, o := range open {
		msg := settledMessage(o, "the process stopped during the call")
		e.progress("%s", msg)
		if err := st.Log(ctx, 1, o.Node, msg, nil); err != nil {
			return nil, err
		}
	}
	if err := st.Log(ctx, 1, root, fmt.Sprintf("Node %s: RESUME", store.Short(root)), nil); err != nil {
		return nil, err
	}
	return e.dispatch(ctx)
}

// settledMessage is the log line of a call settled after its process
// stopped during it: the money held (an unknown outcome) and the time the
// call ran until its last heartbeat, never the time the process was dead.
func settledMessage(o store.OpenReservation, why string) string {
	return fmt.Sprintf("Node %s: SETTLED %s %s at its reservation $%.4f, an unknown outcome, and the %.1fs it ran of %.1fs held (%s)",
		store.Short(o.Node), o.Resolver, o.Op, o.Cost, o.Ran(), o.Time, why)
}

// costNote is Result.CostNote, from the settings the run was started
// with; "" for a root with none (a plan's).
func costNote(ctx context.Context, st *store.Store, root string) (string, error) {
	if a, err := st.LatestArtifact(ctx, root, "run_config"); err != nil || a == nil {
		return "", err
	}
	cfg, err := loadConfig(ctx, st, root)
	if err != nil || !cfg.Scripted {
		return "", err
	}
	return llm.ScriptedNote(cfg.Model), nil
}

// loadConfig reads the settings a run was started with.
func loadConfig(ctx context.Context, st *store.Store, root string) (runConfig, error) {
	var cfg runConfig
	a, err := st.LatestArtifact(ctx, root, "run_config")
	if err != nil {
		return cfg, err
	}
	if a == nil {
		return cfg, fmt.Errorf("node %s is not the root of a solve run (no run_config)", root)
	}
	_, data, err := st.Artifact(ctx, a.ID)
	if err != nil {
		return cfg, err
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return cfg, fmt.Errorf("run %s: run_config: %w", root, err)
	}
	return cfg, nil
}

// FindRoot accepts a full root id or a unique prefix.
func FindRoot(ctx context.Context, st *store.Store, prefix string) (string, error) {
	ids, err := st.RootsWithPrefix(ctx, prefix)
	if err != nil {
		return "", err
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("no root node %q in %s; list runs with solve status", prefix, st.Path())
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("root %q is ambiguous (%d roots start with it); give more characters", prefix, len(ids))
}

func newEngine(st *store.Store, root string, cfg runConfig, opts Options) *engine {
	e := &engine{st: st, opts: opts, cfg: cfg, root: root, owner: store.NewID(), res: map[string]Resolver{}}
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
	entries, err := e.st.Resolvers(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, Permanent("capability_mismatch", fmt.Errorf("resolver %q is not in the registry (see solve resolvers)", id))
	}
	if e.opts.Tool == nil {
		return nil, Permanent("capability_mismatch", fmt.Errorf("resolver %q has no implementation in this process", id))
	}
	r, err := e.opts.Tool(entries[0])
	if err != nil {
		return nil, err
	}
	e.res[id] = r
	return r, nil
}

func (e *engine) progress(format string, args ...any) {
	if e.opts.Progress != nil {
		fmt.Fprintf(e.opts.Progress, "solve: "+format+"\n", args...)
	}
}

// load reads the root's live tree into the scheduler.
func (e *engine) load(ctx context.Context) error {
	e.nodes, e.queued, e.queue, e.counts = map[string]*snode{}, map[string]bool{}, nil, map[string]int{}
	tree, err := e.st.Tree(ctx, e.root)
	if err != nil {
		return err
	}
	var order []*snode
	for _, t := range tree {
		n := &snode{seq: len(order), id: t.ID, parent: t.Parent, status: t.Status, invalidated: t.Invalidated, build: t.Build, waitHire: t.WaitHire}
		e.nodes[n.id] = n
		if !n.invalidated {
			e.counts[n.status]++
		}
		order = append(order, n)
	}
	for _, n := range order {
		if p := e.nodes[n.parent]; p != nil && !n.invalidated && !n.build {
			p.children = append(p.children, n.id)
		}
	}
	deps, err := e.st.Dependencies(ctx, e.root)
	if err != nil {
		return err
	}
	for _, d := range deps {
		if na, nb := e.nodes[d.Node], e.nodes[d.DependsOn]; na != nil && nb != nil {
			na.deps = append(na.deps, d.DependsOn)
			nb.dependents = append(nb.dependents, d.Node)
		}
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
	if n.status == store.StatusResolved {
		return true
	}
	if n.status != store.StatusPending || len(n.children) == 0 {
		return false
	}
	for _, c := range n.children {
		if !e.done(c) {
			return false
		}
	}
	return true
}

// finishing: the tree is done and only Steps 12 and 13 are left, with
// the root not waiting on a capability request (a denied pre_check of
// Step 12 or 13 is a HIRE on the root: until a human answers it, the
// same pre_check would only be denied again).
func (e *engine) finishing() bool {
	return e.done(e.root) && !e.nodes[e.root].waitHire
}

func (e *engine) ready(n *snode) bool {
	if n.invalidated || n.waitHire || e.inflight[n.id] || e.queued[n.id] {
		return false
	}
	switch n.status {
	case store.StatusResolved, store.StatusInfeasible, store.StatusGated, store.StatusFailed:
		return false
	case store.StatusPending:
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

// workers is how many steps run at once: Options.Workers when given,
// else the run's stored count, else the default (1 in process,
// RemoteInFlight with remote workers).
func (e *engine) workers() int {
	switch {
	case e.opts.Workers > 0:
		return e.opts.Workers
	case e.cfg.Workers > 0:
		return e.cfg.Workers
	case e.opts.Remote != nil:
		return RemoteInFlight
	}
	return 1
}

// StoppedError is a run stopped before its end by its context (Ctrl-C,
// SIGTERM): what it was doing then is cut short, and a resume continues
// it.
type StoppedError struct {
	Root   string
	Remote bool  // continued by a resume with remote workers
	Cause  error // the context's cause
}

func (e *StoppedError) Error() string {
	how := "resuming it continues it"
	if e.Remote {
		how = "resuming it with remote workers continues it"
	}
	return fmt.Sprintf("run %s stopped before its end; %s", store.Short(e.Root), how)
}

func (e *StoppedError) Unwrap() error { return e.Cause }

// stopped is err, or a *StoppedError when err is ctx's cancellation
// (whatever operation it cut short: reading the tree, a call, waiting
// for a worker) and not a lease taken over, which has its own message.
func (e *engine) stopped(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	if err == nil || cause == nil || errors.Is(cause, store.ErrLeaseLost) || !errors.Is(err, context.Canceled) && !errors.Is(err, cause) {
		return err
	}
	return &StoppedError{Root: e.root, Remote: e.opts.Remote != nil, Cause: cause}
}

// dispatch is the dispatch loop (spec §5) with Workers parallel workers.
func (e *engine) dispatch(ctx context.Context) (*Result, error) {
	r, err := e.loop(ctx)
	return r, e.stopped(ctx, err)
}

func (e *engine) loop(ctx context.Context) (*Result, error) {
	workers := e.workers()
	if err := e.prepare(ctx); err != nil {
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
			if e.opts.Remote != nil {
				status := e.nodes[id].status
				go func() { results <- e.remoteStep(ctx, id, status) }()
			} else {
				go func() { results <- e.step(ctx, id) }()
			}
		}
		if len(e.inflight) == 0 {
			done, err := e.idle(ctx, firstErr)
			if err != nil {
				return nil, err
			}
			if done {
				break
			}
			continue
		}
		r := <-results
		delete(e.inflight, r.node)
		if r.spent != nil {
			e.addSpent(*r.spent - e.callSpend[r.node])
			e.callSpend[r.node] = *r.spent
		}
		if r.err != nil {
			if firstErr == nil {
				firstErr = r.err
			}
			continue
		}
		if err := e.settle(ctx, r); err != nil {
			return nil, err
		}
	}
	return Outcome(ctx, e.st, e.root)
}

// prepare reads what the loop schedules from: the run's goal patterns,
// the workspace, the tree, and what the run has spent so far.
func (e *engine) prepare(ctx context.Context) error {
	var err error
	if e.patterns, err = e.st.GoalPatterns(ctx, e.root); err != nil {
		return err
	}
	e.inflight = map[string]bool{}
	if err := e.syncWorkspace(ctx); err != nil {
		return err
	}
	if err := e.load(ctx); err != nil {
		return err
	}
	tb, err := e.st.TreeBudget(ctx, e.root)
	if err != nil {
		return err
	}
	e.spent, e.allowance = tb.SpentUSD, tb.AllowanceUSD
	if e.opts.Remote != nil {
		// The steps' results say what their nodes' calls cost so far;
		// the live view adds the difference (read in one go, so that the
		// run's total is the sum of the nodes').
		if e.callSpend, err = e.st.CallSpends(ctx, e.root); err != nil {
			return err
		}
		e.spent = 0
		for _, usd := range e.callSpend {
			e.spent += usd
		}
	}
	return nil
}

// idle decides what happens when no step is in flight: the first step
// error stops the run (a lost lease says so), a tree that cannot finish
// ends the loop, a done tree is finalized (done), or a subtree reopened
// by finalize is read again to continue.
func (e *engine) idle(ctx context.Context, firstErr error) (done bool, err error) {
	if firstErr != nil {
		if cause := context.Cause(ctx); errors.Is(cause, store.ErrLeaseLost) {
			return false, fmt.Errorf("run %s stopped: %w", e.root, cause)
		}
		return false, firstErr
	}
	if !e.finishing() {
		return true, nil
	}
	// Step 12 checks the assembled workspace: every merge a
	// worker recorded is in the user's.
	if err := e.syncWorkspace(ctx); err != nil {
		return false, err
	}
	finished, err := e.finalize(ctx)
	if err != nil {
		return false, err
	}
	if finished {
		return true, nil
	}
	return false, e.load(ctx)
}

// settle takes in a step that succeeded: the tree is read again when the
// step asked for it, else its result is applied; the workspace is synced
// first whenever a worker may have merged files into it.
func (e *engine) settle(ctx context.Context, r stepResult) error {
	if r.reload {
		if err := e.syncWorkspace(ctx); err != nil {
			return err
		}
		if err := e.load(ctx); err != nil {
			return err
		}
		e.live()
		return nil
	}
	if r.status == store.StatusResolved {
		// A verified leaf's files, merged by a worker.
		if err := e.syncWorkspace(ctx); err != nil {
			return err
		}
	}
	e.apply(r)
	e.live()
	return nil
}

// apply updates the scheduler with a step's result: the node's new
// status, the children it created, and what became ready. A child known
// already (the tree was read again after the step committed) is not
// added twice.
func (e *engine) apply(r stepResult) {
	n := e.nodes[r.node]
	e.setStatus(n, r.status)
	n.waitHire = r.waitHire
	var added []*snode
	for _, c := range r.children {
		if e.nodes[c.id] != nil {
			continue
		}
		c.seq = len(e.nodes)
		e.nodes[c.id] = c
		e.counts[c.status]++
		if c.build {
			n.deps = append(n.deps, c.id)
			c.dependents = append(c.dependents, n.id)
		} else {
			n.children = append(n.children, c.id)
		}
		added = append(added, c)
	}
	for _, c := range added {
		for _, d := range c.deps {
			e.nodes[d].dependents = append(e.nodes[d].dependents, c.id)
		}
	}
	for _, c := range added {
		e.recheck(c.id)
	}
	e.settled(r.node)
}

// live prints the live view line: node states and budget, from counts
// kept as nodes change (its cost does not grow with the tree).
func (e *engine) live() {
	if e.opts.Progress == nil {
		return
	}
	var parts []string
	for _, s := range store.Statuses {
		if c := e.counts[s]; c > 0 && s != store.StatusFailed {
			parts = append(parts, fmt.Sprintf("%s %d", s, c))
		}
	}
	e.moneyMu.Lock()
	spent, allowance, usage := e.spent, e.allowance, e.usage
	e.moneyMu.Unlock()
	share := ""
	if usage.PromptTokens() > 0 {
		// Rounded down, as llm.CostLine does.
		share = fmt.Sprintf(", %d%% of input from cache", int(usage.CacheReadShare()*100))
	}
	e.progress("live: %s · running %d · spent $%.4f of $%.2f%s", strings.Join(parts, ", "), len(e.inflight), spent, allowance, share)
}

// addSpent counts a settled call in the live view.
func (e *engine) addSpent(usd float64) {
	e.moneyMu.Lock()
	e.spent += usd
	e.moneyMu.Unlock()
}

// addUsage counts a settled call's tokens in the live view.
func (e *engine) addUsage(u llm.Usage) {
	e.moneyMu.Lock()
	e.usage = e.usage.Add(u)
	e.moneyMu.Unlock()
}

// setStatus moves a node in the live counts.
func (e *engine) setStatus(n *snode, status string) {
	if !n.invalidated {
		e.counts[n.status]--
		e.counts[status]++
	}
	n.status = status
}

// Outcome reports where a run stands.
func Outcome(ctx context.Context, st *store.Store, root string) (*Result, error) {
	r := &Result{RootID: root}
	tb, err := st.TreeBudget(ctx, root)
	if err != nil {
		return nil, err
	}
	r.SpentUSD, r.UnknownUSD, r.AllocatedUSD, r.ReservedUSD = tb.SpentUSD, tb.UnknownUSD, tb.AllowanceUSD, tb.ReservedUSD
	if r.LLMCalls, err = st.LLMCalls(ctx, root); err != nil {
		return nil, err
	}
	tok, err := st.Tokens(ctx, root)
	if err != nil {
		return nil, err
	}
	r.InputTokens, r.OutputTokens, r.CacheWriteTokens, r.CacheReadTokens = tok.Input, tok.Output, tok.CacheWrite, tok.CacheRead
	r.CacheReadShare = r.Usage().CacheReadShare()
	if r.CostNote, err = costNote(ctx, st, root); err != nil {
		return nil, err
	}
	if r.Nodes, err = st.LiveNodeCount(ctx, root); err != nil {
		return nil, err
	}
	if r.OpenRequests, err = st.OpenRequestCount(ctx, root); err != nil {
		return nil, err
	}
	a, err := st.LatestArtifact(ctx, root, "assembly")
	switch {
	case err != nil:
		return nil, err
	case a != nil:
		r.Outcome, r.ArtifactID = OutcomeAchieved, a.ID
		var m struct {
			SigmaSystem float64 `json:"sigma_system"`
			Summary     string  `json:"summary"`
		}
		if err := json.Unmarshal(a.Metadata, &m); err != nil {
			return nil, fmt.Errorf("run %s: assembly %s metadata: %w", root, a.ID, err)
		}
		r.SigmaSystem, r.Summary = m.SigmaSystem, m.Summary
	default:
		more, err := workLeft(ctx, st, root)
		switch {
		case err != nil:
			return nil, err
		case more:
			r.Outcome = OutcomeStopped
		case r.OpenRequests > 0:
			r.Outcome = OutcomeWaiting
		default:
			r.Outcome = OutcomeInfeasible
		}
	}
	return r, nil
}

// workLeft reports whether a resume of root would do anything: the
// scheduler, loaded from the store as a resume loads it, has a node ready
// to step, or the tree is done and only finalizing is left (engine.
// finishing). A node waiting on a capability request, the root too, is
// never work left: it moves only once `solve hire` answers. Only when
// neither holds is a run infeasible (or waiting for a human): nothing is
// left to try.
func workLeft(ctx context.Context, st *store.Store, root string) (bool, error) {
	e := &engine{st: st, root: root}
	if err := e.load(ctx); err != nil {
		return false, err
	}
	return len(e.queue) > 0 || e.finishing(), nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// retryWait is the pause before repeating a resolver call that failed
// with a retryable error.
const retryWait = 200 * time.Millisecond
