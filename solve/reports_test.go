package solve_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/solve"
	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/store"
)

// The read side returns structs: a run's tree depth first with σ and
// budget, the runs, the log, the artifacts and the knowledge graph.
func TestReadSideReturnsPlainStructs(t *testing.T) {
	ctx := context.Background()
	k, err := solve.Open(ctx, filepath.Join(t.TempDir(), "kernel.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	res, err := k.Run(ctx, loop.Request{Goal: "tree 2", BudgetUSD: 1, Time: time.Hour, Model: "test"},
		solve.Options{Resolvers: map[string]loop.Resolver{loop.ClaudeCodeID: &treeResolver{}}})
	if err != nil || res.Outcome != loop.OutcomeAchieved {
		t.Fatalf("run %+v %v", res, err)
	}
	st, err := k.Status(ctx, res.RootID[:8])
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Nodes) != 3 || st.Nodes[0].Depth != 0 || st.Nodes[1].Depth != 1 || st.Nodes[1].Parent != res.RootID || st.Result.Outcome != loop.OutcomeAchieved {
		t.Fatalf("status %+v", st)
	}
	if n := st.Nodes[1]; n.Status != store.StatusResolved || n.SigmaV == nil || *n.SigmaV != 0.99 || n.AllocatedUSD <= 0 || n.Attempts != 1 {
		t.Errorf("leaf %+v", n)
	}
	runs, err := k.Runs(ctx)
	if err != nil || len(runs) != 1 || runs[0].Goal != "tree 2" || runs[0].Nodes != 3 {
		t.Errorf("runs %+v %v", runs, err)
	}
	logs, err := k.Logs(ctx, 3, res.RootID[:8])
	if err != nil || len(logs) == 0 || logs[0].Tier != 3 || !json.Valid(logs[0].Detail) {
		t.Errorf("tier-3 logs of the root: %+v %v", logs, err)
	}
	if _, err := k.Logs(ctx, 4, ""); err == nil {
		t.Error("tier 4 accepted")
	}
	arts, err := k.Artifacts(ctx, res.RootID)
	if err != nil {
		t.Fatal(err)
	}
	sigmas := 0
	for _, a := range arts {
		if a.Sigma != nil {
			sigmas++
		}
	}
	if sigmas != 3 { // two leaves' outputs and the assembly
		t.Errorf("%d artifacts with σ among %d", sigmas, len(arts))
	}
	kg, err := k.KG(ctx, "", "generate_code")
	if err != nil || len(kg.Patterns) == 0 || kg.Lookup == nil || !strings.Contains(strings.Join(kg.Lookup.Resolvers, ","), loop.ClaudeCodeID) {
		t.Errorf("kg %+v %v", kg, err)
	}
	if _, err := k.Status(ctx, "nope"); err == nil {
		t.Error("status of an unknown root")
	}
}

// A run on a scripted client says, wherever its money is read back (the
// result, solve status, the report), that the money is what its model
// would charge and that nothing was charged; a real run says nothing of
// the kind.
func TestAScriptedRunsMoneyIsLabelledInStatusAndReport(t *testing.T) {
	ctx := context.Background()
	const note = "scripted: what claude-opus-4-6 would charge; nothing is charged"
	for _, scripted := range []bool{true, false} {
		k, err := solve.Open(ctx, filepath.Join(t.TempDir(), "kernel.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer k.Close()
		res, err := k.Run(ctx, loop.Request{Goal: "tree 2", BudgetUSD: 1, Time: time.Hour, Model: "claude-opus-4-6"},
			solve.Options{Client: &llm.Client{Scripted: scripted}, Resolvers: map[string]loop.Resolver{loop.ClaudeCodeID: &treeResolver{}}})
		if err != nil || res.Outcome != loop.OutcomeAchieved {
			t.Fatalf("run %+v %v", res, err)
		}
		want := ""
		if scripted {
			want = note
		}
		runs, err := k.Runs(ctx)
		if err != nil || len(runs) != 1 {
			t.Fatal(runs, err)
		}
		rep, err := k.Report(ctx, res.RootID)
		if err != nil {
			t.Fatal(err)
		}
		md := rep.Markdown("g.svg", "m.mmd")
		if res.CostNote != want || runs[0].CostNote != want || rep.Status.Result.CostNote != want || strings.Contains(md, "of $1.00 ("+note+") · ") != scripted {
			t.Errorf("scripted %v: cost notes %q, %q, %q, want %q; report:\n%s", scripted, res.CostNote, runs[0].CostNote, rep.Status.Result.CostNote, want, md)
		}
	}
}
