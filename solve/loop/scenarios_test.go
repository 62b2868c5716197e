package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/internal/proc"
	"github.com/llmkernels/kernels/internal/proc/proctest"
	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/record"
	"github.com/llmkernels/kernels/solve/resolver/tool"
	"github.com/llmkernels/kernels/solve/store"
	"github.com/llmkernels/kernels/solve/workspace"
)

// Confidence gating in process: σ_path 0.72 × 0.70 × 0.75 = 0.378 < τ_global
// at depth 2 reopens the weakest ancestor (σ_v 0.70), invalidates its
// subtree and retries it with the gating as feedback.
func TestGatingReopensTheWeakestAncestor(t *testing.T) {
	eachStore(t, func(t *testing.T, dialect string) {
		k := newKernelOn(t, dialect)
		const runbook, cutover, rollback, dual = "Write the runbook", "Write the cutover", "Write the rollback", "Detail the dual-write phase"
		f := newFake(map[string]any{
			loop.OpVerify + "|" + runbook:          notLeaf(0.72),
			loop.OpDecompose + "|" + runbook:       children(child("a", cutover, 2), child("b", rollback, 1, "a")),
			loop.OpVerify + "|" + cutover + "|1":   notLeaf(0.70),
			loop.OpDecompose + "|" + cutover:       children(child("d", dual, 1)),
			loop.OpVerify + "|" + dual:             notLeaf(0.75),
			loop.OpVerify + "|" + cutover + "|2":   leafOK(0.9),
			loop.OpVerify + "|" + rollback + "|1":  leafOK(0.85),
			loop.OpResolve + "|" + cutover + "|2":  m{"summary": "replicated cutover"},
			loop.OpResolve + "|" + rollback + "|1": m{"summary": "rollback"},
		})
		res := k.run(t, request(runbook), k.options(f))
		if res.Outcome != loop.OutcomeAchieved {
			t.Fatalf("outcome %s\n%s", res.Outcome, k.flow(t))
		}
		if !strings.Contains(k.flow(t), "GATED: sigma_path 0.38 < tau_global 0.50; backtrack to weakest ancestor") {
			t.Errorf("no gating:\n%s", k.flow(t))
		}
		nodes, _ := k.st.TreeNodes(context.Background(), res.RootID)
		var live, dead []string
		for _, n := range nodes {
			if n.Invalidated {
				dead = append(dead, n.Summary+" "+n.Status)
			} else {
				live = append(live, fmt.Sprintf("%s %s %d", n.Summary, n.Status, n.AttemptCount))
			}
		}
		if strings.Join(dead, ",") != dual+" pending" || strings.Join(live, ",") != runbook+" pending 1,"+cutover+" resolved 2,"+rollback+" resolved 1" {
			t.Errorf("live %v, invalidated %v", live, dead)
		}
		rs := f.called(loop.OpResolve)
		i := slices.IndexFunc(rs, func(c loop.Call) bool { return c.Goal == cutover && c.Attempt == 2 })
		if i < 0 || !strings.Contains(strings.Join(rs[i].Feedback, " "), "confidence gating") {
			t.Errorf("the cutover's retry was not told about the gating")
		}
		// The reopened ancestor's attempt failed because of low confidence:
		// the knowledge graph says so (Step 9's failure-pattern query).
		if i >= 0 && !strings.Contains(rs[i].History, "low_confidence (1 occurrences)") {
			t.Errorf("the cutover's retry's history does not name its low_confidence failure:\n%s", rs[i].History)
		}
	})
}

