package solve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/internal/pgdb"
	"github.com/llmkernels/kernels/internal/sqlite"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/planning"
	"github.com/llmkernels/kernels/solve/resolver/claudecode"
	"github.com/llmkernels/kernels/solve/resolver/codex"
	"github.com/llmkernels/kernels/solve/resolver/mcptool"
	"github.com/llmkernels/kernels/solve/resolver/selfmodel"
	"github.com/llmkernels/kernels/solve/resolver/tool"
	"github.com/llmkernels/kernels/solve/store"
)

// Kernel is an open kernel.db (and its artifact_store/). Its methods do
// what the CLI does.
type Kernel struct {
	st *store.Store
	db string // as opened: a path, or a postgres:// URL
}

// Open opens (creating if needed) the kernel database at path.
// A file (or directory) this user cannot write is refused at once, saying
// that the read side works on it: wraps sqlite.ErrReadOnly.
func Open(ctx context.Context, path string) (*Kernel, error) {
	st, err := store.Open(ctx, path)
	if errors.Is(err, sqlite.ErrReadOnly) {
		if _, serr := os.Stat(path); serr != nil {
			return nil, fmt.Errorf("%w: run, resume, plan and hire REQUEST write the kernel database, so they need a place this user can write (give another database)", err)
		}
		return nil, fmt.Errorf("%w: the commands that only read (status, log, kg, artifacts, resolvers, the hire listing) work on it as it is; run, resume, plan and hire REQUEST write to it, so they need a database this user can write (copy it, or give another database)", err)
	}
	if err != nil {
		return nil, err
	}
	return &Kernel{st: st, db: path}, nil
}

