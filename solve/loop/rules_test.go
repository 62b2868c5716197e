package loop_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/store"
)

// db opens kernel.db beside the store for assertions on what it holds.
func (k *kernel) db(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(k.dir, "kernel.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func count(t *testing.T, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestALeafGoalIsAchievedAndEveryCallIsInTheLedger(t *testing.T) {
	k := newKernel(t)
	f := newFake(nil)
	res := k.run(t, request("Write a haiku about queues"), k.options(f))
	if res.Outcome != loop.OutcomeAchieved || res.SigmaSystem != 0.9 || res.Summary != "assembled" || res.Nodes != 1 {
		t.Fatalf("result %+v", res)
	}
	// identify, select, route, resolve, verify, consistency, assemble
	if len(f.calls) != 7 || res.LLMCalls != 7 {
		t.Errorf("%d calls, %d LLM calls recorded; want 7", len(f.calls), res.LLMCalls)
	}
	if math.Abs(res.SpentUSD-0.07) > 1e-9 || res.AllocatedUSD != 5 {
		t.Errorf("spent %v of %v; want 7 calls at $0.01 of $5", res.SpentUSD, res.AllocatedUSD)
	}
	n := k.node(t, res.RootID, "Write a haiku about queues")
	if n.Status != store.StatusResolved || n.AttemptCount != 1 || n.LeafKind != "atomic" {
		t.Errorf("root %+v", n)
	}
}

func TestDecompositionSharesEightyPercentByWeightAndWaitsForDependencies(t *testing.T) {
	k := newKernel(t)
	const goal = "Ship the feature"
	f := newFake(map[string]any{
		loop.OpVerify + "|" + goal: notLeaf(0.9),
		loop.OpDecompose:           children(child("a", "Write the code", 1), child("b", "Write the docs", 3, "a")),
	})
	res := k.run(t, request(goal), k.options(f))
	if res.Outcome != loop.OutcomeAchieved || res.Nodes != 3 {
		t.Fatalf("result %+v", res)
	}
	// The root spent 6 calls (identify, select, route, resolve, verify,
	// decompose) when it allocates: $4.94 remain, 80% of it shared 1:3.
	for _, c := range []struct {
		goal string
		want float64
	}{{"Write the code", 4.94 * 0.8 * 0.25}, {"Write the docs", 4.94 * 0.8 * 0.75}} {
		n := k.node(t, res.RootID, c.goal)
		if math.Abs(n.BudgetAllocated-c.want) > 1e-9 {
			t.Errorf("%s allocated $%.6f, want $%.6f", c.goal, n.BudgetAllocated, c.want)
		}
	}
	root := k.node(t, res.RootID, goal)
	if b, _ := k.st.Balance(context.Background(), root.ID); math.Abs(b.RemainingCost()-(4.94*0.2-0.02)) > 1e-9 {
		t.Errorf("the root keeps $%.6f after decompose, consistency and assembly; want 20%% reserve less two calls", b.RemainingCost())
	}
	var order []string
	for _, c := range f.called(loop.OpResolve) {
		order = append(order, c.Goal)
	}
	if strings.Join(order, ", ") != "Ship the feature, Write the code, Write the docs" {
		t.Errorf("resolve order %v: the docs depend on the code", order)
	}
}

func TestUNSATRetriesWithTheViolationAsFeedback(t *testing.T) {
	k := newKernel(t)
	const goal = "Name the queue"
	f := newFake(map[string]any{
		loop.OpVerify + "|" + goal + "|1": unsat(0.3, "CamelCase is not kebab-case"),
		loop.OpVerify + "|" + goal + "|2": leafOK(0.95),
	})
	res := k.run(t, request(goal), k.options(f))
	if res.Outcome != loop.OutcomeAchieved {
		t.Fatalf("result %+v", res)
	}
	rs := f.called(loop.OpResolve)
	if len(rs) != 2 || rs[0].Feedback != nil {
		t.Fatalf("%d resolve calls, first feedback %v", len(rs), rs[0].Feedback)
	}
	fb := strings.Join(rs[1].Feedback, "\n")
	if !strings.Contains(fb, "c1 failed (sigma 0.30): CamelCase is not kebab-case") || !strings.Contains(fb, "fix: CamelCase") {
		t.Errorf("the retry's feedback lacks the violation:\n%s", fb)
	}
	if !strings.Contains(k.flow(t), "RETRY 2/5 with feedback") {
		t.Errorf("flow:\n%s", k.flow(t))
	}
}

// Stagnation: when σ improved by less than 0.05 over two consecutive
// attempts the node goes to BUILD before T_max; attempts that keep
// improving use all T_max attempts first.
func TestStagnationGoesToBuildBeforeTMax(t *testing.T) {
	gap := m{"capability_tag": "queue_naming_board", "resolver_type": "physical", "build_constraints": []string{"a person decides"}, "rationale": "taste"}
	for _, tc := range []struct {
		name     string
		sigmas   []float64
		attempts int
		why      string
	}{
		{"stagnant", []float64{0.30, 0.32, 0.33, 0.34, 0.35}, 3, "stagnation (sigma improved less than 0.05 over two attempts) after 3 attempts"},
		{"improving", []float64{0.10, 0.20, 0.30, 0.40, 0.50}, 5, "T_max exhausted after 5 attempts"},
		{"stagnant only once", []float64{0.30, 0.31, 0.40, 0.41, 0.50}, 5, "T_max exhausted after 5 attempts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKernel(t)
			const goal = "Name the queue"
			answers := map[string]any{loop.OpGap: gap}
			for i, s := range tc.sigmas {
				answers[loop.OpVerify+"|"+goal+"|"+string(rune('1'+i))] = unsat(s, "not good enough")
			}
			f := newFake(answers)
			res := k.run(t, request(goal), k.options(f))
			if res.Outcome != loop.OutcomeWaiting {
				t.Fatalf("outcome %s, want waiting_for_human (the physical gap is a HIRE)", res.Outcome)
			}
			if n := len(f.called(loop.OpResolve)); n != tc.attempts {
				t.Errorf("%d attempts before BUILD, want %d", n, tc.attempts)
			}
			if len(f.called(loop.OpGap)) != 1 || !strings.Contains(k.flow(t), tc.why) {
				t.Errorf("gap asked %d times; flow lacks %q:\n%s", len(f.called(loop.OpGap)), tc.why, k.flow(t))
			}
		})
	}
}

