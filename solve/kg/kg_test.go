package kg

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/solve/store"
)

func TestPatternIDIgnoresCaseAndSpacing(t *testing.T) {
	if PatternID("Convert  people.csv to JSON") != PatternID("convert people.csv to json") || PatternID("a") == PatternID("b") {
		t.Error("pattern ids")
	}
	if !strings.HasPrefix(PatternID("x"), "goal_pattern:") {
		t.Error(PatternID("x"))
	}
}

func TestSimilarityIsJaccardOfWords(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want float64
	}{{"convert people.csv to json", "Convert cities.csv to JSON.", 0.6}, {"a b", "c d", 0}, {"", "", 0}, {"same words", "Same, words", 1}} {
		if got := Similarity(tc.a, tc.b); got != tc.want {
			t.Errorf("Similarity(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// The boot-time queries see what earlier runs recorded: similar goals,
// the resolvers' outcomes on them, and failure modes.
func TestQueryFindsWhatEarlierRunsRecorded(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kernel.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	old, now := "Convert people.csv to json in the workspace", "Convert cities.csv to json in the workspace"
	err = st.Write(ctx, func(tx *store.Tx) error {
		if err := RecordPattern(ctx, &tx.Conn, old, "run1", []string{"generate_code"}, nil); err != nil {
			return err
		}
		for _, e := range [][3]string{{"resolver:claude-code-0", "failed_on", PatternID(old)}, {"attempt:1", "tried_for", PatternID(old)}, {"attempt:1", "failed_because", "failure:quoting"}} {
			for _, id := range []string{e[0], e[2]} {
				typ := map[bool]string{true: "resolver", false: "x"}[strings.HasPrefix(id, "resolver:")]
				if strings.HasPrefix(id, "attempt:") {
					typ = "resolution_attempt"
				} else if strings.HasPrefix(id, "failure:") {
					typ = "failure_mode"
				} else if strings.HasPrefix(id, "goal_pattern:") {
					continue
				}
				if err := tx.EnsureKGNode(ctx, id, typ, strings.SplitN(id, ":", 2)[1], nil); err != nil {
					return err
				}
			}
			if err := tx.AddEdge(ctx, e[0], e[1], e[2], map[string]any{"sigma_v": 0.4}); err != nil {
				return err
			}
		}
		others, err := tx.GoalPatterns(ctx, "run2")
		if err != nil {
			return err
		}
		return RecordPattern(ctx, &tx.Conn, now, "run2", []string{"csv_to_json"}, others)
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Query(ctx, &st.Conn, PatternID(now))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Similar) != 1 || c.Similar[0].Label != old || len(c.Outcomes) != 1 || c.Outcomes[0].Failures != 1 || len(c.Failures) != 1 || c.Failures[0].Label != "quoting" {
		t.Fatalf("context %+v", c)
	}
	r := c.Render(now)
	for _, want := range []string{`[RESOLUTION HISTORY for goal: "Convert cities.csv to json in the workspace"]`, "similarity 0.75", "claude-code-0: 0 succeeded, 1 failed (best sigma_v=0.40)", "quoting (1 occurrences)", "[END RESOLUTION HISTORY]"} {
		if !strings.Contains(r, want) {
			t.Errorf("render lacks %q:\n%s", want, r)
		}
	}
	if caps, err := RequiredCapabilities(ctx, &st.Conn, now); err != nil || len(caps) != 1 || caps[0] != "csv_to_json" {
		t.Errorf("required %v %v", caps, err)
	}
	empty, err := Query(ctx, &st.Conn, PatternID("nothing like it"))
	if err != nil || !empty.Empty() || empty.Render("x") != "" {
		t.Errorf("an unknown goal: %+v %v", empty, err)
	}
}

func TestConstraintSignatureLeavesOutBudgetDomains(t *testing.T) {
	sig := ConstraintSignature([]store.Constraint{{Type: "semantic", Domain: "quality"}, {Type: "logic", Domain: "cost"}, {Type: "logic", Domain: "software"}, {Type: "semantic", Domain: "quality"}})
	if len(sig) != 2 || sig[0] != [2]string{"logic", "software"} || sig[1] != [2]string{"semantic", "quality"} {
		t.Errorf("signature %v", sig)
	}
	if s := ConstraintSignature(nil); s == nil || len(s) != 0 {
		t.Errorf("empty signature %v", s)
	}
}

// Failed sets an attempt's failure mode with its failed_because edge (once,
// however often it is called), so the failure-pattern query counts it.
func TestFailedRecordsTheFailureModeWithItsEdge(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kernel.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const goal = "Write the cutover"
	var attempt string
	err = st.Write(ctx, func(tx *store.Tx) error {
		node, err := tx.InsertNode(ctx, store.NewNode{Goal: goal, Summary: goal})
		if err != nil {
			return err
		}
		if attempt, _, err = tx.AddAttempt(ctx, store.NewAttempt{Node: node, Index: 1, Resolver: "claude-code-0"}); err != nil {
			return err
		}
		if err := RecordPattern(ctx, &tx.Conn, goal, node, nil, nil); err != nil {
			return err
		}
		if err := tx.EnsureKGNode(ctx, AttemptID(attempt), "resolution_attempt", "attempt 1", nil); err != nil {
			return err
		}
		if err := tx.AddEdge(ctx, AttemptID(attempt), "tried_for", PatternID(goal), nil); err != nil {
			return err
		}
		for range 2 {
			if err := Failed(ctx, &tx.Conn, attempt, "low_confidence"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.Attempt(ctx, attempt)
	if err != nil || a.FailureMode != "failure:low_confidence" {
		t.Fatalf("attempt %+v, %v", a, err)
	}
	if ok, err := FailureRecorded(ctx, &st.Conn, attempt, a.FailureMode); err != nil || !ok {
		t.Errorf("no failed_because edge: %v", err)
	}
	fs, err := st.FailureModes(ctx, PatternID(goal))
	if err != nil || len(fs) != 1 || fs[0].Label != "low_confidence" || fs[0].Occurrences != 1 {
		t.Errorf("failure modes %+v, %v", fs, err)
	}
}
