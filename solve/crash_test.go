package solve_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
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
// reserved, labelled as such, before it goes on; the ledger then holds
// every served call plus that one at its reservation, never less.
func TestKillDuringACallLeavesAReservationThatResumeSettles(t *testing.T) {
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
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		api.setHold(nil)
		db := openDB(t, dir)
		var held float64
		if err := db.QueryRow(`SELECT amount FROM budget_reservations WHERE status = 'open' AND operation = 'resolve'`).Scan(&held); err != nil || held <= 0 {
			t.Fatalf("after kill -9 during the call: open reservation $%v, %v", held, err)
		}
		invariants(t, dir, latestRoot(t, dir))
		r := api.run(t, dir, "resume")
		if r.code != 0 || !strings.Contains(r.stdout, "achieved") || !strings.Contains(r.stderr, "SETTLED claude-code-0 resolve at its reservation") {
			t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		invariants(t, dir, latestRoot(t, dir))
		calls, cost := api.served(t)
		var spends int
		var spent, atHold float64
		if err := db.QueryRow(`SELECT COUNT(*), SUM(amount) FROM budget_ledger WHERE event_type = 'spend' AND resolver_id = 'claude-code-0'`).Scan(&spends, &spent); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`SELECT settled_amount FROM budget_reservations WHERE amount = ? AND operation = 'resolve' AND settled_amount = amount`, held).Scan(&atHold); err != nil {
			t.Fatalf("the held call's reservation was not settled at its amount: %v", err)
		}
		if spends != calls+1 || math.Abs(spent-(cost+atHold)) > 1e-9 {
			t.Errorf("ledger: %d spends, $%.9f; the fake served %d calls, $%.9f, plus the one in flight settled at $%.9f", spends, spent, calls, cost, atHold)
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
	if testing.Short() {
		t.Skip("runs of the binary killed at random")
	}
	rng := rand.New(rand.NewPCG(14, 9))
	kills := 0
	for run := 1; kills < 15; run++ {
		if run > 20 {
			t.Fatalf("only %d kills in 20 runs", kills)
		}
		kills += killAtRandom(t, rng, 15-kills)
	}
}

// killAtRandom runs the stats goal in a fresh directory, killing it up to
// most times at random moments and resuming, and returns the kills made.
func killAtRandom(t *testing.T, rng *rand.Rand, most int) int {
	t.Helper()
	dir := t.TempDir()
	ws := workspace(t, dir, "example.com/stats")
	api := newFakeAPI(t, 25, statsSteps()...)
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
			args = []string{"run", statsGoal, "--workspace", ws, "--budget", "5", "--time", "30m"}
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
			case <-time.After(time.Duration(20+rng.IntN(1200)) * time.Millisecond):
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