// A retryable resolver error is tried again (three tries in all) without
// using an attempt; the money a failed try cost is still recorded.
func TestRetryableResolverErrorIsRetried(t *testing.T) {
	k := newKernel(t)
	const goal = "Name the queue"
	tries := 0
	f := newFake(map[string]any{loop.OpResolve: func(c *loop.Call) (any, error) {
		if tries++; tries < 3 {
			return nil, &loop.ResolverError{Mode: "llm_unavailable", Err: errors.New("529 overloaded"), Cost: 0.002}
		}
		return m{"summary": "billing-invoices-queue"}, nil
	}})
	res := k.run(t, request(goal), k.options(f))
	if res.Outcome != loop.OutcomeAchieved || tries != 3 {
		t.Fatalf("outcome %s after %d tries", res.Outcome, tries)
	}
	n := k.node(t, res.RootID, goal)
	if n.AttemptCount != 1 {
		t.Errorf("attempt_count %d: retries of a retryable error must not use attempts", n.AttemptCount)
	}
	db := k.db(t)
	if c := count(t, db, "SELECT COUNT(*) FROM budget_ledger WHERE node_id = ? AND description = 'resolve' AND amount = 0.002", n.ID); c != 2 {
		t.Errorf("%d spends of the failed tries, want 2", c)
	}
}

// A resolver still failing after three tries stops the run with the
// error; resume repeats nothing that was recorded.
func TestRetryableErrorThatPersistsStopsTheRunForResume(t *testing.T) {
	k := newKernel(t)
	const goal = "Name the queue"
	down := true
	f := newFake(map[string]any{loop.OpResolve: func(c *loop.Call) (any, error) {
		if down {
			return nil, &loop.ResolverError{Mode: "llm_unavailable", Err: errors.New("connection refused")}
		}
		return m{"summary": "billing-invoices-queue"}, nil
	}})
	_, err := loop.Run(context.Background(), k.st, request(goal), k.options(f))
	if err == nil || !strings.Contains(err.Error(), "retryable resolver error (llm_unavailable): connection refused") || !strings.Contains(err.Error(), "in resolving") {
		t.Fatalf("run = %v", err)
	}
	if n := len(f.called(loop.OpResolve)); n != 3 {
		t.Errorf("%d tries, want 3", n)
	}
	down = false
	res, err := loop.Resume(context.Background(), k.st, "", k.options(f))
	if err != nil || res.Outcome != loop.OutcomeAchieved {
		t.Fatalf("resume: %+v %v", res, err)
	}
	k.invariants(t, res.RootID)
	if n := len(f.called(loop.OpIdentify)); n != 1 {
		t.Errorf("identify called %d times across run and resume, want 1", n)
	}
}