// OpenReadOnly opens the existing kernel database at path for the read
// side (Runs, Status, Logs, Artifacts, KG, Resolvers, Requests: the
// commands that only read, `solve hire` without REQUEST too): it never
// creates or changes a file, and works where the directory cannot be
// written. A missing file is an error wrapping fs.ErrNotExist; an empty
// one wraps sqlite.ErrEmpty (which is fs.ErrNotExist too) and says so.
func OpenReadOnly(ctx context.Context, path string) (*Kernel, error) {
	st, err := store.OpenReadOnly(ctx, path)
	if errors.Is(err, sqlite.ErrEmpty) {
		return nil, fmt.Errorf("%s: %w, not a solve kernel.db: nothing has been planned or run with it; it was left unchanged", path, sqlite.ErrEmpty)
	}
	if errors.Is(err, fs.ErrNotExist) {
		if pgdb.IsURL(path) {
			return nil, fmt.Errorf("no solve kernel in PostgreSQL %s (%w): nothing has been planned or run there yet", store.Name(path), fs.ErrNotExist)
		}
		return nil, fmt.Errorf("no kernel.db at %s (%w): nothing has been planned or run here yet", path, fs.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	return &Kernel{st: st, db: path}, nil
}

// Close closes the database.
func (k *Kernel) Close() error { return k.st.Close() }

// Plan runs the planning pipeline on a goal (solve plan) and stores it in
// kernel.db; see planning.Make. A request it cannot take is an
// OptionError (CheckPlanRequest).
func (k *Kernel) Plan(ctx context.Context, client *llm.Client, req PlanRequest) (*Plan, error) {
	if err := CheckPlanRequest(req); err != nil {
		return nil, err
	}
	return planning.Make(ctx, k.st, client, req)
}

// Eval plans each goal, writes its plan files into outDir and checks them
// (solve eval); see planning.Eval.
func (k *Kernel) Eval(ctx context.Context, client *llm.Client, goals []EvalGoal, req PlanRequest, outDir string) (*EvalReport, error) {
	return planning.Eval(ctx, k.st, client, goals, req, outDir)
}

// CheckReport is the assertion framework run on a plan file (solve check).
type CheckReport struct {
	File       string      `json:"file"`
	Assertions []Assertion `json:"assertions"`
	Passed     int         `json:"passed"`
	Failed     int         `json:"failed"`
	// Undecided are the checks stopped by the time limit (solve check
	// --timeout) or left unknown by z3: neither passed nor failed.
	Undecided int `json:"undecided"`
}

// Check reads a plan file and runs the spec's assertion framework on it,
// recomputing every figure from the raw tasks; see planning.Check.
func Check(ctx context.Context, path string, o CheckOptions) (*CheckReport, error) {
	p, err := planning.Read(path)
	if err != nil {
		return nil, err
	}
	as := planning.Check(ctx, p, o)
	failed, undecided := planning.Failed(as), planning.Undecided(as)
	return &CheckReport{File: path, Assertions: as, Passed: len(as) - failed - undecided, Failed: failed, Undecided: undecided}, nil
}

// Options are how this process runs the SOLVE loop (not stored with the run).
type Options struct {
	Client *llm.Client // claude-code-0's LLM
	// Resolvers replace or add resolver implementations by id (tests,
	// benchmarks); the boot resolvers are claude-code-0 on Client,
	// codex-tools-0 and self-model-0.
	Resolvers map[string]loop.Resolver
	Progress  io.Writer // live view lines; nil = none
	In        io.Reader // the terminal for an interactive run
	Workers   int       // overrides the stored worker count when > 0 (resume)
	// Remote sends each ready node's step to `solve worker` processes
	// through the job queue in the kernel's PostgreSQL database instead
	// of running it here (loop.Options.Remote).
	Remote bool
	// Sandbox confines the commands a run starts (checks, plan steps,
	// built and hired tools).
	Sandbox Sandbox
	// Stream, when set, receives claude-code-0's answers as they stream
	// in, with the node and operation they are for.
	Stream func(node, op string, d llm.Delta)
}

// loopOptions wires the resolver implementations into the loop.
func (k *Kernel) loopOptions(o Options) loop.Options {
	cc := claudecode.New(o.Client)
	cc.OnDelta = o.Stream
	res := map[string]loop.Resolver{
		loop.SelfModelID:  selfmodel.New(k.st),
		loop.ClaudeCodeID: cc,
		loop.CodexToolsID: codex.New(o.Sandbox),
	}
	for id, r := range o.Resolvers {
		res[id] = r
	}
	return loop.Options{Resolvers: res, Progress: o.Progress, In: o.In, Workers: o.Workers, MCPUnconfined: o.Sandbox.Unconfined,
		Tool: func(e Resolver) (loop.Resolver, error) {
			if t := loop.HiredMCP(e); t != nil {
				// An MCP server's command is started by llm/mcp, outside
				// the sandbox of the commands a run starts: only a person's
				// --unconfined lets it run.
				if t.Command != "" && !o.Sandbox.Unconfined {
					return nil, loop.Permanent("confinement", fmt.Errorf("resolver %s: unconfined only: its MCP server is a command (%s), which solve cannot confine; resume the run unconfined to use it, or hire the server by its URL", e.ID, t.Command))
				}
				return mcptool.New(e, *t), nil
			}
			if cmd, _ := e.Metadata["command"].(string); cmd == "" {
				return nil, loop.Permanent("capability_mismatch", fmt.Errorf("resolver %q has no command to run in this kernel", e.ID))
			}
			return tool.New(k.st, e, o.Sandbox), nil
		}}
}

// Run starts a new SOLVE-loop run (solve run) and dispatches until the
// goal is achieved, waits for a human, or cannot move. A request it
// cannot take is an OptionError (CheckRunRequest).
func (k *Kernel) Run(ctx context.Context, req RunRequest, o Options) (*Result, error) {
	if err := CheckRunRequest(req); err != nil {
		return nil, err
	}
	lo, closeRemote, err := k.remote(ctx, o)
	if err != nil {
		return nil, err
	}
	defer closeRemote()
	req.Scripted = o.Client != nil && o.Client.Scripted
	return loop.Run(ctx, k.st, req, lo)
}

// remote is the loop's options, with the job queue when o.Remote.
func (k *Kernel) remote(ctx context.Context, o Options) (loop.Options, func(), error) {
	lo := k.loopOptions(o)
	if !o.Remote {
		return lo, func() {}, nil
	}
	if err := CheckRemoteDatabase(k.db); err != nil {
		return lo, nil, err
	}
	r, err := loop.OpenRemote(ctx, k.db)
	if err != nil {
		return lo, nil, err
	}
	lo.Remote = r
	return lo, r.Close, nil
}

// WorkerOptions are how a `solve worker` process runs.
type WorkerOptions struct {
	Steps       int           // steps run at once (at least 1)
	RescueAfter time.Duration // a step's job running longer is given to another worker (at least 5s)
	Ready       func(id string)
}

// Check refuses worker options the kernel cannot take.
func (w WorkerOptions) Check() error {
	switch {
	case w.Steps < 1:
		return option.Errorf("steps", "%d: give at least 1", w.Steps)
	case w.RescueAfter < 5*time.Second:
		return option.Errorf("rescue_after", "%s: give at least 5s", w.RescueAfter)
	}
	return nil
}

// Work runs this process as a worker of the kernel's PostgreSQL database
// (solve worker) until ctx is done; see loop.Work.
func (k *Kernel) Work(ctx context.Context, o Options, w WorkerOptions) error {
	if err := w.Check(); err != nil {
		return err
	}
	if err := CheckRemoteDatabase(k.db); err != nil {
		return err
	}
	return loop.Work(ctx, k.st, k.db, loop.WorkerOptions{Options: k.loopOptions(o), Steps: w.Steps, RescueAfter: w.RescueAfter, Ready: w.Ready})
}

// Resume continues a run (the latest unfinished one when root is "");
// root may be a unique prefix.
func (k *Kernel) Resume(ctx context.Context, root string, o Options) (*Result, error) {
	if err := CheckWorkers(o.Workers); err != nil {
		return nil, err
	}
	lo, closeRemote, err := k.remote(ctx, o)
	if err != nil {
		return nil, err
	}
	defer closeRemote()
	return loop.Resume(ctx, k.st, root, lo)
}

// CheckInvariants checks the spec §2 invariants on a run (none is nil).
func (k *Kernel) CheckInvariants(ctx context.Context, root string) ([]string, error) {
	return loop.CheckInvariants(ctx, k.st, root)
}
