package loop_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/script"
	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/resolver/claudecode"
	"github.com/llmkernels/kernels/solve/store"
)

// The rules a user trusts the loop with — money, time, verification —
// each pinned in process with the fake claude-code-0.

// overdrawn lists the nodes of a run whose paid calls, money handed on and
// holds exceed what they were allocated.
func (k *kernel) overdrawn(t *testing.T, root string) []string {
	t.Helper()
	nodes, err := k.st.TreeNodes(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, n := range nodes {
		b, err := k.st.Balance(context.Background(), n.ID)
		if err != nil {
			t.Fatal(err)
		}
		if b.Spent+b.Reserved > b.Allocated+1e-9 {
			bad = append(bad, fmt.Sprintf("%s: spent $%.6f + held $%.6f of $%.6f", n.Summary, b.Spent, b.Reserved, b.Allocated))
		}
	}
	return bad
}

// jittery wraps the fake with a random pause before each answer and a
// random cost up to the estimate, from one seed: each seed is another
// interleaving of the workers.
type jittery struct {
	*fake
	mu  sync.Mutex
	rng *rand.Rand
}

func (j *jittery) Resolve(ctx context.Context, c *loop.Call) (*loop.Output, error) {
	j.mu.Lock()
	pause := time.Duration(j.rng.IntN(3000)) * time.Microsecond
	cost := j.fake.cost * (0.5 + 0.5*j.rng.Float64())
	j.mu.Unlock()
	time.Sleep(pause)
	out, err := j.fake.Resolve(ctx, c)
	if out != nil {
		out.Cost = cost
	}
	return out, err
}

// No interleaving of eight workers overdraws: across 50 seeds (8 under
// the race detector or -short, and on PostgreSQL), twelve
// siblings short of their share draw on their parent's reserve at once,
// and no node ever spends, hands on or holds more than it was given, nor
// the run more than its budget.
func TestFiftyInterleavingsOfEightWorkersNeverOverdraw(t *testing.T) {
	const goal = "Write twelve blurbs"
	var kids []m
	for i := range 12 {
		kids = append(kids, child(fmt.Sprintf("b%d", i), fmt.Sprintf("Blurb %d", i), 1))
	}
	eachStore(t, func(t *testing.T, dialect string) {
		seeds := 50
		if testing.Short() || raceDetector || dialect == "postgres" {
			seeds = 8 // BenchmarkInterleavings (make bench) runs 50 on SQLite
		}
		drew := 0
		for seed := range seeds {
			k := newKernelOn(t, dialect)
			f := newFake(map[string]any{loop.OpVerify + "|" + goal: notLeaf(0.9), loop.OpDecompose: children(kids...)})
			f.cost = 0.02 // estimated; charged between half and all of it
			j := &jittery{fake: f, rng: rand.New(rand.NewPCG(uint64(seed), 14))}
			o := k.options(f)
			o.Resolvers[loop.ClaudeCodeID] = j
			req := request(goal)
			req.BudgetUSD, req.Workers = 0.3, 8
			res := k.run(t, req, o)
			if bad := k.overdrawn(t, res.RootID); len(bad) > 0 || res.SpentUSD > 0.3+1e-9 {
				t.Fatalf("seed %d: spent $%.4f of $0.30; overdrawn:\n%s", seed, res.SpentUSD, strings.Join(bad, "\n"))
			}
			if strings.Contains(k.flow(t), "HIRE (over_budget)") {
				drew++
			}
		}
		if drew == 0 {
			t.Error("no seed ran out of budget: the test does not test the reserve")
		}
	})
}

// Every resolver call runs under a deadline equal to the node's remaining
// wall time: a call that does not return is cancelled there, charged its
// reservation (its cost is unknown), and the node asks for more time.
func TestACallThatHangsIsCancelledAtTheNodesDeadline(t *testing.T) {
	k := newKernel(t)
	const goal = "Name the queue"
	var cancelled time.Duration
	began := time.Now()
	f := newFake(map[string]any{loop.OpResolve: func(c *loop.Call) (any, error) { return nil, nil }})
	hang := &hanging{fake: f, op: loop.OpResolve, began: began, cancelled: &cancelled}
	o := k.options(f)
	o.Resolvers[loop.ClaudeCodeID] = hang
	req := request(goal)
	req.Time = 2 * time.Second // the fake estimates each call at 1 s
	res := k.run(t, req, o)
	if res.Outcome != loop.OutcomeWaiting || cancelled < time.Second || cancelled > 30*time.Second {
		t.Fatalf("outcome %s; the hanging call was cancelled after %s", res.Outcome, cancelled)
	}
	if !strings.Contains(k.flow(t), "the node's wall time ran out during claude-code-0 resolve") {
		t.Errorf("flow:\n%s", k.flow(t))
	}
	db := k.db(t)
	if n := count(t, db, "SELECT COUNT(*) FROM budget_reservations WHERE operation = 'resolve' AND settled_amount = amount AND status = 'settled'"); n != 1 {
		t.Errorf("the cut-off call was not settled at its reservation")
	}
	if n := count(t, db, `SELECT COUNT(*) FROM budget_ledger l JOIN budget_reservations r ON r.id = l.reservation_id
		WHERE r.operation = 'resolve' AND l.unknown_amount = r.amount AND r.amount > 0`); n != 1 || res.UnknownUSD <= 0 {
		t.Errorf("the cut-off call is not of unknown outcome in the ledger (run: $%v unknown)", res.UnknownUSD)
	}
	if n := k.node(t, res.RootID, goal); n.TimeSpent > 2+1e-6 {
		t.Errorf("the node spent %.3fs of its 2s", n.TimeSpent)
	}
}

// hanging is the fake with one operation that never answers until its
// context ends.
type hanging struct {
	*fake
	op        string
	began     time.Time
	cancelled *time.Duration
}

func (h *hanging) Resolve(ctx context.Context, c *loop.Call) (*loop.Output, error) {
	if c.Op != h.op {
		return h.fake.Resolve(ctx, c)
	}
	<-ctx.Done()
	*h.cancelled = time.Since(h.began)
	return nil, &loop.ResolverError{Mode: "llm_unavailable", Err: ctx.Err()}
}

// A BUILD subgoal's σ_path starts its own chain: the invariants hold when
// the node that needed the tool ends with σ_v 0.8 and its build subgoal
// with 0.9. (The checker computed parent σ_path × σ_v for it too, and
// reported this correct tree as broken.)
func TestABuildSubgoalsSigmaPathStartsItsOwnChain(t *testing.T) {
	k := newKernel(t)
	ws := k.workspace(t)
	const goal, build = "Write the greeting file", "Build resolver: greet"
	judged := func(sigma float64) func(c *loop.Call) (any, error) {
		return func(c *loop.Call) (any, error) {
			var checks []any
			for _, v := range c.Constraints {
				checks = append(checks, m{"ref": v.Ref, "passed": sigma >= 0.7, "sigma": sigma, "detail": "judged"})
			}
			return m{"checks": checks, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one file"}, nil
		}
	}
	f := newFake(map[string]any{
		loop.OpResolve + "|" + goal:       m{"summary": "no file", "text": "hello"},
		loop.OpVerify + "|" + goal + "|1": judged(0.4),
		loop.OpVerify + "|" + goal + "|2": judged(0.4),
		loop.OpVerify + "|" + goal + "|3": judged(0.8),
		loop.OpGap + "|" + goal:           m{"capability_tag": "greet", "resolver_type": "digital", "build_constraints": []string{"writes greeting.txt"}, "rationale": "a tool"},
		loop.OpIdentify + "|" + build:     m{"constraints": []any{}, "required_capabilities": []string{"generate_code"}, "rationale": "the build constraints"},
		loop.OpResolve + "|" + build: m{"summary": "greet.sh", "files": []any{m{"path": "greet.sh", "content": "echo hello > greeting.txt\n"}},
			"tool": m{"label": "greet", "description": "writes greeting.txt", "capabilities": []string{"greet"}, "command": `sh "$SOLVE_TOOL_DIR/greet.sh"`, "test_command": "test -f greet.sh"}},
		loop.OpVerify + "|" + build: judged(0.9),
	})
	req := request(goal)
	req.Workspace, req.TMax = ws, 2
	res := k.run(t, req, k.options(f)) // checks the invariants
	if res.Outcome != loop.OutcomeAchieved {
		t.Fatalf("outcome %s\n%s", res.Outcome, k.flow(t))
	}
	n, b := k.node(t, res.RootID, goal), k.node(t, res.RootID, build)
	if store.Value(n.SigmaPath) != 0.8 || store.Value(b.SigmaV) != 0.9 || store.Value(b.SigmaPath) != 0.9 {
		t.Errorf("σ_path: node %v, build subgoal σ_v %v σ_path %v", store.Value(n.SigmaPath), store.Value(b.SigmaV), store.Value(b.SigmaPath))
	}
}

// The reservation rule's store side: eight goroutines on each of two
// connections (as two processes would be) reserve on one node and its
// parent's reserve at once; the holds never exceed what the two have.
func TestReservationsFromTwoConnectionsNeverOverdraw(t *testing.T) {
	k := newKernel(t)
	ctx := context.Background()
	other, err := store.Open(ctx, k.st.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var parent, node string
	err = k.st.Write(ctx, func(tx *store.Tx) error {
		if parent, err = tx.InsertNode(ctx, store.NewNode{Goal: "p", Summary: "p", TauLocal: 0.7, TauGlobal: 0.5}); err != nil {
			return err
		}
		if node, err = tx.InsertNode(ctx, store.NewNode{Parent: parent, Root: parent, Goal: "n", Summary: "n", TauLocal: 0.7, TauGlobal: 0.5}); err != nil {
			return err
		}
		if err := tx.WriteLedger(ctx, store.LedgerEntry{Node: parent, Event: store.Allocate, Amount: 1, Time: 1000}); err != nil {
			return err
		}
		return tx.Delegate(ctx, parent, node, 0.5, 500, "allocated to child", "from parent")
	})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0.0
	for i := range 16 {
		st := k.st
		if i%2 == 1 {
			st = other
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				r, err := st.Reserve(ctx, store.Hold{Node: node, Parent: parent, Root: parent, Resolver: "r", Op: "op", Owner: "t", Cost: 0.03, Time: 1})
				var denied *store.DeniedError
				if errors.As(err, &denied) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				granted += r.Cost
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	pb, _ := k.st.Balance(ctx, parent)
	nb, _ := k.st.Balance(ctx, node)
	if granted > 1+1e-9 || pb.Spent+pb.Reserved > pb.Allocated+1e-9 || nb.Spent+nb.Reserved > nb.Allocated+1e-9 || math.Abs(nb.Reserved-granted) > 1e-9 {
		t.Errorf("granted $%.4f of $1; parent %+v; node %+v", granted, pb, nb)
	}
	if granted < 0.9 {
		t.Errorf("granted only $%.4f of $1: the reserve was not used", granted)
	}
}

// An LLM request that cannot be sent (here: no model) is a permanent
// error of claude-code-0: the node goes to HIRE saying so, and no call is
// repeated. (It was classified retryable: tried three times, then the run
// stopped as if the API were down.)
func TestAnInvalidLLMRequestIsNotRetried(t *testing.T) {
	k := newKernel(t)
	s, err := script.Parse([]byte(`{"responses": [{"response": {"content": [{"type": "text", "text": "{}"}]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p := script.New(s)
	o := k.options(newFake(nil))
	o.Resolvers[loop.ClaudeCodeID] = claudecode.New(&llm.Client{Provider: p})
	req := request("Name the queue")
	req.Model = ""
	res := k.run(t, req, o)
	reqs, err := k.st.Requests(context.Background(), false)
	if res.Outcome != loop.OutcomeWaiting || err != nil || len(reqs) != 1 || !strings.Contains(reqs[0].Detail["failed_because"].(string), "permanent resolver error (invalid_request)") {
		t.Fatalf("outcome %s, requests %+v %v", res.Outcome, reqs, err)
	}
	if n := len(p.Requests()); n != 0 {
		t.Errorf("%d requests reached the provider", n)
	}
}

// worstCase is an LLM provider billing every answer at the worst the API
// allows: all of max_tokens as output, and a token per byte of the
// request's text as input. Its answers are the fake's, by operation and goal.
type worstCase struct {
	f      *fake
	mu     sync.Mutex
	served int
	garble map[string]int // operation → how many of its first answers are not JSON
}

func (w *worstCase) Messages(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := llm.CheckRequest(req); err != nil {
		return nil, err
	}
	user := ""
	for _, b := range req.Messages[0].Content {
		user += b.Text
	}
	c := &loop.Call{}
	for _, s := range req.System { // the block that names the operation on its first line
		first, _, _ := strings.Cut(s.Text, "\n")
		if _, op, ok := strings.Cut(first, "operation: "); ok {
			c.Op = op
		}
	}
	for _, line := range strings.Split(user, "\n") {
		if g, ok := strings.CutPrefix(line, "Goal: "); ok {
			c.Goal, c.Summary = g, g
			break
		}
	}
	w.f.mu.Lock()
	a := w.f.key(c)
	w.f.mu.Unlock()
	if fn, ok := a.(func(*loop.Call) (any, error)); ok {
		a, _ = fn(c)
	}
	text, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	if w.garble[c.Op] > 0 {
		w.garble[c.Op]--
		text = []byte("Sure! Here is the JSON: {\"oops\"")
	}
	w.mu.Unlock()
	in := len(user)
	for _, b := range req.System {
		in += len(b.Text)
	}
	w.mu.Lock()
	w.served++
	w.mu.Unlock()
	// A token per byte, all of max_tokens; a request with a cache
	// breakpoint has all of its input written to the cache (1.25× input).
	usage := llm.Usage{InputTokens: in, OutputTokens: req.MaxTokens}
	for _, b := range req.System {
		if b.CacheControl != nil {
			usage.InputTokens, usage.CacheCreationInputTokens = 0, in
		}
	}
	return &llm.Response{ID: "msg_worst", Type: "message", Role: llm.RoleAssistant, Model: req.Model, StopReason: llm.StopEndTurn,
		Content: []llm.ContentBlock{llm.TextBlock(string(text))}, Usage: usage}, nil
}

// A call never spends more than was reserved for it, so the budget holds
// even when every answer costs the most the API may bill: eight workers,
// twelve leaves, a budget a fraction of one full-size answer's price. (A
// call was reserved at a typical answer of 1,000 tokens and sent with
// max_tokens 8,000, three times with repairs: one answer overdrew the
// run by several times its budget.)
func TestACallCostingTheMostTheAPIMayBillNeverOverdraws(t *testing.T) {
	const goal = "Write twelve blurbs"
	var kids []m
	for i := range 12 {
		kids = append(kids, child(fmt.Sprintf("b%d", i), fmt.Sprintf("Blurb %d", i), 1))
	}
	for _, budget := range []float64{0.05, 0.5, 3} {
		k := newKernel(t)
		f := newFake(map[string]any{loop.OpVerify + "|" + goal: notLeaf(0.9), loop.OpDecompose: children(kids...)})
		w := &worstCase{f: f}
		o := k.options(f)
		o.Resolvers[loop.ClaudeCodeID] = claudecode.New(&llm.Client{Provider: w})
		req := request(goal)
		req.Model, req.BudgetUSD, req.Workers = "claude-sonnet-4-5", budget, 8
		res := k.run(t, req, o)
		if bad := k.overdrawn(t, res.RootID); len(bad) > 0 || res.SpentUSD > budget+1e-9 {
			t.Fatalf("budget $%.2f: spent $%.4f (%s, %d answers); overdrawn:\n%s", budget, res.SpentUSD, res.Outcome, w.served, strings.Join(bad, "\n"))
		}
		if w.served == 0 {
			t.Fatalf("budget $%.2f: no answer was served", budget)
		}
		t.Logf("budget $%.2f: %s, spent $%.4f in %d answers", budget, res.Outcome, res.SpentUSD, w.served)
	}
}

// A verifier that judges one constraint twice, failing it once and
// passing it once, has failed it: a failing verdict is never outweighed by
// a passing one, whatever their σ (the lower σ won, and a "passed, 0.9"
// beside a "failed, 0.95" passed the constraint).
func TestContradictingVerdictsOnOneConstraintFailIt(t *testing.T) {
	k := newKernel(t)
	verifies := 0
	f := newFake(map[string]any{loop.OpVerify: func(c *loop.Call) (any, error) {
		verifies++
		if verifies == 1 {
			return m{"checks": []any{m{"ref": "c1", "passed": false, "sigma": 0.95, "detail": "the haiku has four lines"},
				m{"ref": "c1", "passed": true, "sigma": 0.9, "detail": "fine"}}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "small"}, nil
		}
		return leafOK(0.9), nil
	}})
	res := k.run(t, request("Write a haiku about queues"), k.options(f))
	if res.Outcome != loop.OutcomeAchieved || len(f.called(loop.OpResolve)) != 2 {
		t.Fatalf("outcome %s after %d resolve calls; want the first attempt UNSAT and a retry", res.Outcome, len(f.called(loop.OpResolve)))
	}
	if fb := f.called(loop.OpResolve)[1].Attempts; len(fb) != 1 || !strings.Contains(strings.Join(fb[0].Violations, " "), "four lines") {
		t.Errorf("the retry saw %+v; want the failing verdict", fb)
	}
}

// One malformed answer at any step is asked again, not sent to a human:
// every operation's first answer here is not JSON, and the goal is still
// achieved, each re-ask reserved and paid like any call.
func TestAMalformedAnswerAtEveryStepIsAskedAgain(t *testing.T) {
	const goal = "Write two blurbs"
	k := newKernel(t)
	f := newFake(map[string]any{loop.OpVerify + "|" + goal: notLeaf(0.9), loop.OpDecompose: children(child("a", "Blurb a", 1), child("b", "Blurb b", 1))})
	garble := map[string]int{}
	for _, op := range []string{loop.OpIdentify, loop.OpSelect, loop.OpRoute, loop.OpResolve, loop.OpVerify, loop.OpDecompose, loop.OpConsistency, loop.OpAssemble} {
		garble[op] = 1
	}
	w := &worstCase{f: f, garble: garble}
	o := k.options(f)
	o.Resolvers[loop.ClaudeCodeID] = claudecode.New(&llm.Client{Provider: w})
	req := request(goal)
	req.Model = "claude-haiku-4-5"
	res := k.run(t, req, o)
	if res.Outcome != loop.OutcomeAchieved {
		t.Fatalf("outcome %s; flow:\n%s", res.Outcome, k.flow(t))
	}
	if bad := k.overdrawn(t, res.RootID); len(bad) > 0 || res.LLMCalls != w.served {
		t.Errorf("%d LLM calls recorded, %d served; overdrawn: %v", res.LLMCalls, w.served, bad)
	}
}

// A logic constraint whose expression cannot be evaluated (a unit glued to
// a number, a metric that does not exist) is caught when it is proposed:
// identify is asked again with the parser's words, and what is still not
// an expression is judged by the verifier as written. (It failed every
// verification, so every resolve attempt was paid for and rejected for a
// typo no attempt could fix.)
func TestAnUnevaluableExpressionIsAskedAgainWhenProposed(t *testing.T) {
	for _, fixed := range []bool{true, false} {
		k := newKernel(t)
		identifies := 0
		f := newFake(map[string]any{
			loop.OpIdentify: func(c *loop.Call) (any, error) {
				identifies++
				e1, e2 := "cost_usd <= $0.5", "spend_cents < 50"
				if identifies > 1 && fixed {
					e1, e2 = "cost_usd <= 0.5", "cost_usd * 100 < 50"
				}
				return m{"constraints": []any{m{"type": "logic", "domain": "cost", "title": "cheap", "expr": e1},
					m{"type": "logic", "domain": "cost", "title": "cheaper", "expr": e2}},
					"required_capabilities": []string{"generate_text"}, "rationale": "test"}, nil
			},
			loop.OpSelect: m{"selected": []string{"c1", "c2"}, "rationale": "test"},
			loop.OpVerify: judgeAll(0.9, true),
		})
		res := k.run(t, request("Write a haiku about queues"), k.options(f))
		if res.Outcome != loop.OutcomeAchieved || len(f.called(loop.OpResolve)) != 1 || identifies != 2 {
			t.Fatalf("fixed %v: outcome %s after %d identify and %d resolve calls; flow:\n%s", fixed, res.Outcome, identifies, len(f.called(loop.OpResolve)), k.flow(t))
		}
		again := f.called(loop.OpIdentify)[1]
		if fb := strings.Join(again.Feedback, "\n"); !strings.Contains(fb, "'$'") || !strings.Contains(fb, "spend_cents") {
			t.Errorf("fixed %v: identify asked again with %q", fixed, fb)
		}
		// Fixed: the kernel evaluates both; not: the verifier judges them as
		// semantic constraints whose rubric is the expression as written.
		verify := f.called(loop.OpVerify)[0]
		kernel := len(verify.Checks) == 2 && verify.Constraints[0].Type == "logic"
		judged := len(verify.Checks) == 0 && verify.Constraints[0].Type == "semantic" && strings.Contains(string(verify.Constraints[0].Payload), "$0.5")
		if (fixed && !kernel) || (!fixed && !judged) {
			t.Errorf("fixed %v: the verifier was shown %+v with checks %+v", fixed, verify.Constraints, verify.Checks)
		}
	}
}

// An answer whose file would land outside the workspace through a symbolic
// link (or names no file, or names a directory) is an UNSAT attempt saying
// why, retried; nothing outside changes and the run goes on. (The file was
// written through the link; a path the workspace refused stopped the run.)
func TestAnAnswerWritingThroughALinkOutOfTheWorkspaceIsRejected(t *testing.T) {
	for _, bad := range []m{{"path": "out/pwned.txt", "content": "x"}, {"path": "", "content": "x"},
		{"path": "sub", "content": "over a directory"}, {"path": "sub", "deleted": true}} {
		k := newKernel(t)
		ws := k.workspace(t)
		outside := filepath.Join(k.dir, "outside")
		for _, d := range []string{outside, filepath.Join(ws, "sub", "deep")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(outside, filepath.Join(ws, "out")); err != nil {
			t.Fatal(err)
		}
		resolves := 0
		f := newFake(map[string]any{
			loop.OpResolve: func(c *loop.Call) (any, error) {
				file := m{"path": "ok.txt", "content": "x"}
				if resolves++; resolves == 1 {
					file = bad
				}
				return m{"summary": "files", "files": []any{file}}, nil
			},
			loop.OpVerify: judgeAll(0.9, true),
		})
		req := request("Write a file")
		req.Workspace = ws
		res := k.run(t, req, k.options(f))
		if res.Outcome != loop.OutcomeAchieved || resolves != 2 {
			t.Fatalf("%v: outcome %s after %d resolve calls; flow:\n%s", bad, res.Outcome, resolves, k.flow(t))
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 0 {
			t.Errorf("%v: %d files written outside the workspace", bad, len(entries))
		}
		if fi, err := os.Stat(filepath.Join(ws, "sub", "deep")); err != nil || !fi.IsDir() {
			t.Errorf("%v: the directory went: %v", bad, err)
		}
		if fb := f.called(loop.OpResolve)[1].Attempts; len(fb) != 1 || !strings.Contains(fb[0].FailureMode, "invalid_files") {
			t.Errorf("%v: the retry saw %+v", bad, fb)
		}
	}
}

// taker is the fake with one call held until the run's lease has been
// taken over by another process (a process stopped with Ctrl-Z past its
// lease's expiry, then resumed elsewhere).
type taker struct {
	*fake
	once  sync.Once
	taken chan struct{}
	take  func(root string)
	fail  bool // the call that sees the takeover fails retryably
}

func (t *taker) Resolve(ctx context.Context, c *loop.Call) (*loop.Output, error) {
	if c.Op == loop.OpResolve {
		first := false
		t.once.Do(func() { t.take(c.Node); close(t.taken); first = true })
		if first && t.fail {
			t.fake.mu.Lock()
			t.fake.calls = append(t.fake.calls, *c)
			t.fake.mu.Unlock()
			return nil, &loop.ResolverError{Mode: "llm_unavailable", Err: errors.New("overloaded"), Cost: 0.01}
		}
	}
	return t.fake.Resolve(ctx, c)
}

// A process that lost its run's lease while it was stopped commits
// nothing more and reserves nothing more once it wakes: every step
// commit and every reservation checks the lease in its transaction, so
// two processes never both advance one run. (The loser went on until its
// next renewal, up to ten seconds of steps and paid calls beside the
// process that took the run over.)
func TestAProcessThatLostItsLeaseCommitsAndSpendsNothingMore(t *testing.T) {
	k := newKernel(t)
	f := newFake(nil)
	var reservationsAtTakeover int
	tk := &taker{fake: f, taken: make(chan struct{})}
	tk.take = func(root string) {
		ctx := context.Background()
		host, _ := os.Hostname()
		dead := func(int) bool { return false } // expired, or presumed gone
		if err := k.st.AcquireLease(ctx, root, "other-process", host, 1, time.Minute, dead); err != nil {
			t.Error(err)
		}
		open, _ := k.st.OpenReservations(ctx, root)
		reservationsAtTakeover = len(open)
	}
	o := k.options(f)
	o.Resolvers[loop.ClaudeCodeID] = tk
	_, err := loop.Run(context.Background(), k.st, request("Write a haiku about queues"), o)
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("the process that lost its lease: %v; want ErrLeaseLost", err)
	}
	if reservationsAtTakeover != 1 {
		t.Fatalf("%d reservations open at the takeover, want the resolve call's", reservationsAtTakeover)
	}
	// Its call in flight is settled (the money was spent); nothing after it.
	if n := len(f.calls); n != 4 {
		t.Errorf("%d calls made; want identify, select, route, resolve and nothing after the takeover", n)
	}
	root := f.calls[0].Node
	if n := k.node(t, root, "Write a haiku about queues"); n.Status != store.StatusResolving || n.AttemptCount != 0 {
		t.Errorf("the loser committed its step: %s, %d attempts", n.Status, n.AttemptCount)
	}

	// A retry within the step (no commit in between) is not reserved, and
	// not tried again: the lease is gone.
	k = newKernel(t)
	f = newFake(nil)
	tk = &taker{fake: f, taken: make(chan struct{}), fail: true}
	tk.take = func(root string) {
		host, _ := os.Hostname()
		if err := k.st.AcquireLease(context.Background(), root, "other-process", host, 1, time.Minute, func(int) bool { return false }); err != nil {
			t.Error(err)
		}
	}
	o = k.options(f)
	o.Resolvers[loop.ClaudeCodeID] = tk
	_, err = loop.Run(context.Background(), k.st, request("Write a haiku about queues"), o)
	if !errors.Is(err, store.ErrLeaseLost) || len(f.called(loop.OpResolve)) != 1 {
		t.Fatalf("a retry after the takeover: %v after %d resolve calls; want ErrLeaseLost after 1", err, len(f.called(loop.OpResolve)))
	}
}

// A selection naming a constraint that is not eligible keeps the ones it
// names that are, and says what it ignored: one stray ref is no reason to
// wait for a human. (It sent the node to HIRE as a resolver error.)
func TestASelectionNamingAnUnknownConstraintIgnoresIt(t *testing.T) {
	k := newKernel(t)
	f := newFake(map[string]any{loop.OpSelect: m{"selected": []string{"c1", "c9", "budget"}, "rationale": "test"}})
	res := k.run(t, request("Write a haiku about queues"), k.options(f))
	if res.Outcome != loop.OutcomeAchieved {
		t.Fatalf("outcome %s; flow:\n%s", res.Outcome, k.flow(t))
	}
	if flow := k.flow(t); !strings.Contains(flow, "ignored c9, budget") {
		t.Errorf("the flow does not say what was ignored:\n%s", flow)
	}
}

// A consistency answer's conflicts are located by the leaves they name
// that exist: a ref naming no leaf is ignored (it made the conflict's
// least common ancestor the root, so one stray ref reopened and re-paid
// the whole tree), a conflict listed twice reopens its ancestor once, and
// a conflict inside another's subtree is covered by it.
func TestAConflictNamingAnUnknownLeafReopensOnlyWhatItLocates(t *testing.T) {
	k := newKernel(t)
	const root, api, a1, a2, ops = "Ship the service", "Write the API", "Write the handlers", "Write the schema", "Write the runbook"
	round := 0
	f := newFake(map[string]any{
		loop.OpVerify + "|" + root:    notLeaf(0.9),
		loop.OpVerify + "|" + api:     notLeaf(0.9),
		loop.OpDecompose + "|" + root: children(child("api", api, 1), child("ops", ops, 1)),
		loop.OpDecompose + "|" + api:  children(child("h", a1, 1), child("s", a2, 1)),
		loop.OpConsistency: func(c *loop.Call) (any, error) {
			if round++; round > 1 {
				return m{"verdict": "SAT", "conflicts": []any{}}, nil
			}
			ref := map[string]string{}
			for _, l := range c.Leaves {
				ref[l.Summary] = l.Ref
			}
			coupling := []any{m{"type": "semantic", "domain": "consistency", "title": "one id type", "rubric": "uuid everywhere"}}
			pair := []string{ref[a1], ref[a2]}
			return m{"verdict": "UNSAT", "conflicts": []any{
				m{"leaves": pair, "coupling_constraints": coupling, "reason": "int vs uuid"},
				m{"leaves": pair, "coupling_constraints": coupling, "reason": "int vs uuid (again)"},
				m{"leaves": []string{ref[a1], "l99"}, "coupling_constraints": []any{}, "reason": "a stray ref"},
				m{"leaves": []string{"l98"}, "coupling_constraints": []any{}, "reason": "nothing known"},
			}}, nil
		},
	})
	res := k.run(t, request(root), k.options(f))
	if res.Outcome != loop.OutcomeAchieved || round != 2 {
		t.Fatalf("outcome %s after %d consistency checks; flow:\n%s", res.Outcome, round, k.flow(t))
	}
	flow := k.flow(t)
	if n := strings.Count(flow, "REOPENED"); n != 1 || strings.Contains(flow, "INVALIDATED (ancestor "+store.Short(res.RootID)) {
		t.Errorf("%d reopens, want the API node's only; flow:\n%s", n, flow)
	}
	if n := len(f.called(loop.OpDecompose)); n != 3 {
		t.Errorf("%d decompositions; want the root's, the API's and the API's again", n)
	}
}

// Conflicts that name no leaf at all reopen nothing: the consistency
// check is asked again (a round of its own, so it cannot go on forever).
func TestConflictsNamingNoLeafAskTheCheckAgain(t *testing.T) {
	k := newKernel(t)
	const goal = "Ship the feature"
	round := 0
	f := newFake(map[string]any{
		loop.OpVerify + "|" + goal: notLeaf(0.9),
		loop.OpDecompose:           children(child("a", "Write the code", 1), child("b", "Write the docs", 1)),
		loop.OpConsistency: func(c *loop.Call) (any, error) {
			if round++; round > 1 {
				return m{"verdict": "SAT", "conflicts": []any{}}, nil
			}
			return m{"verdict": "UNSAT", "conflicts": []any{m{"leaves": []string{"leaf-1", "x"}, "coupling_constraints": []any{}, "reason": "?"}}}, nil
		},
	})
	res := k.run(t, request(goal), k.options(f))
	flow := k.flow(t)
	if res.Outcome != loop.OutcomeAchieved || round != 2 || strings.Contains(flow, "REOPENED") || !strings.Contains(flow, "name no leaf (leaf-1, x)") {
		t.Fatalf("outcome %s after %d consistency checks; flow:\n%s", res.Outcome, round, flow)
	}
}

// The --interactive extraction dialogue, made before the root exists, is
// capped at the run's budget like any call at its reservation: an answer
// using all of max_tokens does not overdraw a tiny budget. (It was only
// pre-checked against its estimate, then sent uncapped.)
func TestTheExtractionDialogueNeverCostsMoreThanTheBudget(t *testing.T) {
	k := newKernel(t)
	f := newFake(map[string]any{loop.OpSynthesize: m{"candidates": []any{m{"type": "semantic", "domain": "quality", "title": "short"}}, "questions": []string{}}})
	w := &worstCase{f: f}
	o := k.options(f)
	o.Resolvers[loop.ClaudeCodeID] = claudecode.New(&llm.Client{Provider: w})
	var term strings.Builder
	o.In, o.Progress = strings.NewReader("y\n"), &term
	req := request("Write a haiku about queues")
	req.Model, req.BudgetUSD, req.Interactive = "claude-sonnet-4-5", 0.05, true
	res := k.run(t, req, o)
	if bad := k.overdrawn(t, res.RootID); len(bad) > 0 || res.SpentUSD > 0.05+1e-9 || w.served == 0 {
		t.Fatalf("spent $%.4f of $0.05 in %d answers (%s); overdrawn: %v\n%s", res.SpentUSD, w.served, res.Outcome, bad, term.String())
	}
}

// unsettling is the fake with the store failing to settle its first
// resolve call (its reservation row is made unfindable while the call
// runs: a database error at the worst moment).
type unsettling struct {
	*fake
	once sync.Once
	db   *sql.DB
	t    *testing.T
}

func (u *unsettling) Resolve(ctx context.Context, c *loop.Call) (*loop.Output, error) {
	if c.Op == loop.OpResolve {
		u.once.Do(func() {
			if _, err := u.db.Exec(`UPDATE budget_reservations SET id = id || '-lost' WHERE status = 'open'`); err != nil {
				u.t.Error(err)
			}
		})
	}
	return u.fake.Resolve(ctx, c)
}

// A paid call whose settlement fails is not made again: the run stops
// with its reservation open (resume settles it at its hold), rather than
// retrying, which paid for the same call twice.
func TestACallThatCouldNotBeSettledIsNotMadeAgain(t *testing.T) {
	k := newKernel(t)
	f := newFake(nil)
	u := &unsettling{fake: f, db: k.db(t), t: t}
	o := k.options(f)
	o.Resolvers[loop.ClaudeCodeID] = u
	_, err := loop.Run(context.Background(), k.st, request("Write a haiku about queues"), o)
	if err == nil || len(f.called(loop.OpResolve)) != 1 {
		t.Fatalf("run: %v after %d resolve calls; want it stopped after 1", err, len(f.called(loop.OpResolve)))
	}
}

// A resolver reporting a negative or not-a-number cost, or estimating one,
// never creates money: estimates below zero hold nothing, and a call's
// cost below zero (or NaN) is recorded at what was held for it.
func TestANegativeOrNaNCostCreatesNoMoney(t *testing.T) {
	for _, v := range []float64{-1, math.NaN(), math.Inf(-1)} {
		k := newKernel(t)
		f := newFake(nil)
		f.costOf = func(*loop.Call) float64 { return v }
		f.estOf = func(*loop.Call) float64 { return v }
		req := request("Write a haiku about queues")
		req.BudgetUSD = 0.05
		res := k.run(t, req, k.options(f))
		db := k.db(t)
		if n := count(t, db, `SELECT COUNT(*) FROM budget_ledger WHERE amount < 0 OR amount IS NULL OR amount != amount`); n != 0 || res.SpentUSD < 0 || math.IsNaN(res.SpentUSD) {
			t.Errorf("cost %v: %d ledger rows below zero or not a number; spent $%v", v, n, res.SpentUSD)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM nodes WHERE budget_reserved < 0 OR budget_spent < 0 OR budget_reserved IS NULL OR budget_spent IS NULL`); n != 0 {
			t.Errorf("cost %v: %d nodes with a negative or missing spend or hold", v, n)
		}
	}
}

// A call whose request got an answer that may have been billed (a 500,
// no answer, an error in the stream) cost what no one knows: it is
// settled at its reservation, marked unknown, and the call is asked again
// under a new one.
func TestACallThatMayHaveBeenBilledIsSettledAtItsHold(t *testing.T) {
	k := newKernel(t)
	const goal = "Name the queue"
	f := newFake(nil)
	o := k.options(f)
	o.Resolvers[loop.ClaudeCodeID] = &billedOnce{fake: f, op: loop.OpResolve}
	res := k.run(t, request(goal), o)
	db := k.db(t)
	if n := count(t, db, `SELECT COUNT(*) FROM budget_ledger l JOIN budget_reservations r ON r.id = l.reservation_id
		WHERE r.operation = 'resolve' AND l.unknown_amount = r.amount AND r.amount > 0`); n != 1 || res.UnknownUSD <= 0 {
		t.Errorf("the call that may have been billed is not of unknown outcome in the ledger (run: $%v unknown, outcome %s)", res.UnknownUSD, res.Outcome)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM budget_reservations WHERE operation = 'resolve'"); n < 2 {
		t.Errorf("the call was not asked again: %d resolve reservations", n)
	}
}

// billedOnce is the fake whose first call of op fails as a request that
// may have been billed, having cost nothing it knows of.
type billedOnce struct {
	*fake
	op   string
	mu   sync.Mutex
	done bool
}

func (b *billedOnce) Resolve(ctx context.Context, c *loop.Call) (*loop.Output, error) {
	b.mu.Lock()
	first := c.Op == b.op && !b.done
	b.done = b.done || first
	b.mu.Unlock()
	if !first {
		return b.fake.Resolve(ctx, c)
	}
	return nil, &loop.ResolverError{Mode: "llm_unavailable", Err: errors.New("500 api_error"), MaybeBilled: true}
}
