package main_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// finalState is what must not depend on crashes: the live tree (by
// goal, with status, attempts and σ), the artifacts' hashes and the
// attempts. (What was paid depends on them: a call whose spend was
// recorded but whose step was not committed is made again on resume, and
// paid again; ledgerMatches checks that each is in the ledger.)
func finalState(t *testing.T, dir string) string {
	t.Helper()
	db := openDB(t, dir)
	var lines []string
	rows, err := db.Query(`SELECT goal_summary, status, attempt_count, COALESCE(sigma_v, -1), COALESCE(sigma_path, -1) FROM nodes WHERE invalidated_at IS NULL`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var g, s string
		var a int
		var sv, sp float64
		if err := rows.Scan(&g, &s, &a, &sv, &sp); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("node %q %s attempts=%d σ=%.3f path=%.3f", g, s, a, sv, sp))
	}
	rows.Close()
	// run_config holds the workspace path; the assembly manifest and tool
	// plans hold (random) ids: they are compared by their metadata
	// instead; a code output's metadata names the files it found.
	rows, err = db.Query(`SELECT type, CASE WHEN type IN ('run_config', 'assembly', 'tool_plan') THEN CAST(metadata AS TEXT) ELSE sha256 END FROM artifacts`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var typ, sha string
		if err := rows.Scan(&typ, &sha); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, "artifact "+typ+" "+sha)
	}
	rows.Close()
	lines = append(lines, fmt.Sprintf("attempts %d", count(t, db, "SELECT COUNT(*) FROM resolution_attempts")))
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// paid is the run's paid calls in the ledger: how many, and their cost.
func paid(t *testing.T, dir string) (int, float64) {
	t.Helper()
	db := openDB(t, dir)
	var n int
	var cost float64
	if err := db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(amount), 0) FROM budget_ledger WHERE event_type = 'spend' AND resolver_id IS NOT NULL`).Scan(&n, &cost); err != nil {
		t.Fatal(err)
	}
	return n, cost
}

// resumePaysNothing resumes root with the script sc, checks that it ends
// with exit status code and the outcome (": waiting_for_human", say), and
// that no paid call was added to the ledger; when says when, in messages.
func resumePaysNothing(t *testing.T, dir, root, sc string, code int, outcome, when string) result {
	t.Helper()
	calls, spent := paid(t, dir)
	res := runSolve(t, dir, "resume", root, "--provider", "script", "--script", sc)
	if res.code != code || !strings.Contains(res.stdout, outcome) {
		t.Fatalf("resume %s: exit %d, want %d and %q\n%s\n%s", when, res.code, code, outcome, res.stdout, res.stderr)
	}
	if c, s := paid(t, dir); c != calls || s != spent {
		t.Errorf("the resume %s paid for %d more calls ($%.4f)\n%s", when, c-calls, s-spent, res.stderr)
	}
	return res
}

// ledgerMatches checks that claude-code-0's spends in the ledger are the
// calls the fake served: as many, costing the same. Calls cut off by a
// kill are settled at their reservation on resume; settledAtHold says
// how much of the ledger those are (they match no served call exactly).
func ledgerMatches(t *testing.T, dir string, api *fakeAPI, when string) {
	t.Helper()
	db := openDB(t, dir)
	var spends, open int
	var spent, atHold float64
	if err := db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(amount), 0) FROM budget_ledger WHERE event_type = 'spend' AND resolver_id = 'claude-code-0'`).Scan(&spends, &spent); err != nil {
		t.Fatal(err)
	}
	// (A kernel.db without reservations, from an earlier solve, has none open.)
	if db.pg || count(t, db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'budget_reservations'") == 1 {
		if err := db.QueryRow(`SELECT COUNT(*) FROM budget_reservations WHERE status = 'open'`).Scan(&open); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`SELECT COALESCE(SUM(l.amount), 0) FROM budget_ledger l JOIN logs g ON g.node_id = l.node_id
			AND g.detail->>'reservation_id' = l.reservation_id AND CAST(g.detail->>'settled_at_reservation' AS TEXT) IN ('true', '1')`).Scan(&atHold); err != nil {
			t.Fatal(err)
		}
	}
	calls, cost := api.served(t)
	if open != 0 || spends != calls || math.Abs(spent-cost) > 1e-9 || atHold != 0 {
		t.Fatalf("%s: the ledger records %d claude-code-0 spends costing $%.9f (%d reservations open, $%.9f settled at their reservation); the fake served %d calls costing $%.9f",
			when, spends, spent, open, atHold, calls, cost)
	}
}

