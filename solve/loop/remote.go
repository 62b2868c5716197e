package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/llmkernels/kernels/internal/pgdb"
	"github.com/llmkernels/kernels/solve/store"
)

// Remote steps (solve run --remote, solve worker): with a PostgreSQL store
// the coordinator does not run a ready node's step itself; it enqueues it
// as a River job (github.com/riverqueue/river) and the `solve worker`
// processes, on any number of machines, claim the jobs and run them with
// the same step code (steps.go), so a step's rules — reservation before
// each paid call, deadlines, verification, isolation — are unchanged.
//
//   - The job is "advance node N of run R from status S" (StepArgs). A
//     worker that finds the node no longer in S (a previous attempt of the
//     job committed the step before its worker died) completes the job
//     without running anything: a step's effects are committed in one
//     transaction, so a step is done once or not at all.
//   - Jobs are unique by (root, node, status) while not finished, so a
//     coordinator that restarts (solve resume --remote) finds the jobs it
//     enqueued before and waits for them instead of enqueuing twice. A job
//     that finishes after the new coordinator read the tree but before it
//     sends the step is no longer unfinished: so the step is enqueued in a
//     transaction that takes the node's step lock (which the worker holds
//     while it completes the job) and checks that the node is still in S
//     (store.StepDue); if not, the coordinator reads the tree again.
//   - A worker killed mid-step holds its job until River's rescuer (on the
//     elected leader among the workers) gives it back after
//     --rescue-after; another worker then redoes the step from the node's
//     last committed state, first settling at their reserved amount the
//     reservations the dead attempt left open on the node (as resume does
//     for a killed process), so the ledger is never below what was served.
//   - No step runs twice at once: a worker runs each step under a deadline
//     of --rescue-after less a margin (rescueMargin), so a live but slow
//     worker has been cancelled — and its commits refused with its context
//     — before its job can be rescued. A step that needs longer is cut and
//     retried; raise --rescue-after for long resolver calls. Every worker
//     of a database should be given the same --rescue-after (River's
//     rescuer runs on whichever worker is the leader).
//   - A worker's step is the coordinator's: its commits and holds are
//     fenced by the run's lease (store.HoldsLease) under the owner that
//     holds it when the step begins, so a run no coordinator holds moves
//     no further, and a step fenced out by a takeover is tried again
//     under the new coordinator.
//   - The worker records the step's result as the job's output
//     (stepOutput: the node's new status, the children it made, what the
//     node's calls have cost) and completes the job at once. The
//     coordinator polls its jobs' states (remotePoll) and, when one
//     finishes, applies that result to its view of the tree as the
//     single-machine loop does (its cost per step does not grow with the
//     tree), reading the tree again only when the loop would; a job
//     cancelled by its worker carries the step's error, which stops the
//     run as it would in process (resumable).
//   - A step that cannot reach the database (pgdb.Unavailable) is retried,
//     not cancelled: a cancelled job would stop the run for good, and the
//     database coming back is enough to go on. The coordinator stops when
//     it cannot read its jobs, saying to resume once the database answers.
//   - River's tables are created by its own migrations (rivermigrate,
//     store.MigrateJobQueue) when a coordinator or a worker opens the
//     database, idempotently; never on SQLite.

// StepQueue is the River queue of node steps.
const StepQueue = "solve_steps"

// remotePoll is how often the coordinator looks at the state of the jobs
// it waits for.
const remotePoll = 50 * time.Millisecond

// stepMaxAttempts is how often River runs a step's job before it gives up
// (a worker killed, or a step cut at its deadline, each count one).
const stepMaxAttempts = 10

// StepArgs is one node step as a River job.
type StepArgs struct {
	Root   string `json:"root" river:"unique"`
	Node   string `json:"node" river:"unique"`
	Status string `json:"status" river:"unique"` // the node's status when the step was enqueued
}

// Kind is the River job kind.
func (StepArgs) Kind() string { return "solve_step" }

// InsertOpts: the steps' queue, and one live job per (root, node, status).
func (a StepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: StepQueue, MaxAttempts: stepMaxAttempts, Tags: []string{"root-" + a.Root},
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
			rivertype.JobStateRunning, rivertype.JobStateScheduled}}}
}

