package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/internal/pgtest"
)

const pagesGoal = "Write the operations handbook: one page per runbook"

// pageGoal is the goal of the handbook's i-th page.
func pageGoal(i int) string { return fmt.Sprintf("Write runbook page %d of the handbook", i) }

// pagesSteps: the root splits into n independent pages (leaves judged by
// the verifier, no workspace), then the consistency check and assembly.
func pagesSteps(n int) []step {
	var children []any
	var leaves []step
	for i := 1; i <= n; i++ {
		g := pageGoal(i)
		children = append(children, m{"ref": fmt.Sprintf("p%d", i), "goal": g, "summary": fmt.Sprintf("Runbook page %d", i), "weight": 1, "depends_on": []string{}})
		leaves = append(leaves,
			step{OpIdentify, g, 0, m{"constraints": []any{m{"type": "semantic", "domain": "docs", "title": "an operator can follow it", "rubric": "numbered steps"}}, "required_capabilities": []string{"technical_writing"}, "rationale": "a page"}},
			step{OpSelect, g, 0, m{"selected": []string{"c1"}, "rationale": "the one rule"}},
			step{OpRoute, g, 0, m{"resolver_id": "claude-code-0", "capability": "technical_writing", "rationale": "prose"}},
			step{OpResolve, g, 1, m{"summary": fmt.Sprintf("page %d", i), "text": fmt.Sprintf("1. check the alarm %d\n2. restart the service", i)}},
			step{OpVerify, g, 1, m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": 0.9, "detail": "numbered"}}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one page"}})
	}
	return append([]step{
		{OpIdentify, pagesGoal, 0, m{"constraints": []any{m{"type": "semantic", "domain": "docs", "title": "every runbook has a page", "rubric": "one page each"}}, "required_capabilities": []string{"technical_writing"}, "rationale": "docs"}},
		{OpSelect, pagesGoal, 0, m{"selected": []string{"c1"}, "rationale": "all needed"}},
		{OpRoute, pagesGoal, 0, m{"resolver_id": "claude-code-0", "capability": "technical_writing", "rationale": "an outline"}},
		{OpResolve, pagesGoal, 1, m{"summary": "outline", "text": "one page per runbook"}},
		{OpVerify, pagesGoal, 1, m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": 0.9, "detail": "covers them"}}, "is_leaf": false, "leaf_reason": "independent pages"}},
		{OpDecompose, pagesGoal, 0, m{"children": children, "rationale": "one page each"}},
		{OpConsistency, pagesGoal, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		{OpAssemble, pagesGoal, 0, m{"summary": "the handbook"}},
	}, leaves...)
}

// pgDir is a fresh directory whose commands use a fresh PostgreSQL
// database (its URL).
func pgDir(t testing.TB) (string, string) {
	t.Helper()
	dir, url := t.TempDir(), pgtest.New(t)
	pgDBs.Store(dir, url)
	t.Cleanup(func() { pgDBs.Delete(dir) })
	return dir, url
}

// syncBuffer is a process's output, read while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// worker is a `solve worker` process.
type worker struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

// startWorkers starts n workers on the PostgreSQL database url and waits
// until each takes jobs.
func startWorkers(t testing.TB, api *fakeAPI, dir, url string, n int, extra ...string) []*worker {
	t.Helper()
	var ws []*worker
	for range n {
		w := &worker{stderr: &syncBuffer{}, done: make(chan struct{})}
		w.cmd = api.command(dir, append([]string{"worker", "--db", url}, extra...)...)
		w.cmd.Stderr = w.stderr
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { w.err = w.cmd.Wait(); close(w.done) }()
		t.Cleanup(func() {
			_ = w.cmd.Process.Kill()
			<-w.done
		})
		ws = append(ws, w)
	}
	for _, w := range ws {
		waitFor(t, 60*time.Second, "a worker to take steps", func() bool { return strings.Contains(w.stderr.String(), "taking steps") }, w)
	}
	return ws
}

// waitFor polls cond until it holds or the time is up (then the workers'
// output goes into the failure).
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool, ws ...*worker) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			var out []string
			for _, w := range ws {
				out = append(out, w.stderr.String())
			}
			t.Fatalf("waited %s for %s\n%s", d, what, strings.Join(out, "\n---\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// servedTwice lists the scripted requests (operation, goal, attempt) the
// fake answered more than once: a step run twice.
func servedTwice(api *fakeAPI) []string {
	seen := map[string]int{}
	var twice []string
	for _, r := range api.api.Received() {
		if r.Status != 200 || r.Request == nil {
			continue
		}
		key := strings.SplitN(lastUserText(r.Request), "\n", 3)
		k := strings.Join(key[:min(2, len(key))], " | ")
		if seen[k]++; seen[k] == 2 {
			twice = append(twice, k)
		}
	}
	return twice
}

// One coordinator (solve run --remote) and three solve worker processes
// on one PostgreSQL database: the tree's independent pages complete; the
// worker holding page 2's resolve call (held in the fake) is SIGKILLed;
// River rescues its job after --rescue-after and another worker redoes
// the step after settling the dead attempt's reservation. The run ends in
// the same state as an uninterrupted in-process run, no request is served
// twice (no step ran twice), and the ledger is the served calls plus the
// killed call at its reservation.
func TestWorkersCompleteARunAndOneKilledMidStepIsRedoneElsewhere(t *testing.T) {
	t.Parallel()
	steps := pagesSteps(5)
	// The reference: the same tree, uninterrupted, in process.
	ref, _ := pgDir(t)
	refAPI := newFakeAPI(t, 1, steps...)
	if r := refAPI.run(t, ref, "run", pagesGoal, "--budget", "5", "--time", "1h"); r.code != 0 {
		t.Fatalf("reference run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	want := finalState(t, ref)

	dir, url := pgDir(t)
	api := newFakeAPI(t, 2, steps...)
	held := "Operation: resolve · attempt 1\\nGoal: " + pageGoal(2)
	api.setHold(func(body []byte) bool { return bytes.Contains(body, []byte(held)) })
	// --rescue-after long enough that the held call is still the victim's
	// when it is killed: its job's timeout (a tenth less) must outlast the
	// two solve status runs below on a loaded machine (at 6 s, under -race
	// in CI, the step was cut at its timeout first and settled by the
	// victim itself).
	workers := startWorkers(t, api, dir, url, 3, "--rescue-after", "25s")

	runOut, runErr, runDone := startRemoteRun(t, api, dir)
	select {
	case <-api.held:
	case err := <-runDone:
		t.Fatalf("the run ended (%v) before page 2's resolve call was made:\n%s\n%s", err, runOut.String(), runErr.String())
	case <-time.After(120 * time.Second):
		t.Fatalf("page 2's resolve call never reached the fake:\n%s", runErr.String())
	}

	// solve status names the worker holding the step: page 2's, whose
	// call the fake holds (other pages may be resolving too, their calls
	// going through).
	victim := holder(t, dir, rootFromLive(t, runErr), pageGoal(2), workers)
	text := runSolve(t, dir, "status", rootFromLive(t, runErr))
	if !strings.Contains(text.stdout, "held by workers:") || !strings.Contains(text.stdout, strconv.Itoa(victim.cmd.Process.Pid)) {
		t.Errorf("solve status does not show the holder:\n%s", text.stdout)
	}
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	api.setHold(nil)

	select {
	case err := <-runDone:
		if err != nil || !strings.Contains(runOut.String(), ": achieved") {
			t.Fatalf("run --remote: %v\n%s\n%s", err, runOut.String(), runErr.String())
		}
	case <-time.After(240 * time.Second):
		t.Fatalf("the run did not finish after the kill:\n%s", runErr.String())
	}
	root := rootOf(t, runOut.String())
	invariants(t, dir, root)
	if got := finalState(t, dir); got != want {
		t.Errorf("the run with a killed worker differs from the uninterrupted one:\n--- want\n%s\n--- got\n%s", want, got)
	}
	if twice := servedTwice(api); len(twice) > 0 {
		t.Errorf("requests served twice (a step ran twice): %v", twice)
	}
	liveSpentAgrees(t, runErr.String(), openDB(t, dir))
	// The ledger: every served call, plus the killed one at its reservation.
	calls, cost := api.served(t)
	l := ledgerOf(t, openDB(t, dir))
	if l.open != 0 || l.atHold <= 0 || l.spends != calls+1 || math.Abs(l.spent-(cost+l.atHold)) > 1e-9 {
		t.Errorf("ledger %+v; the fake served %d calls costing $%.9f", l, calls, cost)
	}
	var redone bool
	for _, w := range workers {
		if w != victim && strings.Contains(w.stderr.String(), "its worker stopped during the call") {
			redone = true
		}
	}
	if !redone {
		t.Error("no other worker settled the dead attempt's reservation before redoing the step")
	}
	// The others stop on SIGTERM with exit status 5.
	for _, w := range workers {
		if w == victim {
			continue
		}
		if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-w.done:
		case <-time.After(60 * time.Second):
			t.Fatal("a worker did not stop on SIGTERM")
		}
		if code := w.cmd.ProcessState.ExitCode(); code != cli.ExitStopped {
			t.Errorf("worker exit status %d on SIGTERM, want %d:\n%s", code, cli.ExitStopped, w.stderr.String())
		}
		// One clear line (before: "stopped by SIGTERM: stopped by SIGTERM").
		if e := w.stderr.String(); strings.Count(e, "stopped by SIGTERM") != 1 || !strings.Contains(e, "solve: stopped by SIGTERM: worker ") ||
			!strings.Contains(e, " stopped; the steps it was running go back to the queue\n") {
			t.Errorf("a worker's stop, in its words:\n%s", e)
		}
	}
}

// holder is the worker that solve status --json says holds the resolving
// step of root's node whose goal contains goal.
func holder(t *testing.T, dir, root, goal string, workers []*worker) *worker {
	t.Helper()
	st := runSolve(t, dir, "status", root, "--json")
	var status struct {
		Nodes []struct {
			ID, Goal string
		} `json:"nodes"`
		Held []struct {
			NodeID         string `json:"node_id"`
			Status, Worker string
		} `json:"held"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &status); err != nil {
		t.Fatalf("status --json: %v\n%s\n%s", err, st.stdout, st.stderr)
	}
	goals := map[string]string{}
	for _, n := range status.Nodes {
		goals[n.ID] = n.Goal
	}
	for _, h := range status.Held {
		if h.Status != "resolving" || !strings.Contains(goals[h.NodeID], goal) {
			continue
		}
		parts := strings.Split(h.Worker, "/")
		pid, _ := strconv.Atoi(parts[len(parts)-2])
		for _, w := range workers {
			if w.cmd.Process.Pid == pid {
				return w
			}
		}
	}
	t.Fatalf("solve status names no worker of ours holding the resolving step of %q:\n%s", goal, st.stdout)
	return nil
}

// workerLedger is the ledger of a run on workers: the resolver's spends
// (how many, how much), the reservations still open, and what was settled
// at its reservation (calls whose worker stopped during them).
type workerLedger struct {
	spends, open  int
	spent, atHold float64
}

func ledgerOf(t *testing.T, db *testDB) workerLedger {
	t.Helper()
	var l workerLedger
	if err := db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(amount), 0) FROM budget_ledger WHERE event_type = 'spend' AND resolver_id = 'claude-code-0'`).Scan(&l.spends, &l.spent); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT COUNT(*) FROM budget_reservations WHERE status = 'open'`).Scan(&l.open); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT COALESCE(SUM(l.amount), 0) FROM budget_ledger l JOIN logs g ON g.node_id = l.node_id
		AND g.detail->>'reservation_id' = l.reservation_id AND g.detail->>'settled_at_reservation' = 'true'`).Scan(&l.atHold); err != nil {
		t.Fatal(err)
	}
	return l
}

// liveSpentAgrees checks the coordinator's live view (stderr): its last
// line's "spent" is what the workers' steps spent, every call of the run
// but the coordinator's own consistency check and assembly after it
// (before, a coordinator on workers said $0.0000 throughout, and a resumed
// one the amount it started with).
func liveSpentAgrees(t *testing.T, stderr string, db *testDB) {
	t.Helper()
	var live float64
	found := false
	for _, l := range strings.Split(stderr, "\n") {
		if _, rest, ok := strings.Cut(l, "· spent $"); ok && strings.Contains(l, "solve: live: ") {
			if _, err := fmt.Sscanf(rest, "%f", &live); err != nil {
				t.Fatalf("live line %q: %v", l, err)
			}
			found = true
		}
	}
	var steps float64
	if err := db.QueryRow(`SELECT COALESCE(SUM(amount), 0) FROM budget_ledger WHERE event_type = 'spend' AND resolver_id IS NOT NULL
		AND description NOT IN ('check_consistency', 'assemble')`).Scan(&steps); err != nil {
		t.Fatal(err)
	}
	if !found || steps == 0 || math.Abs(live-steps) > 0.00006 {
		t.Errorf("the last live line says spent $%.4f (found %v); the steps spent $%.6f:\n%s", live, found, steps, stderr)
	}
}

// rootFromLive reads the run's root id from its live view ("run ID
// started").
func rootFromLive(t *testing.T, stderr *syncBuffer) string {
	t.Helper()
	for _, l := range strings.Split(stderr.String(), "\n") {
		if _, rest, ok := strings.Cut(l, "solve: run "); ok {
			return strings.Fields(rest)[0]
		}
	}
	t.Fatalf("no 'run ID started' line in:\n%s", stderr.String())
	return ""
}

// solve worker refuses a SQLite database (usage, exit 2) and says how it
// is used in --help; run --remote refuses SQLite the same way.
func TestWorkerRefusesSQLiteAndExplainsItself(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{{"worker", "--db", "kernel.db"}, {"worker"}, {"run", "a goal", "--remote"}} {
		r := runSolve(t, dir, args...)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "PostgreSQL") {
			t.Errorf("%v: exit %d, want %d with a word on PostgreSQL:\n%s", args, r.code, cli.ExitUsage, r.stderr)
		}
	}
	h := runSolve(t, dir, "worker", "--help")
	for _, want := range []string{"--db", "--rescue-after", "--steps", "solve run GOAL --db postgres://… --remote", "solve status", "SIGTERM"} {
		if !strings.Contains(h.stdout, want) {
			t.Errorf("solve worker --help lacks %q:\n%s", want, h.stdout)
		}
	}
}

// startRemoteRun starts solve run --remote on the pages goal in dir and
// returns its output and a channel with its end.
func startRemoteRun(t *testing.T, api *fakeAPI, dir string) (*syncBuffer, *syncBuffer, chan error) {
	t.Helper()
	return startRun(t, api.command(dir, "run", pagesGoal, "--remote", "--budget", "5", "--time", "1h"))
}

// startRun starts run (a solve command) with its output captured and
// returns the output and a channel with its end (after which
// run.ProcessState holds its exit status); the process is killed when the
// test ends.
func startRun(t *testing.T, run *exec.Cmd) (*syncBuffer, *syncBuffer, chan error) {
	t.Helper()
	var out, errb syncBuffer
	run.Stdout, run.Stderr = &out, &errb
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()
	t.Cleanup(func() { _ = run.Process.Kill() }) // (its end is read from done)
	return &out, &errb, done
}

// A worker that is alive but stuck in a call longer than --rescue-after
// allows is cut at its step's deadline (--rescue-after less the margin)
// before River could rescue its job, so the step never runs on two
// workers at once: when the run ends no request is still held open, the
// cut call is settled at its reservation, and the step's next attempt
// (on either worker) is served once.
func TestAStuckWorkerIsCutBeforeItsStepCanBeRescued(t *testing.T) {
	t.Parallel()
	dir, url := pgDir(t)
	api := newFakeAPI(t, 2, pagesSteps(2)...)
	api.holdFirst("Operation: resolve · attempt 1\\nGoal: " + pageGoal(2))
	workers := startWorkers(t, api, dir, url, 2, "--rescue-after", "5s")
	out, errb, done := startRemoteRun(t, api, dir)
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), ": achieved") {
			t.Fatalf("run --remote: %v\n%s\n%s", err, out.String(), errb.String())
		}
	case <-time.After(240 * time.Second):
		t.Fatalf("the run did not finish:\n%s", errb.String())
	}
	api.mu.Lock()
	nheld, holding := api.nheld, api.holding
	api.mu.Unlock()
	if nheld != 1 || holding != 0 {
		t.Fatalf("%d requests held, %d still open when the run ended: the stuck step was not cut before its job could be rescued", nheld, holding)
	}
	invariants(t, dir, rootOf(t, out.String()))
	if twice := servedTwice(api); len(twice) > 0 {
		t.Errorf("requests served twice (a step ran twice): %v", twice)
	}
	var cut bool
	for _, w := range workers {
		if strings.Contains(w.stderr.String(), "attempt 2") {
			cut = true
		}
	}
	if !cut {
		t.Error("no worker ran the cut step's second attempt")
	}
}