// kill -9 at 20 random points (after a call's spend is recorded, after a
// step's commit), resuming each time: the invariants hold after every
// kill, the ledger equals what the fake API served after every resume
// (no paid call is lost, none counted twice), and the final tree is the
// uninterrupted run's.
func TestRunKilledAtTwentyRandomPointsResumesToTheUninterruptedResult(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, dir string) {
		ref := likeDir(t, dir)
		ws := workspace(t, ref, "example.com/stats")
		refAPI := newFakeAPI(t, 1, statsSteps()...)
		r := refAPI.run(t, ref, "run", statsGoal, "--workspace", ws, "--budget", "5", "--time", "30m")
		if r.code != 0 {
			t.Fatalf("uninterrupted run: exit %d\n%s", r.code, r.stderr)
		}
		want := finalState(t, ref)
		ledgerMatches(t, ref, refAPI, "uninterrupted")

		ws = workspace(t, dir, "example.com/stats")
		api := newFakeAPI(t, 25, statsSteps()...)
		rng := rand.New(rand.NewPCG(7, 7))
		kills, first := 0, true
		for {
			args := []string{"resume"}
			if first {
				args = []string{"run", statsGoal, "--workspace", ws, "--budget", "5", "--time", "30m"}
			}
			cmd := api.command(dir, args...)
			if kills < 20 {
				cmd.Env = append(cmd.Env, fmt.Sprintf("SOLVE_CRASH_AFTER=%d", 1+rng.IntN(3)))
			}
			out, err := cmd.CombinedOutput()
			if ee, ok := err.(*exec.ExitError); ok && ee.Sys().(syscall.WaitStatus).Signaled() {
				kills++
				first = false
				if root := latestRoot(t, dir); root != "" {
					invariants(t, dir, root)
					ledgerMatches(t, dir, api, fmt.Sprintf("after kill %d", kills))
				}
				continue
			}
			if err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
			if !strings.Contains(string(out), "achieved") {
				t.Fatalf("final process did not achieve the goal:\n%s", out)
			}
			break
		}
		if kills != 20 {
			t.Fatalf("killed %d times, want 20", kills)
		}
		invariants(t, dir, latestRoot(t, dir))
		ledgerMatches(t, dir, api, "after the last resume")
		if got := finalState(t, dir); got != want {
			t.Errorf("after 20 kills the final state differs from the uninterrupted run:\n--- want\n%s\n--- got\n%s", want, got)
		}
	})
}

