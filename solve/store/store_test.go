package store

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// dialects are the two stores every store test runs on.
var dialects = []string{"sqlite", "postgres"}

// openAt opens a fresh store of the dialect: kernel.db in a temporary
// directory, or a new PostgreSQL database (pgtest).
func openAt(t *testing.T, dialect string) *Store {
	t.Helper()
	db := filepath.Join(t.TempDir(), "kernel.db")
	if dialect == "postgres" {
		db = pgtest.New(t)
	}
	st, err := Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// eachStore runs f on a fresh store of each dialect, as subtests.
func eachStore(t *testing.T, f func(t *testing.T, st *Store)) {
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) { f(t, openAt(t, d)) })
	}
}

// tamper replaces the stored content named sha.
func tamper(t *testing.T, st *Store, sha string, content []byte) {
	t.Helper()
	if b, ok := st.blobs.(*fileBlobs); ok {
		if err := os.WriteFile(filepath.Join(b.dir, sha), content, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := st.db.Exec("UPDATE artifact_blobs SET content = $1 WHERE sha256 = $2", content, sha); err != nil {
		t.Fatal(err)
	}
}

func node(t *testing.T, st *Store, n NewNode) string {
	t.Helper()
	if n.Goal == "" {
		n.Goal, n.Summary = "a goal", "a goal"
	}
	id, err := st.InsertNode(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func status(t *testing.T, st *Store, id string) string {
	t.Helper()
	n, err := st.Node(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return n.Status
}

// The node transition guard: every move of the spec's table is allowed,
// any other is refused and leaves the node where it was, and a move from
// a status the node is not in is refused too.
func TestTransitionGuardAllowsOnlyTheSpecTable(t *testing.T) {
	eachStore(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		spec := map[[2]string]bool{}
		for from, tos := range map[string][]string{
			"pending": {"identifying_constraints"}, "identifying_constraints": {"selecting_constraints"},
			"selecting_constraints": {"selecting_resolver"}, "selecting_resolver": {"resolving", "infeasible"},
			"resolving": {"verifying"}, "verifying": {"decomposing", "resolved", "gated", "selecting_resolver", "resolving", "pending"},
			"decomposing": {"pending"}, "gated": {"pending"},
		} {
			for _, to := range tos {
				spec[[2]string{from, to}] = true
			}
		}
		for _, from := range Statuses {
			for _, to := range Statuses {
				want := spec[[2]string{from, to}] || to == StatusFailed
				id := node(t, st, NewNode{})
				if _, err := st.exec(ctx, "UPDATE nodes SET status = ? WHERE id = ?", from, id); err != nil {
					t.Fatal(err)
				}
				err := st.Transition(ctx, id, from, to)
				if got := err == nil; got != want {
					t.Errorf("%s → %s: allowed %v, want %v (%v)", from, to, got, want, err)
				}
				wantStatus := from
				if want {
					wantStatus = to
				}
				if s := status(t, st, id); s != wantStatus {
					t.Errorf("%s → %s left the node %s, want %s", from, to, s, wantStatus)
				}
			}
		}
		id := node(t, st, NewNode{})
		err := st.Transition(ctx, id, StatusIdentifying, StatusSelectingCons)
		if err == nil || !strings.Contains(err.Error(), "not in status identifying_constraints") || status(t, st, id) != StatusPending {
			t.Errorf("a move from a status the node is not in: %v, status %s", err, status(t, st, id))
		}
	})
}

func TestEndInfeasibleFromAnyWaitingStatus(t *testing.T) {
	eachStore(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		for _, from := range []string{StatusSelectingResolve, StatusVerifying, StatusResolving} {
			id := node(t, st, NewNode{})
			if _, err := st.exec(ctx, "UPDATE nodes SET status = ? WHERE id = ?", from, id); err != nil {
				t.Fatal(err)
			}
			if err := st.EndInfeasible(ctx, id, from); err != nil || status(t, st, id) != StatusInfeasible {
				t.Errorf("from %s: %v, status %s", from, err, status(t, st, id))
			}
		}
	})
}

// A failing statement says which operation failed.
func TestErrorsNameTheOperation(t *testing.T) {
	eachStore(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		for _, tc := range []struct {
			err  error
			want string
		}{
			{func() error { _, err := st.Node(ctx, "nope"); return err }(), "load node nope: sql: no rows"},
			{func() error { _, err := st.Attempt(ctx, "nope"); return err }(), "load attempt nope"},
			{func() error { _, err := st.ArtifactInfo(ctx, "nope"); return err }(), "load artifact nope"},
			{func() error { _, err := st.Constraints(ctx, []string{"nope"}); return err }(), "load constraint nope"},
			{st.WriteLedger(ctx, LedgerEntry{Node: "n", Event: "borrow"}), `ledger: unknown event "borrow"`},
			{st.AddDependency(ctx, "a", "b"), "node a: add dependency on b: "},
		} {
			if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", tc.err, tc.want)
			}
		}
	})
}

func TestWriteRollsBackEverythingOnError(t *testing.T) {
	eachStore(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		boom := errors.New("boom")
		var id string
		err := st.Write(ctx, func(tx *Tx) error {
			var err error
			if id, err = tx.InsertNode(ctx, NewNode{Goal: "g", Summary: "g"}); err != nil {
				return err
			}
			if err := tx.Log(ctx, 1, id, "inserted", nil); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Write = %v", err)
		}
		if _, err := st.Node(ctx, id); err == nil {
			t.Error("the node of a rolled-back transaction exists")
		}
		if logs, _ := st.Logs(ctx, 0, ""); len(logs) != 0 {
			t.Errorf("%d logs after a rollback", len(logs))
		}
	})
}

func TestLedgerIsAuthoritativeAndTheCacheFollows(t *testing.T) {
	eachStore(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		id := node(t, st, NewNode{})
		for _, e := range []LedgerEntry{{Node: id, Event: Allocate, Amount: 2, Time: 60}, {Node: id, Event: Spend, Amount: 0.5, Time: 10, Resolver: "r"},
			{Node: id, Event: Refund, Amount: 0.25, Time: 5}, {Node: id, Event: Spend, Amount: 1, Time: 1}} {
			if err := st.WriteLedger(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		b, err := st.Balance(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if b != (Balance{Allocated: 2, Spent: 1.25, TimeAllocated: 60, TimeSpent: 6}) || b.RemainingCost() != 0.75 || b.RemainingTime() != 54 {
			t.Errorf("balance %+v", b)
		}
		n, _ := st.Node(ctx, id)
		if n.BudgetAllocated != 2 || n.BudgetSpent != 1.25 || n.TimeAllocated != 60 || n.TimeSpent != 6 {
			t.Errorf("cache %+v", n)
		}
		tb, err := st.TreeBudget(ctx, id)
		if err != nil || tb.SpentUSD != 0.5 || tb.AllowanceUSD != 2 {
			t.Errorf("tree budget: resolver spend %v (only rows with a resolver), allowance %v, %v", tb.SpentUSD, tb.AllowanceUSD, err)
		}
	})
}

func TestAttemptsKeepTheNodeInStep(t *testing.T) {
	eachStore(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		id := node(t, st, NewNode{})
		var ids []string
		for i := 0; i < 2; i++ {
			a, index, err := st.AddAttempt(ctx, NewAttempt{Node: id, Resolver: "r", Verdict: UNSAT, Verification: map[string]any{"i": i}, FailureMode: "failure:x"})
			if err != nil || index != i+1 {
				t.Fatalf("attempt %d: index %d, %v", i+1, index, err)
			}
			ids = append(ids, a)
		}
		n, _ := st.Node(ctx, id)
		if n.AttemptCount != 2 || n.LastAttempt != ids[1] {
			t.Errorf("attempt_count %d, last %s; want 2, %s", n.AttemptCount, n.LastAttempt, ids[1])
		}
		atts, err := st.Attempts(ctx, id)
		if err != nil || len(atts) != 2 || atts[0].ID != ids[0] || atts[0].Verdict == "" || atts[0].FailureMode != "failure:x" {
			t.Errorf("attempts %+v, %v", atts, err)
		}
		// An attempt without a verdict has no verification, verdict or σ yet.
		a, _, err := st.AddAttempt(ctx, NewAttempt{Node: id, Index: 3, Resolver: "r", Output: "o"})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := st.Attempt(ctx, a)
		if got.Verdict != "" || got.Verification != "" || got.SigmaV != nil || got.Output != "o" {
			t.Errorf("an unverified attempt: %+v", got)
		}
	})
}

func TestArtifactContentIsCheckedAgainstItsHash(t *testing.T) {
	eachStore(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		id := node(t, st, NewNode{})
		a, err := st.PutArtifact(ctx, NewArtifact{Node: id, Type: "doc", Format: "text", Content: []byte("hello")})
		if err != nil {
			t.Fatal(err)
		}
		info, data, err := st.Artifact(ctx, a)
		if ok, err2 := st.BlobExists(ctx, info.SHA256); err != nil || string(data) != "hello" || info.Sigma != nil || !ok || err2 != nil {
			t.Fatalf("artifact %+v %q %v %v", info, data, err, err2)
		}
		tamper(t, st, info.SHA256, []byte("tampered"))
		if _, _, err := st.Artifact(ctx, a); err == nil || !strings.Contains(err.Error(), "does not hash to its name") {
			t.Errorf("a tampered blob: %v", err)
		}
	})
}

func TestInvalidateSubtreeKeepsHistoryAndDropsDependencies(t *testing.T) {
	eachStore(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		root := node(t, st, NewNode{})
		a := node(t, st, NewNode{Parent: root, Root: root})
		b := node(t, st, NewNode{Parent: root, Root: root})
		aa := node(t, st, NewNode{Parent: a, Root: root})
		if err := st.AddDependency(ctx, b, a); err != nil {
			t.Fatal(err)
		}
		ids, err := st.InvalidateSubtree(ctx, root)
		slices.Sort(ids)
		want := []string{a, b, aa}
		slices.Sort(want)
		if err != nil || !slices.Equal(ids, want) {
			t.Fatalf("invalidated %v, want %v (%v)", ids, want, err)
		}
		deps, _ := st.Dependencies(ctx, root)
		n, _ := st.Node(ctx, aa)
		if len(deps) != 0 || !n.Invalidated || n.Status != StatusPending {
			t.Errorf("deps %v, node %+v", deps, n)
		}
		if live, _ := st.LiveNodeCount(ctx, root); live != 1 {
			t.Errorf("%d live nodes, want the root", live)
		}
	})
}