// Step 12: leaves that disagree get a coupling constraint at their least
// common ancestor, which is re-planned with it selected.
func TestCouplingConflictReplansTheLeastCommonAncestor(t *testing.T) {
	eachStore(t, func(t *testing.T, dialect string) {
		k := newKernelOn(t, dialect)
		const docs, errs, retry = "Document the payments API", "Document the error format", "Document the retry rules"
		round := 0
		f := newFake(map[string]any{
			loop.OpVerify + "|" + docs: judgeAll(0.9, false),
			loop.OpSelect + "|" + docs: func(c *loop.Call) (any, error) {
				var refs []string
				for _, v := range c.Constraints {
					refs = append(refs, v.Ref)
				}
				return m{"selected": refs, "rationale": "all"}, nil
			},
			loop.OpDecompose: children(child("e", errs, 1), child("r", retry, 1)),
			loop.OpConsistency: func(c *loop.Call) (any, error) {
				if round++; round == 1 {
					return m{"verdict": "UNSAT", "conflicts": []any{m{"leaves": []string{"l1", "l2"},
						"coupling_constraints": []any{m{"type": "semantic", "domain": "consistency", "title": "one field name", "rubric": "code everywhere"}},
						"reason":               "error_code vs code"}}}, nil
				}
				return m{"verdict": "SAT", "conflicts": []any{}}, nil
			},
		})
		res := k.run(t, request(docs), k.options(f))
		if res.Outcome != loop.OutcomeAchieved || round != 2 {
			t.Fatalf("outcome %s after %d consistency checks", res.Outcome, round)
		}
		sel := f.called(loop.OpSelect)
		last := -1
		for i, c := range sel {
			if c.Goal == docs {
				last = i
			}
		}
		if last < 0 || len(sel[last].Constraints) != 2 || sel[last].Constraints[1].Title != "one field name" {
			t.Errorf("the re-planned root was not offered the coupling constraint")
		}
		if !strings.Contains(k.flow(t), "COUPLING conflict (error_code vs code): 1 coupling constraint(s)") {
			t.Errorf("flow:\n%s", k.flow(t))
		}
	})
}

