package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/internal/pgdb"
	"github.com/llmkernels/kernels/solve/store"
)

// DefaultRescueAfter is how long a step's job may run before River gives
// it to another worker (its worker is presumed dead).
const DefaultRescueAfter = 30 * time.Minute

// WorkerOptions are how a `solve worker` process runs.
type WorkerOptions struct {
	Options // the resolvers, the tool factory and the progress lines
	// Steps is how many steps this process runs at once (default 1).
	Steps int
	// RescueAfter is River's RescueStuckJobsAfter: a step's job running
	// longer is presumed abandoned and given to another worker. Each step
	// runs under a deadline of RescueAfter less rescueMargin. Default
	// DefaultRescueAfter.
	RescueAfter time.Duration
	// Ready, when set, is called once the worker is taking jobs, with its
	// id (host/pid/…, as solve status shows it).
	Ready func(id string)
}

// rescueMargin is the time between a step's deadline and its job's
// rescue: a tenth of RescueAfter, at least 2 s.
func rescueMargin(after time.Duration) time.Duration { return max(after/10, 2*time.Second) }

// Work runs a worker: it claims the node steps that coordinators enqueue
// in the PostgreSQL database at url (whose kernel store st is) and runs
// them, until ctx is done; then it cancels the steps it is running (their
// jobs go back to the queue for another worker) and returns a
// *WorkerStopped.
func Work(ctx context.Context, st *store.Store, url string, o WorkerOptions) error {
	if o.Steps == 0 {
		o.Steps = 1
	}
	if o.Steps < 0 {
		return option.Errorf("steps", "%d: give at least 1", o.Steps)
	}
	if o.RescueAfter == 0 {
		o.RescueAfter = DefaultRescueAfter
	}
	if o.RescueAfter < 5*time.Second {
		return option.Errorf("rescue_after", "%s: give at least 5s", o.RescueAfter)
	}
	if err := Boot(ctx, st); err != nil {
		return err
	}
	r, err := OpenRemote(ctx, url)
	if err != nil {
		return err
	}
	defer r.Close()
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	id := fmt.Sprintf("%s/%d/%s", host, os.Getpid(), uuid.NewString()[:8])
	w := &stepWorker{st: st, opts: o, pool: r.pool}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, w); err != nil {
		return fmt.Errorf("register the step worker: %w", err)
	}
	var logs = os.Stderr
	client, err := river.NewClient(riverpgxv5.New(r.pool), &river.Config{
		ID:                   id,
		Workers:              workers,
		Queues:               map[string]river.QueueConfig{StepQueue: {MaxWorkers: o.Steps}},
		RescueStuckJobsAfter: o.RescueAfter,
		JobTimeout:           o.RescueAfter - rescueMargin(o.RescueAfter),
		FetchCooldown:        10 * time.Millisecond,
		FetchPollInterval:    500 * time.Millisecond,
		Logger:               quietLogger(logs),
	})
	if err != nil {
		return fmt.Errorf("make the worker's job client: %w", err)
	}
	// Started on a context that ctx does not cancel: stopping is done
	// below, cancelling the running steps so their jobs are retried.
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start the worker: %w", err)
	}
	if o.Ready != nil {
		o.Ready(id)
	}
	w.progress("worker %s taking steps (%d at a time, rescue after %s)", id, o.Steps, o.RescueAfter)
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stopped := &WorkerStopped{ID: id, Cause: context.Cause(ctx)}
	if err := client.StopAndCancel(stopCtx); err != nil {
		return errors.Join(stopped, fmt.Errorf("stop the worker: %w", err))
	}
	return stopped
}

// WorkerStopped is how Work ends: its context was done.
type WorkerStopped struct {
	ID    string // host/pid/…
	Cause error  // the context's cause
}

func (e *WorkerStopped) Error() string {
	return "worker " + e.ID + " stopped; the steps it was running go back to the queue"
}

func (e *WorkerStopped) Unwrap() error { return e.Cause }

// stepWorker runs StepArgs jobs.
type stepWorker struct {
	river.WorkerDefaults[StepArgs]
	st   *store.Store
	opts WorkerOptions
	pool *pgxpool.Pool // the job queue's
}

func (w *stepWorker) progress(format string, args ...any) {
	if w.opts.Progress != nil {
		fmt.Fprintf(w.opts.Progress, "solve: "+format+"\n", args...)
	}
}