// PRE_CHECK: a child whose own budget cannot cover a call borrows from
// its parent's reserve (a parent spend and a child allocation); when the
// parent cannot cover it either, the call is denied and becomes a HIRE.
func TestReserveCoversAChildsShortfall(t *testing.T) {
	const goal, sub = "Ship the feature", "Write the code"
	for _, tc := range []struct {
		name     string
		estimate float64
		outcome  string
	}{{"covered by the reserve", 0.10, loop.OutcomeAchieved}, {"more than the reserve", 0.50, loop.OutcomeWaiting}} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKernel(t)
			f := newFake(map[string]any{
				loop.OpVerify + "|" + goal: notLeaf(0.9),
				loop.OpDecompose:           children(child("a", sub, 1)),
			})
			// The root has $1: six calls leave $0.94, the child gets 80%
			// ($0.752) and the root keeps $0.188. The child's identify
			// costs $0.70, so its select (estimated at tc.estimate) does
			// not fit the $0.052 it has left.
			f.costOf = func(c *loop.Call) float64 {
				if c.Op == loop.OpIdentify && c.Goal == sub {
					return 0.70
				}
				return 0.01
			}
			f.estOf = func(c *loop.Call) float64 {
				if c.Op == loop.OpSelect && c.Goal == sub {
					return tc.estimate
				}
				return 0.01
			}
			req := request(goal)
			req.BudgetUSD = 1
			res := k.run(t, req, k.options(f))
			if res.Outcome != tc.outcome {
				t.Fatalf("outcome %s, want %s", res.Outcome, tc.outcome)
			}
			n := k.node(t, res.RootID, sub)
			db := k.db(t)
			moved := count(t, db, "SELECT COUNT(*) FROM budget_ledger WHERE event_type = 'spend' AND description = ? AND amount = ?", "reserve reallocated to child "+n.ID, tc.estimate) +
				count(t, db, "SELECT COUNT(*) FROM budget_ledger WHERE node_id = ? AND event_type = 'allocate' AND description = 'from parent reserve' AND amount = ?", n.ID, tc.estimate)
			if tc.outcome == loop.OutcomeAchieved && moved != 2 {
				t.Errorf("the reserve's move is %d ledger rows, want a parent spend and a child allocation", moved)
			}
			if tc.outcome == loop.OutcomeWaiting {
				if moved != 0 || count(t, db, "SELECT COUNT(*) FROM capability_requests WHERE status = 'requested' AND detail->>'budget_class' = 'over_budget'") != 1 {
					t.Errorf("a denied pre_check: %d reserve rows, requests %d", moved, count(t, db, "SELECT COUNT(*) FROM capability_requests"))
				}
			}
		})
	}
}

// A permanent resolver error is an UNSAT attempt with its failure mode,
// retried with the error as feedback.
func TestPermanentResolverErrorIsAnUNSATAttempt(t *testing.T) {
	k := newKernel(t)
	const goal = "Name the queue"
	f := newFake(map[string]any{loop.OpResolve + "|" + goal + "|1": loop.Permanent("invalid_format", errors.New("no summary"))})
	res := k.run(t, request(goal), k.options(f))
	if res.Outcome != loop.OutcomeAchieved {
		t.Fatalf("outcome %s", res.Outcome)
	}
	atts, err := k.st.Attempts(context.Background(), k.node(t, res.RootID, goal).ID)
	if err != nil || len(atts) != 2 || atts[0].Verdict != store.UNSAT || atts[0].FailureMode != "failure:invalid_format" || atts[1].Verdict != store.SAT {
		t.Fatalf("attempts %+v %v", atts, err)
	}
	if fb := f.called(loop.OpResolve)[1].Feedback; len(fb) == 0 || !strings.Contains(strings.Join(fb, " "), "permanent resolver error (invalid_format): no summary") {
		t.Errorf("feedback %v", fb)
	}
}

