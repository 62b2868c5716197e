package planning

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	optionerr "github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/script"
	"github.com/llmkernels/kernels/solve/store"
)

const sweGoal = "Build an autonomous SWE agent achieving 80% on SWE-bench Lite, within 24h, for <$500 compute."

func scripted(t *testing.T, name string) *llm.Client {
	t.Helper()
	s, err := script.Load(filepath.Join("..", "..", "cmd", "solve", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return &llm.Client{Provider: script.New(s), Retry: llm.RetryPolicy{BaseDelay: time.Millisecond, Sleep: func(context.Context, time.Duration) error { return nil }}}
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "kernel.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// The planning pipeline in process: the plan it makes passes the whole
// assertion framework, and kernel.db holds the root, its children and an
// attempt per model answer.
func TestMakeProducesAPlanThatPassesEveryCheck(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	var progress strings.Builder
	p, err := Make(ctx, st, scripted(t, "swe_agent.json"), Request{Goal: sweGoal, Model: "claude-opus-4-6", Retries: 2, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if f := Failed(Check(ctx, p, CheckOptions{})); f != 0 {
		t.Errorf("%d checks fail on a kernel-made plan", f)
	}
	if p.Repair.Status != RepairRepaired || p.Usage.Calls != 3 || !strings.Contains(progress.String(), "solve: [repair]") {
		t.Errorf("repair %s, %d calls, progress:\n%s", p.Repair.Status, p.Usage.Calls, progress.String())
	}
	root, err := st.Node(ctx, p.RootID)
	if err != nil || root.Status != store.StatusPending || root.AttemptCount != 3 {
		t.Fatalf("root %+v %v", root, err)
	}
	nodes, _ := st.TreeNodes(ctx, p.RootID)
	if len(nodes) != len(p.Tasks)+1 {
		t.Errorf("%d nodes for %d tasks", len(nodes), len(p.Tasks))
	}
}

// A plan made on a scripted client meters its calls at the model, and its
// summary and report say once that the money is what the model would
// charge, nothing charged; the live lines leave that to the notice. A
// real client's plan says nothing of the kind.
func TestAScriptedPlansCostIsLabelledOnce(t *testing.T) {
	const note = "(scripted: what claude-opus-4-6 would charge; nothing is charged)"
	for _, isScripted := range []bool{true, false} {
		client := scripted(t, "swe_agent.json")
		client.Scripted = isScripted
		var progress strings.Builder
		p, err := Make(context.Background(), openStore(t), client, Request{Goal: sweGoal, Model: "claude-opus-4-6", Retries: 2, Progress: &progress})
		if err != nil {
			t.Fatal(err)
		}
		summary, report := Summary(p, Files{}), Report(p, "g.svg")
		if p.Usage.CostUSD <= 0 || strings.Contains(progress.String(), note) {
			t.Errorf("scripted %v: cost $%f; live lines:\n%s", isScripted, p.Usage.CostUSD, progress.String())
		}
		if strings.Contains(summary, note) != isScripted || strings.Count(report, note) != map[bool]int{true: 1}[isScripted] {
			t.Errorf("scripted %v: summary:\n%s\nreport:\n%s", isScripted, summary, report)
		}
	}
}

// A retry's wait is said rounded, as a person reads it (not 712.345µs).
func TestMakeSaysARetrysWaitRounded(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "cmd", "solve", "testdata", "swe_agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Responses []json.RawMessage `json:"responses"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	doc.Responses = append([]json.RawMessage{json.RawMessage(`{"error": {"status": 529, "type": "overloaded_error", "message": "Overloaded"}}`)}, doc.Responses...)
	busy, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := script.Parse(busy)
	if err != nil {
		t.Fatal(err)
	}
	client := &llm.Client{Provider: script.New(s), Retry: llm.RetryPolicy{BaseDelay: 700 * time.Millisecond, Sleep: func(context.Context, time.Duration) error { return nil }}}
	var progress strings.Builder
	if _, err := Make(context.Background(), openStore(t), client, Request{Goal: sweGoal, Model: "claude-opus-4-6", Retries: 2, Progress: &progress}); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`retrying claude-opus-4-6 after: .*Overloaded \(wait (\d+ms|\d+(\.\d{1,2})?s)\)`).MatchString(progress.String()) {
		t.Fatalf("progress:\n%s", progress.String())
	}
}

// A run stopped by its wall-clock cap says so with the figures, names the
// field, and leaves the root failed.
func TestMakeStoppedByItsWallClockCapMarksTheRootFailed(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	_, err := Make(ctx, st, scripted(t, "swe_agent.json"), Request{Goal: sweGoal, Model: "claude-opus-4-6", MaxWall: time.Nanosecond})
	var stopped *StoppedError
	if !errors.As(err, &stopped) || stopped.Stage != StageConstraints || !strings.Contains(err.Error(), "(MaxWall 1ns) during stage constraints") {
		t.Fatalf("error %v", err)
	}
	if n, err := st.Node(ctx, stopped.Root); err != nil || n.Status != store.StatusFailed {
		t.Errorf("root %+v %v", n, err)
	}
}

func TestMakeRefusesBadRequestsNamingTheField(t *testing.T) {
	st := openStore(t)
	neg := -1.0
	for _, tc := range []struct {
		req          Request
		field, start string
	}{{Request{Goal: " "}, "goal", "is empty"}, {Request{Goal: "x", BudgetUSD: &neg}, "budget_usd", "-1: "}, {Request{Goal: "x", TimeHours: &neg}, "time_hours", "-1: "}} {
		_, err := Make(context.Background(), st, nil, tc.req)
		if e, ok := errors.AsType[*optionerr.Error](err); !ok || e.Field != tc.field || !strings.HasPrefix(e.Problem, tc.start) {
			t.Errorf("%+v: %v, want an option error on %s starting %q", tc.req, err, tc.field, tc.start)
		}
	}
	if roots, _ := st.RootsWithPrefix(context.Background(), ""); len(roots) != 0 {
		t.Errorf("%d roots written for refused requests", len(roots))
	}
}
