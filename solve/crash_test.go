package solve_test

import (
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// finalState is what must not depend on crashes: the live tree (by
// goal, with status, attempts and σ), the artifacts' hashes, the number of
// resolver calls recorded and what they cost.
func finalState(t *testing.T, dir string) (string, float64) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "kernel.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
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
	// plans hold (random) ids: they are compared by their metadata instead.
	rows, err = db.Query(`SELECT type, CASE WHEN type IN ('run_config', 'assembly', 'tool_plan') THEN metadata ELSE sha256 END FROM artifacts`)
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
	var calls, spends, attempts int
	var spent float64
	if err := db.QueryRow(`SELECT (SELECT COUNT(*) FROM logs WHERE tier = 3), (SELECT COUNT(*) FROM budget_ledger WHERE event_type = 'spend' AND resolver_id IS NOT NULL),
		(SELECT COALESCE(SUM(amount), 0) FROM budget_ledger WHERE event_type = 'spend' AND resolver_id IS NOT NULL), (SELECT COUNT(*) FROM resolution_attempts)`).Scan(&calls, &spends, &spent, &attempts); err != nil {
		t.Fatal(err)
	}
	lines = append(lines, fmt.Sprintf("resolver calls %d, ledger spends %d, attempts %d", calls, spends, attempts))
	slices.Sort(lines)
	return strings.Join(lines, "\n"), spent
}

func TestRunKilledAtTwentyRandomPointsResumesToTheUninterruptedResult(t *testing.T) {
	ref := t.TempDir()
	ws := workspace(t, ref, "example.com/stats")
	sc := writeScript(t, ref, statsSteps()...)
	r := runSolve(t, ref, "run", statsGoal, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "5", "--time", "30m")
	if r.code != 0 {
		t.Fatalf("uninterrupted run: exit %d\n%s", r.code, r.stderr)
	}
	want, wantSpent := finalState(t, ref)

	dir := t.TempDir()
	ws = workspace(t, dir, "example.com/stats")
	sc = writeScript(t, dir, statsSteps()...)
	rng := rand.New(rand.NewPCG(7, 7))
	kills, first := 0, true
	for {
		args := []string{"resume", "--provider", "script", "--script", sc}
		if first {
			args = []string{"run", statsGoal, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "5", "--time", "30m"}
		}
		cmd := exec.Command(solveBin, args...)
		cmd.Dir = dir
		if kills < 20 {
			cmd.Env = append(cmd.Environ(), fmt.Sprintf("SOLVE_CRASH_AFTER=%d", 1+rng.IntN(3)))
		}
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok && ee.Sys().(syscall.WaitStatus).Signaled() {
			kills++
			first = false
			if root := latestRoot(t, dir); root != "" {
				invariants(t, dir, root)
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
	got, gotSpent := finalState(t, dir)
	if got != want {
		t.Errorf("after 20 kills the final state differs from the uninterrupted run:\n--- want\n%s\n--- got\n%s", want, got)
	}
	// go test's timing in a feedback trace changes a prompt by a few
	// characters, so costs agree to a tiny tolerance, not exactly.
	if math.Abs(gotSpent-wantSpent) > 1e-4 {
		t.Errorf("spent $%.6f after kills, $%.6f uninterrupted", gotSpent, wantSpent)
	}
}

func latestRoot(t *testing.T, dir string) string {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "kernel.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var root string
	_ = db.QueryRow("SELECT id FROM nodes WHERE parent_id IS NULL ORDER BY rowid DESC LIMIT 1").Scan(&root)
	return root
}