// Remote is a connection to the River queue in the run's PostgreSQL
// database.
type Remote struct {
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
	name   string // the database's URL without its password, for messages
}

// OpenRemote connects to the PostgreSQL database at url, brings River's
// tables up to date and returns a client that enqueues steps and reads
// their jobs (it runs none).
func OpenRemote(ctx context.Context, url string) (*Remote, error) {
	return openRemote(ctx, url, false)
}

// openRemote is OpenRemote; readOnly opens read-only sessions and leaves
// River's tables as they are.
func openRemote(ctx context.Context, url string, readOnly bool) (*Remote, error) {
	if !pgdb.IsURL(url) {
		return nil, fmt.Errorf("remote steps need a PostgreSQL database (postgres://…), not %s: a SQLite file is one machine's", url)
	}
	if err := pgdb.CheckURL(url); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, pgdb.ParseError(url, err)
	}
	if readOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to the job queue's database %s: %w", pgdb.Redact(url), pgdb.OneLine(err, cfg.ConnConfig.Password))
	}
	if !readOnly {
		if err := store.MigrateJobQueue(ctx, pool); err != nil {
			pool.Close()
			return nil, err
		}
	}
	// FetchCooldown is also how often an insert may notify the workers
	// (River's default, 100 ms, left a step enqueued soon after another
	// waiting for the workers' next poll).
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: quietLogger(io.Discard), FetchCooldown: time.Millisecond})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("make the job queue's client: %w", err)
	}
	return &Remote{pool: pool, client: client, name: pgdb.Redact(url)}, nil
}

// Close closes the connection.
func (r *Remote) Close() { r.pool.Close() }

// quietLogger logs River's warnings and errors only.
func quietLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// stepOutput is a step's result as its job records it (River's job
// output), so that the coordinator applies it to its view of the tree as
// the single-machine loop applies a step's result, and reads the tree
// again only when the loop would (Reload: a gating backtrack, a node
// invalidated under its step, a job that found its step done already).
type stepOutput struct {
	Status   string      `json:"status,omitempty"`
	WaitHire bool        `json:"wait_hire,omitempty"`
	Reload   bool        `json:"reload,omitempty"`
	Children []stepChild `json:"children,omitempty"`
	// SpentUSD is what the node's calls have cost, all its steps
	// included (store.Conn.CallSpend), for the coordinator's live view.
	SpentUSD *float64 `json:"spent_usd,omitempty"`
}

// stepChild is a node the step created under its node, pending.
type stepChild struct {
	ID    string   `json:"id"`
	Deps  []string `json:"deps,omitempty"`
	Build bool     `json:"build,omitempty"`
}

// outputOf is r as its job records it.
func outputOf(r stepResult) stepOutput {
	o := stepOutput{Status: r.status, WaitHire: r.waitHire, Reload: r.reload}
	for _, c := range r.children {
		o.Children = append(o.Children, stepChild{ID: c.id, Deps: c.deps, Build: c.build})
	}
	return o
}

// result is the stepResult of node id's step that o records; an output
// that records nothing (a worker of an older solve) reads the tree again.
func (o stepOutput) result(id string) stepResult {
	r := stepResult{node: id, status: o.Status, waitHire: o.WaitHire, reload: o.Reload || o.Status == "", spent: o.SpentUSD}
	for _, c := range o.Children {
		r.children = append(r.children, &snode{id: c.ID, parent: id, status: store.StatusPending, deps: c.Deps, build: c.Build})
	}
	return r
}

