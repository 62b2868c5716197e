package loop

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/internal/pgtest"
	"github.com/llmkernels/kernels/solve/store"
)

// The worker count is a value or unset: a value caps the steps in flight,
// remote ones too (before, --remote ignored a stored --workers 3 and kept
// 256 steps in flight); unset, it is 1 in process and RemoteInFlight
// with remote workers; Options.Workers (solve resume --workers) overrides
// both.
func TestTheWorkerCountIsAValueOrUnset(t *testing.T) {
	remote := &Remote{}
	for _, c := range []struct {
		stored, given int
		remote        *Remote
		want          int
	}{
		{0, 0, nil, 1},
		{4, 0, nil, 4},
		{0, 0, remote, RemoteInFlight},
		{3, 0, remote, 3},
		{1, 0, remote, 1},
		{3, 2, remote, 2},
		{0, 5, nil, 5},
	} {
		e := newEngine(nil, "", runConfig{Workers: c.stored}, Options{Workers: c.given, Remote: c.remote})
		if got := e.workers(); got != c.want {
			t.Errorf("stored %d, given %d, remote %v: %d steps at once, want %d", c.stored, c.given, c.remote != nil, got, c.want)
		}
	}
}

// identifyOnly answers the identify operation, for one step.
type identifyOnly struct{}

func (identifyOnly) Estimate(ctx context.Context, c *Call) (float64, float64) { return 0.001, 1 }

func (identifyOnly) Resolve(ctx context.Context, c *Call) (*Output, error) {
	a, _ := json.Marshal(map[string]any{"constraints": []any{map[string]any{"type": "semantic", "domain": "quality", "title": "complete", "rubric": "nothing missing"}},
		"required_capabilities": []string{"generate_code"}, "rationale": "test"})
	return &Output{Answer: a, Cost: 0.001}, nil
}

// newRemoteRun is a run on a fresh PostgreSQL database as Run starts one
// (its root, settings and budget), held by a coordinator engine with the
// job queue, and the database's URL. The engine's scheduler is not loaded.
func newRemoteRun(t *testing.T) (*engine, string) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.New(t)
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := Boot(ctx, st); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRemote(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	cfg := runConfig{Goal: "g", TMax: 3, BudgetUSD: 1, TimeSeconds: 3600, Workers: 1}
	e := newEngine(st, store.NewID(), cfg, Options{Remote: r})
	if err := st.Write(ctx, func(tx *store.Tx) error {
		if _, err := tx.InsertNode(ctx, store.NewNode{ID: e.root, Goal: "g", Summary: "g", TauLocal: store.TauLocal, TauGlobal: store.TauGlobal, MaxAttempts: 3}); err != nil {
			return err
		}
		content, err := store.JSONText(cfg)
		if err != nil {
			return err
		}
		if _, err := tx.PutArtifact(ctx, store.NewArtifact{Node: e.root, Type: "run_config", Format: "json", Content: []byte(content)}); err != nil {
			return err
		}
		return tx.WriteLedger(ctx, store.LedgerEntry{Node: e.root, Event: store.Allocate, Amount: 1, Time: 3600, Description: "root budget"})
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.release)
	return e, url
}

// stepJobs counts the jobs of node's step from status.
func stepJobs(t *testing.T, e *engine, node, status string) int {
	t.Helper()
	var n int
	if err := e.opts.Remote.pool.QueryRow(context.Background(), `SELECT COUNT(*) FROM river_job WHERE args->>'node' = $1 AND args->>'status' = $2`,
		node, status).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The window of a resumed coordinator: it read the tree while the stopped
// coordinator's job of a step was still running; the job finished (its
// step committed, the job completed) before the resumed coordinator sent
// that step. The step is no longer due, so it is not enqueued a second
// time: the coordinator reads the tree again instead. (Before, a second
// job of the same (node, status) was inserted, River's uniqueness covering
// unfinished jobs only.) What the finished job spent is still counted in
// the live view. While the first job is unfinished, sending the step
// finds it instead of inserting another.
func TestAStepWhoseJobFinishedBeforeItWasSentIsNotEnqueuedAgain(t *testing.T) {
	ctx := context.Background()
	e, url := newRemoteRun(t)
	r := e.opts.Remote
	// The stopped coordinator's job, found by a second send while no
	// worker runs it.
	first, err := r.enqueue(ctx, StepArgs{Root: e.root, Node: e.root, Status: store.StatusPending})
	if err != nil || first == nil {
		t.Fatalf("enqueue: %v, %v", first, err)
	}
	again, err := r.enqueue(ctx, StepArgs{Root: e.root, Node: e.root, Status: store.StatusPending})
	if err != nil || again == nil || again.ID != first.ID {
		t.Fatalf("the second send of an unfinished step: job %v (%v), want job %d", again, err, first.ID)
	}
	// A worker runs it to the end.
	wctx, stop := context.WithCancel(ctx)
	worked := make(chan error, 1)
	go func() {
		worked <- Work(wctx, e.st, url, WorkerOptions{Options: Options{Resolvers: map[string]Resolver{ClaudeCodeID: identifyOnly{}}}, RescueAfter: time.Minute})
	}()
	for end := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		job, err := r.client.JobGet(ctx, first.ID)
		if err != nil {
			t.Fatal(err)
		}
		if job.State == "completed" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the step's job is %s after a minute", job.State)
		}
	}
	stop()
	<-worked
	// The resumed coordinator, having read the root pending, sends its step.
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res := e.remoteStep(sctx, e.root, store.StatusPending)
	if res.err != nil || !res.reload || res.spent == nil || *res.spent != 0.001 {
		t.Errorf("the step sent after its job finished: %+v, want the tree read again and the identify call's $0.001 counted", res)
	}
	if n := stepJobs(t, e, e.root, store.StatusPending); n != 1 {
		t.Errorf("%d jobs of the root's pending step, want 1", n)
	}
}