// BUILD: T_max exhausted, no resolver provides the capability, a build
// subgoal writes a tool that is registered only after its own test
// passes; the node resolves with it, and its logic check runs on what the
// tool did. A second goal finds the tool by lookup-before-build.
func TestBuildRegistersATestedToolThatASecondGoalReuses(t *testing.T) {
	eachStore(t, func(t *testing.T, dialect string) {
		k := newKernelOn(t, dialect)
		ws := k.workspace(t)
		const goal, build, second = "Write out.txt", "Build resolver: make_out", "Write out.txt again"
		check := m{"constraints": []any{m{"type": "logic", "domain": "software", "title": "out.txt exists", "check": "test -f out.txt"}},
			"required_capabilities": []string{"generate_code"}, "rationale": "the file decides"}
		toolFiles := func(test string) m {
			return m{"summary": "make.sh", "files": []any{m{"path": "make.sh", "content": "echo made > out.txt\n"}},
				"tool": m{"label": "make-out", "description": "writes out.txt", "capabilities": []string{"make_out"}, "command": `sh "$SOLVE_TOOL_DIR/make.sh"`, "test_command": test}}
		}
		f := newFake(map[string]any{
			loop.OpIdentify + "|" + goal:        check,
			loop.OpResolve + "|" + goal:         m{"summary": "wrong file", "files": []any{m{"path": "wrong.txt", "content": "x"}}},
			loop.OpVerify + "|" + goal:          m{"checks": []any{}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one file"},
			loop.OpGap + "|" + goal:             m{"capability_tag": "make_out", "resolver_type": "digital", "build_constraints": []string{"writes out.txt"}, "rationale": "a tool does it"},
			loop.OpIdentify + "|" + build:       m{"constraints": []any{}, "required_capabilities": []string{"generate_code"}, "rationale": "the build constraints"},
			loop.OpResolve + "|" + build:        toolFiles("test -f missing.sh"),
			loop.OpResolve + "|" + build + "|2": toolFiles("test -f make.sh"),
			loop.OpIdentify + "|" + second:      check,
			loop.OpRoute + "|" + second: m{"resolver_id": "", "capability": "", "rationale": "history", "gap": m{"capability_tag": "make_out", "resolver_type": "digital",
				"build_constraints": []string{"writes out.txt"}, "rationale": "needs the tool"}},
		})
		req := request(goal)
		req.Workspace, req.TMax = ws, 2
		res := k.run(t, req, k.options(f))
		if res.Outcome != loop.OutcomeAchieved {
			t.Fatalf("outcome %s\n%s", res.Outcome, k.flow(t))
		}
		flow := k.flow(t)
		for _, want := range []string{"T_max exhausted after 2 attempts: BUILD", "BUILD: no resolver provides make_out", "BUILD: registered tool-make_out-1", "SELECT_RESOLVER → tool-make_out-1"} {
			if !strings.Contains(flow, want) {
				t.Errorf("flow lacks %q:\n%s", want, flow)
			}
		}
		if data, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || string(data) != "made\n" {
			t.Errorf("out.txt %q %v", data, err)
		}
		b := k.node(t, res.RootID, build)
		atts, _ := k.st.Attempts(context.Background(), b.ID)
		if len(atts) != 2 || atts[0].Verdict != store.UNSAT {
			t.Errorf("build attempts %+v: the first tool failed its own test", atts)
		}
		if rs, _ := k.st.Resolvers(context.Background(), "tool-make_out-1"); len(rs) != 1 || rs[0].BuiltBy != "system" {
			t.Errorf("registered %+v", rs)
		}
		if err := os.Remove(filepath.Join(ws, "out.txt")); err != nil {
			t.Fatal(err)
		}
		req = request(second)
		req.Workspace = ws
		res = k.run(t, req, k.options(f))
		if res.Outcome != loop.OutcomeAchieved || !strings.Contains(k.flow(t), "Write out.txt again") {
			t.Fatalf("second goal: %s", res.Outcome)
		}
		if _, err := os.Stat(filepath.Join(ws, "out.txt")); err != nil {
			t.Errorf("the reused tool did not write out.txt: %v", err)
		}
		if n := strings.Count(k.flow(t), "BUILD: no resolver provides"); n != 1 {
			t.Errorf("%d builds, want the first only", n)
		}
	})
}

// HIRE answered with budget: the run waits, a human adds budget, resume
// finishes without repeating a recorded call.
func TestOverBudgetHireAnsweredWithBudgetResumes(t *testing.T) {
	eachStore(t, func(t *testing.T, dialect string) {
		k := newKernelOn(t, dialect)
		const goal = "Name the queue"
		f := newFake(nil)
		req := request(goal)
		req.BudgetUSD = 0.035 // identify, select, route; resolve is denied
		res := k.run(t, req, k.options(f))
		if res.Outcome != loop.OutcomeWaiting || res.OpenRequests != 1 {
			t.Fatalf("result %+v", res)
		}
		reqs, _ := k.st.Requests(context.Background(), false)
		if len(reqs) != 1 || reqs[0].Capability != "budget" || !strings.Contains(loop.FormatRequest(reqs[0]), "budget pre_check DENIED") {
			t.Fatalf("requests %+v", reqs)
		}
		if _, err := loop.Answer(context.Background(), k.st, reqs[0].ID[:8], loop.HireAnswer{AddUSD: 1, Decline: true}); err == nil {
			t.Error("two answers at once were accepted")
		}
		// A negative or non-finite amount would take money away or make the
		// budget infinite (the CLI refuses them; so does the library).
		for _, a := range []loop.HireAnswer{{AddUSD: -5, AddSeconds: 60}, {AddUSD: math.Inf(1)}, {AddUSD: 1e308}, {AddUSD: 1_000_000.01}, {AddUSD: 1, AddSeconds: math.NaN()}, {AddSeconds: -1, AddUSD: 1}} {
			if _, err := loop.Answer(context.Background(), k.st, reqs[0].ID[:8], a); err == nil || !strings.Contains(err.Error(), "positive, finite") {
				t.Errorf("answer %+v: %v", a, err)
			}
		}
		done, err := loop.Answer(context.Background(), k.st, reqs[0].ID[:8], loop.HireAnswer{AddUSD: 1})
		if err != nil || done.Kind != "increase_budget" || done.AddUSD != 1 || !strings.Contains(done.Summary, "added $1.00") {
			t.Fatalf("answer %+v %v", done, err)
		}
		if _, err := loop.Answer(context.Background(), k.st, reqs[0].ID, loop.HireAnswer{AddUSD: 1}); err == nil || !strings.Contains(err.Error(), "already delivered") {
			t.Errorf("answering twice: %v", err)
		}
		res, err = loop.Resume(context.Background(), k.st, res.RootID[:8], k.options(f))
		if err != nil || res.Outcome != loop.OutcomeAchieved {
			t.Fatalf("resume %+v %v", res, err)
		}
		k.invariants(t, res.RootID)
		if n := len(f.called(loop.OpIdentify)); n != 1 {
			t.Errorf("identify called %d times", n)
		}
	})
}

// A declined request is never asked again, in this run or the next: the
// node ends infeasible.
func TestDeclinedHireIsNeverAskedAgain(t *testing.T) {
	eachStore(t, func(t *testing.T, dialect string) {
		k := newKernelOn(t, dialect)
		const goal = "Design a PCB"
		f := newFake(map[string]any{loop.OpRoute: m{"resolver_id": "", "capability": "", "rationale": "no candidate",
			"gap": m{"capability_tag": "thermal_measurement", "resolver_type": "physical", "build_constraints": []string{"a thermal camera"}, "rationale": "a board must be measured"}}})
		res := k.run(t, request(goal), k.options(f))
		if res.Outcome != loop.OutcomeWaiting {
			t.Fatalf("outcome %s", res.Outcome)
		}
		reqs, _ := k.st.Requests(context.Background(), false)
		if _, err := loop.Answer(context.Background(), k.st, reqs[0].ID, loop.HireAnswer{Decline: true, Reason: "no lab"}); err != nil {
			t.Fatal(err)
		}
		res, err := loop.Resume(context.Background(), k.st, res.RootID, k.options(f))
		if err != nil || res.Outcome != loop.OutcomeInfeasible || !strings.Contains(k.flow(t), "INFEASIBLE: capability request") || len(f.called(loop.OpIdentify)) != 1 {
			t.Fatalf("resume %+v %v", res, err)
		}
		res = k.run(t, request(goal), k.options(f))
		all, _ := k.st.Requests(context.Background(), true)
		if res.Outcome != loop.OutcomeInfeasible || len(all) != 1 {
			t.Errorf("a new run: %s with %d requests", res.Outcome, len(all))
		}
	})
}

// HIRE answered with a command: the command is registered as a resolver
// (toolization) and the node resolves with it.
func TestHireAnsweredWithACommandRegistersAResolver(t *testing.T) {
	eachStore(t, func(t *testing.T, dialect string) {
		k := newKernelOn(t, dialect)
		ws := k.workspace(t)
		const goal = "Measure the board"
		f := newFake(map[string]any{loop.OpRoute: m{"resolver_id": "", "capability": "", "rationale": "no candidate",
			"gap": m{"capability_tag": "measure", "resolver_type": "physical", "build_constraints": []string{}, "rationale": "hands needed"}}})
		req := request(goal)
		req.Workspace = ws
		res := k.run(t, req, k.options(f))
		reqs, _ := k.st.Requests(context.Background(), false)
		if res.Outcome != loop.OutcomeWaiting || len(reqs) != 1 {
			t.Fatalf("outcome %s, %d requests", res.Outcome, len(reqs))
		}
		done, err := loop.Answer(context.Background(), k.st, reqs[0].ID, loop.HireAnswer{Command: "echo 71C > reading.txt"})
		if err != nil || done.ResolverID != "human-measure-1" || !strings.Contains(done.Summary, "registered resolver human-measure-1") {
			t.Fatalf("answer %+v %v", done, err)
		}
		res, err = loop.Resume(context.Background(), k.st, "", k.options(f))
		if err != nil || res.Outcome != loop.OutcomeAchieved {
			t.Fatalf("resume %+v %v\n%s", res, err, k.flow(t))
		}
		k.invariants(t, res.RootID)
		if data, err := os.ReadFile(filepath.Join(ws, "reading.txt")); err != nil || string(data) != "71C\n" {
			t.Errorf("reading.txt %q %v", data, err)
		}
	})
}

// --suggest: each idea is an attempt of its own, scored like any output;
// the one that holds is used, no resolver runs.
func TestSuggestionsAreScoredLikeAnyCandidate(t *testing.T) {
	eachStore(t, func(t *testing.T, dialect string) {
		k := newKernelOn(t, dialect)
		const goal = "Name the queue"
		f := newFake(map[string]any{
			loop.OpVerify + "|" + goal + "|1": unsat(0.2, "CamelCase"),
			loop.OpVerify + "|" + goal + "|2": leafOK(0.95),
		})
		req := request(goal)
		req.Suggest = []string{"BillingQueue", "billing-invoices-queue"}
		res := k.run(t, req, k.options(f))
		if res.Outcome != loop.OutcomeAchieved || len(f.called(loop.OpResolve)) != 0 {
			t.Fatalf("outcome %s, %d resolve calls", res.Outcome, len(f.called(loop.OpResolve)))
		}
		vs := f.called(loop.OpVerify)
		if len(vs) != 2 || !strings.Contains(vs[1].Output.Content, "billing-invoices-queue") || strings.Contains(vs[1].Output.Content, "suggest") {
			t.Errorf("verified outputs: %+v", vs)
		}
	})
}

// interactiveRun runs goal with Request.Interactive: the extraction
// dialogue proposes candidates and questions, the human types input, and
// the route finds no resolver (a physical gap, a HIRE asked on the
// terminal). It returns the result, what the terminal showed, and the
// request and options, for another run.
func interactiveRun(t *testing.T, k *kernel, goal string, candidates []any, questions []string, input string) (*loop.Result, *strings.Builder, loop.Request, loop.Options) {
	t.Helper()
	f := newFake(map[string]any{
		loop.OpSynthesize: m{"candidates": candidates, "questions": questions},
		loop.OpRoute: m{"resolver_id": "", "capability": "", "rationale": "none",
			"gap": m{"capability_tag": "thermal_measurement", "resolver_type": "physical", "build_constraints": []string{}, "rationale": "a board"}},
	})
	term := &strings.Builder{}
	o := k.options(f)
	o.In, o.Progress = strings.NewReader(input), term
	req := request(goal)
	req.Interactive = true
	return k.run(t, req, o), term, req, o
}

// --interactive: the extraction dialogue keeps the confirmed candidates
// as the core, and a HIRE is asked and declined on the terminal at once.
func TestInteractiveDialogueAndHireOnTheTerminal(t *testing.T) {
	eachStore(t, func(t *testing.T, dialect string) {
		k := newKernelOn(t, dialect)
		const goal = "Design a PCB"
		res, term, req, o := interactiveRun(t, k, goal, []any{m{"type": "logic", "domain": "thermal", "title": "below 85C"}, m{"type": "semantic", "domain": "cost", "title": "BOM under $40"}},
			[]string{"Forced air?"}, "y\nn\nd\n")
		if res.Outcome != loop.OutcomeInfeasible || res.OpenRequests != 0 {
			t.Fatalf("result %+v\n%s", res, term.String())
		}
		for _, want := range []string{"Candidate constraint (logic, thermal): below 85C — keep? [y/N]", "Open question: Forced air?", "Irreducible core: below 85C (logic)\n", "declined on the terminal"} {
			if !strings.Contains(term.String(), want) {
				t.Errorf("terminal lacks %q:\n%s", want, term.String())
			}
		}
		root := k.node(t, res.RootID, goal)
		if len(root.Core) != 1 {
			t.Errorf("core %v, want the one kept", root.Core)
		}
		o.In = strings.NewReader("n\nn\n")
		if _, err := loop.Run(context.Background(), k.st, req, o); err == nil || !strings.Contains(err.Error(), "the irreducible core is empty") {
			t.Errorf("an empty core: %v", err)
		}
	})
}

// A logic candidate's expression is stored only once it parses over the
// metrics: one that does not is shown with the parser's reason and the
// human asked for another until it does (or keeps the candidate judged
// with Enter, or when the input ends); e edits a valid one.
func TestTheDialogueStoresOnlyExpressionsThatParse(t *testing.T) {
	k := newKernelOn(t, "sqlite")
	const goal = "Summarise the logs cheaply"
	// 1: kept, two bad expressions, then a good one. 2: e, then a new
	// expression. 3: kept, then Enter: judged. 4: kept, a bad one, then
	// the input ends: judged.
	res, term, _, _ := interactiveRun(t, k, goal, []any{
		m{"type": "logic", "domain": "cost", "title": "under a dollar", "expr": "cost_usd <== 1"},
		m{"type": "logic", "domain": "time", "title": "within a minute", "expr": "time_seconds <= 60"},
		m{"type": "logic", "domain": "cost", "title": "within budget", "expr": "spend < budget"},
		m{"type": "logic", "domain": "time", "title": "fast", "expr": "elapsed_seconds <"}},
		[]string{}, "y\ncost_usd <=\ndollars <= 1\ncost_usd <= 1\ne\ntime_seconds < 30\ny\n\ny\nelapsed_seconds <")
	for _, want := range []string{
		"Candidate constraint (logic, cost): under a dollar [cost_usd <== 1] — keep? [y/N, e to edit the expression]",
		"cost_usd <== 1 cannot be evaluated: ", "unknown metric \"dollars\"", "; try again\n",
		"kept as a judged constraint", "Irreducible core: under a dollar (logic); within a minute (logic); within budget (semantic); fast (semantic)\n",
	} {
		if !strings.Contains(term.String(), want) {
			t.Errorf("terminal lacks %q:\n%s", want, term.String())
		}
	}
	if strings.Count(term.String(), "; try again") != 3 {
		t.Errorf("want three expressions refused:\n%s", term.String())
	}
	root := k.node(t, res.RootID, goal)
	cs, err := k.st.Constraints(context.Background(), root.Core)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		var p struct{ Expr, Rubric string }
		if err := json.Unmarshal(c.Payload, &p); err != nil {
			t.Fatal(err)
		}
		got = append(got, c.Type+": "+p.Expr+p.Rubric)
	}
	want := []string{"logic: cost_usd <= 1", "logic: time_seconds < 30", "semantic: within budget (as written: spend < budget)", "semantic: fast (as written: elapsed_seconds <)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("core constraints:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Four workers give the same tree, attempts and spend as one.
func TestFourWorkersEndLikeOne(t *testing.T) {
	eachStore(t, func(t *testing.T, dialect string) {
		const goal = "Add four helpers"
		state := func(workers int) string {
			k := newKernelOn(t, dialect)
			f := newFake(map[string]any{
				loop.OpVerify + "|" + goal: notLeaf(0.9),
				loop.OpDecompose:           children(child("a", "Add A", 1), child("b", "Add B", 2), child("c", "Add C", 3), child("d", "Add D", 4)),
			})
			req := request(goal)
			req.Workers = workers
			res := k.run(t, req, k.options(f))
			nodes, _ := k.st.TreeNodes(context.Background(), res.RootID)
			var lines []string
			for _, n := range nodes {
				b, _ := k.st.Balance(context.Background(), n.ID)
				lines = append(lines, fmt.Sprintf("%s %s %d %.6f %.6f", n.Summary, n.Status, n.AttemptCount, b.Spent, b.Allocated))
			}
			slices.Sort(lines)
			return fmt.Sprintf("%s %.6f %d\n%s", res.Outcome, res.SpentUSD, res.LLMCalls, strings.Join(lines, "\n"))
		}
		if one, four := state(1), state(4); one != four {
			t.Errorf("--workers 4 differs:\n--- 1\n%s\n--- 4\n%s", one, four)
		}
	})
}

// A hired command that tries to leave its confinement (read an SSH key,
// write outside, reach the network, fork 10,000 processes, allocate 8 GiB,
// write 10 GB) is refused each time, and the loop goes on: the failed
// tool opens a new capability request whose detail records why.
func TestAHiredCommandRunsConfinedAndTheLoopGoesOn(t *testing.T) {
	if !proc.Probe().Available {
		t.Skipf("confinement not available here: %s", proc.Probe().Reason)
	}
	k := newKernel(t)
	ws := k.workspace(t)
	e := proctest.NewEscape(t)
	for name, content := range map[string]string{"escape.py": e.Python(), "input.txt": "in"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := newFake(map[string]any{loop.OpRoute: m{"resolver_id": "", "capability": "", "rationale": "no candidate",
		"gap": m{"capability_tag": "measure", "resolver_type": "digital", "build_constraints": []string{}, "rationale": "a tool is needed"}}})
	req := request("Measure the board")
	req.Workspace = ws
	res := k.run(t, req, k.options(f))
	reqs, _ := k.st.Requests(context.Background(), false)
	if res.Outcome != loop.OutcomeWaiting || len(reqs) != 1 {
		t.Fatalf("outcome %s, %d requests", res.Outcome, len(reqs))
	}
	if _, err := loop.Answer(context.Background(), k.st, reqs[0].ID, loop.HireAnswer{Command: "python3 escape.py; exit 1"}); err != nil {
		t.Fatal(err)
	}
	o := k.options(f)
	o.Tool = func(e record.Resolver) (loop.Resolver, error) {
		return tool.New(k.st, e, workspace.Sandbox{Limits: proc.Limits{Processes: 64, Memory: 1 << 30, Output: 1 << 20}}), nil
	}
	res, err := loop.Resume(context.Background(), k.st, "", o)
	if err != nil || res.Outcome != loop.OutcomeWaiting {
		t.Fatalf("resume %+v %v\n%s", res, err, k.flow(t))
	}
	reqs, _ = k.st.Requests(context.Background(), false)
	if len(reqs) != 1 {
		t.Fatalf("%d open requests, want the one naming the failed tool", len(reqs))
	}
	detail, _ := json.Marshal(reqs[0].Detail)
	t.Logf("%s", detail)
	e.Check(t, strings.ReplaceAll(string(detail), `\n`, "\n"))
	k.invariants(t, res.RootID)
}

// A person's network allowance is recorded with the tool: a hired command
// gets what `solve hire … --allow-network` gave, a built tool what it
// declares once `solve resolvers allow ID --network` allowed it; the
// listing line says which; nothing else is allowed.
func TestNetworkAllowancesAreRecordedWithTheTool(t *testing.T) {
	k := newKernel(t)
	ctx := context.Background()
	f := newFake(map[string]any{loop.OpRoute: m{"resolver_id": "", "capability": "", "rationale": "no candidate",
		"gap": m{"capability_tag": "fetch", "resolver_type": "digital", "build_constraints": []string{}, "rationale": "a tool is needed"}}})
	req := request("Fetch the prices")
	req.Workspace = k.workspace(t)
	k.run(t, req, k.options(f))
	reqs, _ := k.st.Requests(ctx, false)
	if _, err := loop.Answer(ctx, k.st, reqs[0].ID, loop.HireAnswer{Command: "true", Network: []string{"example.org"}}); err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Fatalf("an allowance without a port: %v", err)
	}
	if _, err := loop.Answer(ctx, k.st, reqs[0].ID, loop.HireAnswer{Command: "true", Network: []string{"api.example.org:443"}}); err != nil {
		t.Fatal(err)
	}
	hired, _ := k.st.Resolvers(ctx, "human-fetch-1")
	if got := loop.AllowedNetwork(hired[0]); len(got) != 1 || got[0] != "api.example.org:443" || loop.NetworkLine(hired[0]) != "network allowed: api.example.org:443" {
		t.Fatalf("hired: allowed %v, line %q", got, loop.NetworkLine(hired[0]))
	}
	built := record.Resolver{ID: "tool-fetch-2", Label: "fetch", Type: "digital", Capabilities: []string{"fetch"}, BuiltBy: "system",
		Metadata: map[string]any{"command": "true", "network": []string{"pypi.org:443"}}}
	if err := k.st.UpsertResolver(ctx, built); err != nil {
		t.Fatal(err)
	}
	rs, _ := k.st.Resolvers(ctx, built.ID)
	if len(loop.AllowedNetwork(rs[0])) != 0 || !strings.Contains(loop.NetworkLine(rs[0]), "not allowed: pypi.org:443 (solve resolvers allow tool-fetch-2 --network)") {
		t.Fatalf("built, before: %q", loop.NetworkLine(rs[0]))
	}
	if allowed, err := loop.AllowNetwork(ctx, k.st, built.ID); err != nil || !slices.Contains(allowed, "pypi.org:443") {
		t.Fatalf("allow: %q %v", allowed, err)
	}
	rs, _ = k.st.Resolvers(ctx, built.ID)
	if got := loop.AllowedNetwork(rs[0]); len(got) != 1 || got[0] != "pypi.org:443" {
		t.Fatalf("built, after: %v", got)
	}
	if _, err := loop.AllowNetwork(ctx, k.st, loop.CodexToolsID); err == nil || !strings.Contains(err.Error(), "declares no network") {
		t.Errorf("allowing a resolver that declares nothing: %v", err)
	}
}