// remoteStep enqueues node id's step and waits for a worker to finish it;
// its result is the one the worker recorded. A step no longer due (its
// node moved on since the scheduler read it) is not enqueued: the
// scheduler reads the tree again.
func (e *engine) remoteStep(ctx context.Context, id, status string) stepResult {
	job, err := e.opts.Remote.enqueue(ctx, StepArgs{Root: e.root, Node: id, Status: status})
	if err != nil {
		return stepResult{node: id, err: fmt.Errorf("node %s: enqueue its %s step: %w", store.Short(id), status, e.unanswered(err))}
	}
	if job == nil {
		// What the job that moved the node on spent is counted too.
		spent, err := e.st.CallSpend(ctx, id)
		if err != nil {
			return stepResult{node: id, err: err}
		}
		return stepResult{node: id, reload: true, spent: &spent}
	}
	t := time.NewTicker(remotePoll)
	defer t.Stop()
	for {
		switch job.State {
		case rivertype.JobStateCompleted:
			var o stepOutput
			if out := job.Output(); out != nil {
				if err := json.Unmarshal(out, &o); err != nil {
					return stepResult{node: id, err: fmt.Errorf("node %s: its %s step (job %d) recorded %s: %w", store.Short(id), status, job.ID, out, err)}
				}
			}
			return o.result(id)
		case rivertype.JobStateCancelled, rivertype.JobStateDiscarded:
			msg := "no error recorded"
			if n := len(job.Errors); n > 0 {
				msg = job.Errors[n-1].Error
			}
			return stepResult{node: id, err: fmt.Errorf("node %s: its %s step (job %d, %s after %d attempts): %s", store.Short(id), status, job.ID, job.State, job.Attempt, msg)}
		}
		select {
		case <-ctx.Done():
			return stepResult{node: id, err: context.Cause(ctx)}
		case <-t.C:
		}
		if job, err = e.opts.Remote.client.JobGet(ctx, job.ID); err != nil {
			if errors.Is(err, river.ErrNotFound) {
				err = fmt.Errorf("job deleted from the queue")
			}
			return stepResult{node: id, err: fmt.Errorf("node %s: wait for its %s step: %w", store.Short(id), status, e.unanswered(err))}
		}
	}
}

// unanswered says, of an error that is the database going away, that the
// run is continued once it answers: a step already sent goes on, or is
// retried, on its worker; one not sent yet is sent by the resume. The
// outage may meet the coordinator as it sends a step or as it waits.
func (e *engine) unanswered(err error) error {
	if !pgdb.Unavailable(err) {
		return err
	}
	return &ResumeError{Root: e.root, Remote: true, When: "once it answers",
		Err: fmt.Errorf("PostgreSQL %s does not answer: %w", e.opts.Remote.name, pgdb.OneLine(err, ""))}
}

// enqueue inserts the step's job, or finds the step's unfinished job,
// unless the step is no longer due (store.StepDue): then it returns no
// job. The check and the insert are one transaction.
func (r *Remote) enqueue(ctx context.Context, a StepArgs) (*rivertype.JobRow, error) {
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	// A no-op after Commit; before it, the error being returned is the news.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if due, err := store.StepDue(ctx, tx, a.Node, a.Status); err != nil || !due {
		return nil, err
	}
	res, err := r.client.InsertTx(ctx, tx, a, nil)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	return res.Job, nil
}

// Holder is a step a worker holds: the node, its status, and the worker
// (its River client id: host/pid/…) with the attempt and since when.
type Holder struct {
	Node, Status, Worker string
	Attempt              int
	Since                time.Time
}

// Holders lists the steps of root that workers hold in the PostgreSQL
// database at url, reading only (none when no run there has used
// workers).
func Holders(ctx context.Context, url, root string) ([]Holder, error) {
	r, err := openRemote(ctx, url, true)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Holders(ctx, root)
}

// Holders lists the steps of root that workers hold now.
func (r *Remote) Holders(ctx context.Context, root string) ([]Holder, error) {
	res, err := r.client.JobList(ctx, river.NewJobListParams().Kinds(StepArgs{}.Kind()).TagsAll("root-"+root).
		States(rivertype.JobStateRunning).First(10000))
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok && pe.Code == "42P01" {
		return nil, nil // undefined_table: River's tables were never made here
	}
	if err != nil {
		return nil, fmt.Errorf("list the running steps of %s: %w", root, err)
	}
	var hs []Holder
	for _, j := range res.Jobs {
		var a StepArgs
		if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
			return nil, fmt.Errorf("job %d: %w", j.ID, err)
		}
		h := Holder{Node: a.Node, Status: a.Status, Attempt: j.Attempt}
		if n := len(j.AttemptedBy); n > 0 {
			h.Worker = j.AttemptedBy[n-1]
		}
		if j.AttemptedAt != nil {
			h.Since = *j.AttemptedAt
		}
		hs = append(hs, h)
	}
	return hs, nil
}