// A cyclic decomposition is asked again with the cycle quoted first (as
// solve plan does), and the corrected answer is used; one that stays
// cyclic after two re-asks becomes a HIRE naming the cycle.
func TestCyclicDecompositionIsAskedAgainWithTheCycleQuoted(t *testing.T) {
	const goal = "Ship the feature"
	cyclic := children(child("a", "A", 0, "b"), child("b", "B", 1, "a"))
	t.Run("corrected", func(t *testing.T) {
		k := newKernel(t)
		f := newFake(map[string]any{
			loop.OpVerify + "|" + goal:           notLeaf(0.9),
			loop.OpDecompose + "|" + goal:        cyclic,
			loop.OpDecompose + "|" + goal + "|2": children(child("a", "A", 1), child("b", "B", 1, "a")),
		})
		res := k.run(t, request(goal), k.options(f))
		if res.Outcome != loop.OutcomeAchieved || res.Nodes != 3 {
			t.Fatalf("result %+v\n%s", res, k.flow(t))
		}
		ds := f.called(loop.OpDecompose)
		if len(ds) != 2 || ds[1].Attempt != 2 || len(ds[1].Feedback) < 2 || !strings.HasPrefix(ds[1].Feedback[0], "cycle: a → b → a") ||
			!strings.Contains(ds[1].Feedback[1], "child a has weight 0") {
			t.Fatalf("re-ask: %d decompose calls, feedback %q", len(ds), ds[len(ds)-1].Feedback)
		}
	})
	t.Run("persistent", func(t *testing.T) {
		k := newKernel(t)
		f := newFake(map[string]any{loop.OpVerify + "|" + goal: notLeaf(0.9), loop.OpDecompose: cyclic})
		res := k.run(t, request(goal), k.options(f))
		reqs, err := k.st.Requests(context.Background(), false)
		if res.Outcome != loop.OutcomeWaiting || err != nil || len(reqs) != 1 || reqs[0].Capability != "resolver:decompose" ||
			!strings.Contains(reqs[0].Detail["failed_because"].(string), "after 2 re-asks: cycle: a → b → a") || len(f.called(loop.OpDecompose)) != 3 {
			t.Fatalf("outcome %s, %d decompose calls, requests %+v %v", res.Outcome, len(f.called(loop.OpDecompose)), reqs, err)
		}
	})
}

// Bad requests are refused before anything is written, naming the field.
func TestRunRefusesBadRequestsNamingTheField(t *testing.T) {
	k := newKernel(t)
	f := newFake(nil)
	for _, tc := range []struct {
		edit         func(*loop.Request)
		field, start string
	}{
		{func(r *loop.Request) { r.Goal = " " }, "goal", "is empty"},
		{func(r *loop.Request) { r.BudgetUSD = 0 }, "budget_usd", "0: "},
		{func(r *loop.Request) { r.Time = -1 }, "time", "-1ns: "},
		{func(r *loop.Request) { r.Workers = -1 }, "workers", "-1: "},
		{func(r *loop.Request) { r.TMax = -1 }, "tmax", "-1: "},
		{func(r *loop.Request) { r.Workspace = filepath.Join(t.TempDir(), "missing") }, "workspace", "/"},
	} {
		req := request("Name the queue")
		tc.edit(&req)
		_, err := loop.Run(context.Background(), k.st, req, k.options(f))
		if e, ok := errors.AsType[*option.Error](err); !ok || e.Field != tc.field || !strings.HasPrefix(e.Problem, tc.start) {
			t.Errorf("error %v, want an option error on %s starting %q", err, tc.field, tc.start)
		}
	}
	if len(f.calls) != 0 {
		t.Errorf("%d resolver calls for refused requests", len(f.calls))
	}
	if _, err := loop.Resume(context.Background(), k.st, "", k.options(f)); err == nil || !strings.Contains(err.Error(), "no unfinished run to resume") {
		t.Errorf("resume with no run: %v", err)
	}
	if _, err := loop.Resume(context.Background(), k.st, "feed", k.options(f)); err == nil || !strings.Contains(err.Error(), `no root node "feed"`) {
		t.Errorf("resume of an unknown root: %v", err)
	}
}