// engine is an engine for one step of root: the run's settings, and its
// workspace built from the database in a new directory (cleanup removes
// it).
func (w *stepWorker) engine(ctx context.Context, root string) (e *engine, cleanup func(), err error) {
	cfg, err := loadConfig(ctx, w.st, root)
	if err != nil {
		return nil, nil, err
	}
	if err := remoteUsable(cfg); err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", store.Short(root), err)
	}
	cleanup = func() {}
	if cfg.Workspace != "" {
		dir, err := materialize(ctx, w.st, root)
		if err != nil {
			return nil, nil, err
		}
		cfg.Workspace = dir
		cleanup = func() { _ = os.RemoveAll(dir) }
	}
	e = newEngine(w.st, root, cfg, w.opts.Options)
	// The step's writes and holds are the coordinator's run's: fenced by
	// its lease (store.HoldsLease), as its own steps would be. A run no
	// coordinator holds moves no further; a coordinator that took the run
	// over fences the step's next attempt.
	lease, err := w.st.LeaseOwner(ctx, root)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	if lease == "" {
		cleanup()
		return nil, nil, &ResumeError{Root: root, Remote: true, Err: fmt.Errorf("run %s: %w (no coordinator holds it)", store.Short(root), store.ErrLeaseLost)}
	}
	e.owner, e.stored = lease, cfg.Workspace != ""
	if e.patterns, err = w.st.GoalPatterns(ctx, root); err != nil {
		cleanup()
		return nil, nil, err
	}
	return e, cleanup, nil
}

// Work runs one node step.
func (w *stepWorker) Work(ctx context.Context, job *river.Job[StepArgs]) error {
	a := job.Args
	n, err := w.st.Node(ctx, a.Node)
	if err != nil {
		return err // the database: River retries
	}
	if n.Invalidated || n.Status != a.Status {
		// An earlier attempt of this job committed the step before its
		// worker died, or the node left the live tree since.
		w.progress("Node %s: %s step already done (now %s%s)", store.Short(a.Node), a.Status, n.Status, map[bool]string{true: ", invalidated"}[n.Invalidated])
		return w.complete(ctx, job, stepResult{reload: true})
	}
	if job.Attempt > 1 {
		// The calls the dead attempt left open: settled at what they
		// reserved before the step is redone (resume does the same).
		open, err := w.st.SettleOpenOf(ctx, a.Root, func(o store.OpenReservation) bool { return o.Node == a.Node })
		if err != nil {
			return err
		}
		for _, o := range open {
			msg := settledMessage(o, "its worker stopped during the call")
			w.progress("%s", msg)
			if err := w.st.Log(ctx, 1, o.Node, msg, nil); err != nil {
				return err
			}
		}
	}
	e, cleanup, err := w.engine(ctx, a.Root)
	if errors.Is(err, store.ErrLeaseLost) || pgdb.Unavailable(err) {
		return err // tried again later: a coordinator may resume the run, the database come back
	}
	if err != nil {
		return river.JobCancel(err)
	}
	defer cleanup()
	w.progress("Node %s: %s step (job %d, attempt %d)", store.Short(a.Node), a.Status, job.ID, job.Attempt)
	r := e.step(ctx, a.Node)
	if r.err != nil {
		if ctx.Err() != nil || errors.Is(r.err, store.ErrLeaseLost) || pgdb.Unavailable(r.err) {
			// Cut at the step's deadline, this worker is stopping, the
			// run changed coordinator, or the database could not be
			// reached (a call whose cost it could not record is settled
			// at its reservation by the next attempt): the job goes back
			// to the queue and the step is redone from the node's last
			// committed state. In process such an error stops the run
			// for resume; here it would cancel the job for good.
			return r.err
		}
		// A step that fails in process stops the run; so does this one:
		// the coordinator reads the error from the cancelled job.
		return river.JobCancel(r.err)
	}
	return w.complete(ctx, job, r)
}

// complete records the step's result r as its job's output, with what
// the node's calls have cost, and marks the job completed at once, under
// the node's step lock (store.StepDue): River's own completer batches
// completions and writes them up to 250 ms later, a wait every step would
// add to the run. Should the early completion fail (the database does not
// answer), River's completer still records it, output included.
func (w *stepWorker) complete(ctx context.Context, job *river.Job[StepArgs], r stepResult) error {
	o := outputOf(r)
	spent, err := w.st.CallSpend(ctx, job.Args.Node)
	if err != nil {
		return err // retried: the next attempt finds the step done
	}
	o.SpentUSD = &spent
	if err := river.RecordOutput(ctx, o); err != nil {
		return river.JobCancel(err)
	}
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		return nil
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // a no-op after Commit
	if store.LockStep(ctx, tx, job.Args.Node) != nil {
		return nil
	}
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err == nil {
		_ = tx.Commit(ctx) // failed, River's completer completes the job
	}
	return nil
}