// kill -9 while a call is in flight (the fake holds the request): the
// call's reservation stays open, and resume settles it at the amount
// reserved, an unknown outcome, before it goes on; the ledger then holds
// every served call plus that one at its reservation, never less. Its
// wall time is the time it ran (its heartbeat), not its hold, and the
// seconds the process was dead are not counted (before, a kill cost the
// call's whole 30 s hold). The run's report and status show the unknown
// outcome apart from what was billed for certain.
func TestKillDuringACallLeavesAReservationThatResumeSettles(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, dir string) {
		ws := workspace(t, dir, "example.com/stats")
		api := newFakeAPI(t, 2, statsSteps()...)
		api.setHold(func(body []byte) bool {
			return bytes.Contains(body, []byte("Operation: resolve · attempt 1\\nGoal: Add Mean("))
		})
		cmd := api.command(dir, "run", statsGoal, "--workspace", ws, "--budget", "5", "--time", "30m")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-api.held:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatal("the Mean resolve call never reached the fake")
		}
		const ran, dead = 2500 * time.Millisecond, 4 * time.Second
		time.Sleep(ran)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		api.setHold(nil)
		db := openDB(t, dir)
		var held, heldTime, alive float64
		if err := db.QueryRow(`SELECT amount, time_amount, alive_seconds FROM budget_reservations WHERE status = 'open' AND operation = 'resolve'`).Scan(&held, &heldTime, &alive); err != nil || held <= 0 {
			t.Fatalf("after kill -9 during the call: open reservation $%v, %v", held, err)
		}
		if alive < 1 || alive > ran.Seconds() {
			t.Errorf("the call ran %s before the kill; its last heartbeat says %.2fs", ran, alive)
		}
		invariants(t, dir, latestRoot(t, dir))
		time.Sleep(dead)
		r := api.run(t, dir, "resume")
		if r.code != 0 || !strings.Contains(r.stdout, "achieved") || !strings.Contains(r.stderr, "SETTLED claude-code-0 resolve at its reservation") ||
			!strings.Contains(r.stderr, "an unknown outcome") {
			t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		invariants(t, dir, latestRoot(t, dir))
		calls, cost := api.served(t)
		var spends int
		var spent, atHold, secs, unknown float64
		if err := db.QueryRow(`SELECT COUNT(*), SUM(amount) FROM budget_ledger WHERE event_type = 'spend' AND resolver_id = 'claude-code-0'`).Scan(&spends, &spent); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`SELECT r.settled_amount, r.settled_time, l.unknown_amount FROM budget_reservations r JOIN budget_ledger l ON l.reservation_id = r.id
			WHERE r.amount = ? AND r.operation = 'resolve' AND r.settled_amount = r.amount`, held).Scan(&atHold, &secs, &unknown); err != nil {
			t.Fatalf("the held call's reservation was not settled at its amount: %v", err)
		}
		if spends != calls+1 || math.Abs(spent-(cost+atHold)) > 1e-9 {
			t.Errorf("ledger: %d spends, $%.9f; the fake served %d calls, $%.9f, plus the one in flight settled at $%.9f", spends, spent, calls, cost, atHold)
		}
		// Up to its last heartbeat (at least one, at 1 s) and the interval
		// after it: at most what it ran and a second, never the dead time.
		if secs < 2 || secs > ran.Seconds()+1 || secs >= heldTime {
			t.Errorf("the call cut off after %s (then %s dead) was settled at %.2fs of its %.0fs hold", ran, dead, secs, heldTime)
		}
		if unknown != atHold {
			t.Errorf("the call settled at its hold $%.6f is marked unknown for $%.6f", atHold, unknown)
		}
		root := latestRoot(t, dir)
		_, total := paid(t, dir)
		billed := fmt.Sprintf("$%.4f billed for certain, $%.4f of unknown outcome", total-atHold, atHold)
		if !strings.Contains(r.stdout, billed) {
			t.Errorf("the run's summary does not say %q:\n%s", billed, r.stdout)
		}
		st := runSolve(t, dir, "status", root)
		if !strings.Contains(st.stdout, billed) || !strings.Contains(st.stdout, fmt.Sprintf("($%.4f unknown outcome)", atHold)) {
			t.Errorf("status does not show the unknown outcome:\n%s", st.stdout)
		}
		rep := runSolve(t, dir, "report", root, "--out", filepath.Join(dir, "report.json"))
		md, err := os.ReadFile(filepath.Join(dir, "report.md"))
		if rep.code != 0 || err != nil || !strings.Contains(string(md), billed) {
			t.Errorf("the report does not show the unknown outcome (exit %d, %v):\n%s", rep.code, err, md)
		}
	})
}