// A transition that meets a serialization failure (another transaction
// changed the node's row since this one's snapshot) is run again by
// Store.Write and succeeds: nothing was refused, so the flow log records
// no REJECTED transition (before: one for every retried conflict, 60 in a
// 51-node run on workers).
func TestARetriedSerializationFailureLogsNoRejectedTransition(t *testing.T) {
	ctx := context.Background()
	e, _ := newRemoteRun(t)
	n, err := e.st.Node(ctx, e.root)
	if err != nil {
		t.Fatal(err)
	}
	s := &stepCtx{e: e, st: e.st, n: n}
	tries := 0
	err = e.st.Write(ctx, func(tx *store.Tx) error {
		tries++
		if _, err := tx.Node(ctx, e.root); err != nil { // the transaction's snapshot
			return err
		}
		if tries == 1 {
			if err := e.st.Write(ctx, func(other *store.Tx) error { return other.SetConstraintSets(ctx, e.root, nil, nil, nil) }); err != nil {
				return err
			}
		}
		return s.move(ctx, tx, store.StatusPending, store.StatusIdentifying)
	})
	if err != nil || tries != 2 {
		t.Fatalf("the transition: %v after %d tries, want success on the second (a serialization failure first)", err, tries)
	}
	logs, err := e.st.Logs(ctx, 1, e.root)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		if strings.Contains(l.Summary, "REJECTED") {
			t.Errorf("logged %q for a transition that succeeded", l.Summary)
		}
	}
	// A refused transition is still logged.
	err = e.st.Write(ctx, func(tx *store.Tx) error { return s.move(ctx, tx, store.StatusPending, store.StatusIdentifying) })
	if logs, _ = e.st.Logs(ctx, 1, e.root); err == nil || len(logs) == 0 || !strings.Contains(logs[len(logs)-1].Summary, "REJECTED transition pending → identifying_constraints") {
		t.Errorf("a refused transition: %v, logs %v", err, logs)
	}
}