// With --workspace, the workers build each step's workspace from the
// database (the base stored when the run started, plus the merged files of
// the verified leaves so far) and merge a verified leaf's files there; the
// coordinator writes them into the user's workspace, where Step 12's go
// test ./... runs. The result is the in-process run's.
func TestWorkersBuildTheWorkspaceFromTheDatabase(t *testing.T) {
	t.Parallel()
	ref, _ := pgDir(t)
	refWS := workspace(t, ref, "example.com/textutil")
	sc := writeScript(t, ref, wideSteps()...)
	if r := runSolve(t, ref, "run", wideGoal, "--provider", "script", "--script", sc, "--workspace", refWS, "--budget", "5", "--time", "1h"); r.code != 0 {
		t.Fatalf("reference run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	stored := func(s string) string { // the stored workspace's artifacts exist only with workers
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.HasPrefix(l, "artifact workspace_") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	want := stored(finalState(t, ref))

	dir, url := pgDir(t)
	ws := workspace(t, dir, "example.com/textutil")
	api := newFakeAPI(t, 1, wideSteps()...)
	workers := startWorkers(t, api, dir, url, 2)
	r := api.run(t, dir, "run", wideGoal, "--remote", "--workspace", ws, "--budget", "5", "--time", "1h")
	if r.code != 0 || !strings.Contains(r.stdout, ": achieved") {
		t.Fatalf("run --remote: exit %d\n%s\n%s\n%s\n%s", r.code, r.stdout, r.stderr, workers[0].stderr.String(), workers[1].stderr.String())
	}
	invariants(t, dir, rootOf(t, r.stdout))
	if got := stored(finalState(t, dir)); got != want {
		t.Errorf("with workers the result differs from the in-process run:\n--- want\n%s\n--- got\n%s", want, got)
	}
	for _, p := range []string{"rev/rev.go", "upper/upper_test.go", "trim/trim.go", "dup/dup.go"} {
		if _, err := os.Stat(filepath.Join(ws, p)); err != nil {
			t.Errorf("the user's workspace lacks %s: %v", p, err)
		}
	}
	db := openDB(t, dir)
	if n := count(t, db, "SELECT COUNT(*) FROM artifacts WHERE type = 'workspace_merge'"); n != 4 {
		t.Errorf("%d merges stored, want the 4 leaves'", n)
	}
}

// solve run --remote --workers 3 keeps at most three of its steps in
// flight, however many the workers could take (one worker taking eight at
// once, eight independent pages, every model call 200 ms): the fake API
// never serves more than three calls at once. (Before, --workers was
// ignored with --remote and the coordinator kept up to 256 steps in
// flight.)
func TestWorkersCapsTheStepsInFlightOfARemoteRun(t *testing.T) {
	t.Parallel()
	dir, url := pgDir(t)
	// Two copies of each answer: a connection the two proxies in front of
	// the fake cut now and then is retried by the client, as it would be
	// against the API, after the fake has used the entry.
	api := newFakeAPI(t, 2, pagesSteps(8)...)
	calls := &inFlight{}
	api.front = slowFront(t, api.front.URL, 200*time.Millisecond, calls)
	workers := startWorkers(t, api, dir, url, 1, "--steps", "8")
	r := api.run(t, dir, "run", pagesGoal, "--remote", "--workers", "3", "--budget", "5", "--time", "1h")
	if r.code != 0 || !strings.Contains(r.stdout, ": achieved") {
		t.Fatalf("run --remote --workers 3: exit %d\n%s\n%s\n%s", r.code, r.stdout, r.stderr, workers[0].stderr.String())
	}
	// At least two: the pages ran in parallel, so the cap was what held them.
	if most := calls.most(); most > 3 || most < 2 {
		t.Errorf("at most %d calls at once, want 2 or 3 (--workers 3)", most)
	}
}