func latestRoot(t *testing.T, dir string) string {
	t.Helper()
	db := openDB(t, dir)
	var root string
	_ = db.QueryRow("SELECT id FROM nodes WHERE parent_id IS NULL ORDER BY rowid DESC LIMIT 1").Scan(&root)
	return root
}

// kill -9 at random moments (a timer, not a crash point: in a call, in a
// transaction, in a check), over fresh runs until 15 kills were made,
// resuming each run until it ends. After every kill the invariants hold
// and every call the fake served has its reservation: settled as it cost,
// or at what it held (never less than it cost), or still open for the
// resume to settle; no ledger spend lacks a served call but those settled
// at their hold. After each run's last resume the goal is achieved and no
// reservation is open.
func TestRunKilledAtRandomMomentsKeepsEveryServedCall(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs of the binary killed at random")
	}
	rng := rand.New(rand.NewPCG(14, 9))
	kills := 0
	for run := 1; kills < 15; run++ {
		if run > 20 {
			t.Fatalf("only %d kills in 20 runs", kills)
		}
		kills += killAtRandom(t, rng, killRun{dir: t.TempDir(), most: 15 - kills, money: "5", time: "30m"})
	}
}

// A run killed many times at random moments (kill -9 of the binary: in a
// model call, a check, a commit) and resumed each time, after a pause, ends
// as the uninterrupted run does: achieved, with the same live nodes,
// attempts, σ and artifacts, on a wall-time budget the uninterrupted run
// uses a fraction of. A call cut off costs the time it ran (its
// heartbeat), not its hold (30 s for a model call, 60 s for a check), and
// the seconds between a kill and the resume cost nothing: before, sixteen
// kills used the run's time up and it ended waiting for a human.
func TestARunKilledManyTimesEndsAsTheUninterruptedOne(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs of the binary killed at random")
	}
	eachStore(t, func(t *testing.T, dir string) {
		// A model answer takes a second: most kills land in a call. Each
		// call cut off in flight is paid at its hold (up to $0.40 here): the
		// budget allows sixteen.
		const money, budget, delay = "50", "6m", time.Second
		ref := likeDir(t, dir)
		refAPI := newFakeAPI(t, 1, statsSteps()...)
		refAPI.setDelay(delay)
		r := refAPI.run(t, ref, "run", statsGoal, "--workspace", workspace(t, ref, "example.com/stats"), "--budget", money, "--time", budget)
		if r.code != 0 || !strings.Contains(r.stdout, "achieved") {
			t.Fatalf("uninterrupted run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		want := finalState(t, ref)
		rng := rand.New(rand.NewPCG(21, 3))
		kills := killAtRandom(t, rng, killRun{dir: dir, most: 16, money: money, time: budget, delay: delay, pause: 2 * time.Second, within: 1500 * time.Millisecond})
		if kills < 16 {
			t.Fatalf("the run ended after %d kills; the test needs 16", kills)
		}
		if got := finalState(t, dir); got != want {
			t.Errorf("after %d kills the final state differs from the uninterrupted run's:\n--- want\n%s\n--- got\n%s", kills, want, got)
		}
		var unknown, secs float64
		if err := openDB(t, dir).QueryRow(`SELECT COALESCE(SUM(unknown_amount), 0), COALESCE(SUM(time_amount), 0) FROM budget_ledger
			WHERE event_type = 'spend' AND resolver_id IS NOT NULL`).Scan(&unknown, &secs); err != nil {
			t.Fatal(err)
		}
		t.Logf("%d kills; the calls took %.1fs, $%.4f of unknown outcome", kills, secs, unknown)
	})
}

// killRun is how killAtRandom runs the stats goal.
type killRun struct {
	dir   string        // a fresh directory
	most  int           // kills at most
	money string        // --budget
	time  string        // --time
	delay time.Duration // how long each model answer takes
	pause time.Duration // the longest a killed run stays dead before its resume
	// within is the longest a process runs before its kill (0: 1.2 s).
	within time.Duration
}

// killAtRandom runs the stats goal in k.dir, killing it up to k.most
// times at random moments and resuming, and returns the kills made. The
// run must end achieved.
func killAtRandom(t *testing.T, rng *rand.Rand, k killRun) int {
	t.Helper()
	dir, most := k.dir, k.most
	ws := workspace(t, dir, "example.com/stats")
	api := newFakeAPI(t, 25, statsSteps()...)
	api.setDelay(k.delay)
	within := k.within
	if within == 0 {
		within = 1200 * time.Millisecond
	}
	check := func(when string) (open int) {
		db := openDB(t, dir)
		var spends, atHoldN int
		var spent, held, atHold float64
		if err := db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(amount), 0) FROM budget_ledger WHERE event_type = 'spend' AND resolver_id = 'claude-code-0'`).Scan(&spends, &spent); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(amount), 0) FROM budget_reservations WHERE status = 'open' AND resolver_id = 'claude-code-0'`).Scan(&open, &held); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(l.amount), 0) FROM budget_ledger l JOIN logs g ON g.node_id = l.node_id
			AND g.detail->>'reservation_id' = l.reservation_id AND CAST(g.detail->>'settled_at_reservation' AS TEXT) IN ('true', '1') WHERE l.resolver_id = 'claude-code-0'`).Scan(&atHoldN, &atHold); err != nil {
			t.Fatal(err)
		}
		calls, cost := api.served(t)
		if calls > spends+open || spends-atHoldN > calls || spent+held < cost-1e-9 {
			t.Fatalf("%s: the fake served %d calls ($%.9f); the ledger has %d spends ($%.9f, %d of them settled at their hold), %d reservations open ($%.9f)",
				when, calls, cost, spends, spent, atHoldN, open, held)
		}
		t.Logf("%s: %d calls served, %d spends (%d at their hold), %d open", when, calls, spends, atHoldN, open)
		return open
	}
	kills := 0
	for {
		args := []string{"resume"}
		if latestRoot(t, dir) == "" {
			args = []string{"run", statsGoal, "--workspace", ws, "--budget", k.money, "--time", k.time}
		}
		cmd := api.command(dir, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		if kills < most {
			select {
			case err = <-done:
			case <-time.After(20*time.Millisecond + time.Duration(rng.Int64N(int64(within)))):
				_ = cmd.Process.Signal(syscall.SIGKILL)
				if err = <-done; !killed(err) {
					break // it ended on its own just before the kill
				}
				kills++
				root := latestRoot(t, dir)
				if root != "" {
					invariants(t, dir, root)
					check(fmt.Sprintf("after kill %d", kills))
				}
				// Killed after it had stored the assembly, the goal achieved (while
				// writing its report, say): there is nothing to resume.
				if root != "" && count(t, openDB(t, dir), "SELECT COUNT(*) FROM artifacts WHERE node_id = ? AND type = 'assembly'", root) > 0 {
					break
				}
				if k.pause > 0 {
					time.Sleep(time.Duration(rng.Int64N(int64(k.pause))))
				}
				continue
			}
		} else {
			err = <-done
		}
		if killed(err) {
			break // the kill came after the goal was recorded achieved
		}
		if err != nil {
			t.Fatalf("%v after %d kills: %v\n%s", args, kills, err, out.String())
		}
		if !strings.Contains(out.String(), "achieved") {
			t.Fatalf("the final process did not achieve the goal:\n%s", out.String())
		}
		break
	}
	invariants(t, dir, latestRoot(t, dir))
	if open := check("after the last resume"); open != 0 {
		t.Errorf("%d reservations open after a completed run", open)
	}
	return kills
}

// killed reports whether a process's Wait error says SIGKILL ended it.
func killed(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}