// A value JSON cannot hold (a NaN σ, an infinite cost) is an error, never
// a panic: JSONText says so, and a write that carries it fails and
// leaves nothing behind.
func TestJSONTextRefusesNaNAndInfinity(t *testing.T) {
	for _, v := range []any{math.NaN(), math.Inf(1), map[string]any{"sigma": math.Inf(-1)}} {
		if s, err := JSONText(v); err == nil || s != "" || !strings.Contains(err.Error(), "unsupported value") {
			t.Errorf("JSONText(%v) = %q, %v", v, s, err)
		}
	}
	if s, err := JSONText(map[string]float64{"sigma": 0.5}); err != nil || s != `{"sigma":0.5}` {
		t.Errorf("JSONText of a plain map: %q %v", s, err)
	}
	eachStore(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		n := node(t, st, NewNode{})
		before, err := st.Logs(ctx, 0, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Log(ctx, 2, n, "σ", map[string]any{"sigma": math.NaN()}); err == nil || !strings.Contains(err.Error(), "unsupported value") {
			t.Fatalf("a log with a NaN σ: %v", err)
		}
		if after, _ := st.Logs(ctx, 0, n); len(after) != len(before) {
			t.Errorf("%d log rows, %d before the refused write", len(after), len(before))
		}
	})
}
