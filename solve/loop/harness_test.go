package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmkernels/kernels/internal/pgtest"
	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/record"
	"github.com/llmkernels/kernels/solve/resolver/codex"
	"github.com/llmkernels/kernels/solve/resolver/selfmodel"
	"github.com/llmkernels/kernels/solve/resolver/tool"
	"github.com/llmkernels/kernels/solve/store"
	"github.com/llmkernels/kernels/solve/workspace"
)

// The loop's rules, tested in process: the real engine, store, self-model-0,
// codex-tools-0 and tool resolvers, with a fake claude-code-0 whose answers
// a test scripts by operation, goal and attempt.

type m = map[string]any

// fake stands in for claude-code-0.
type fake struct {
	mu      sync.Mutex
	answers map[string]any // "op|goal|attempt", "op|goal" (goal or summary) or "op": an answer, an error, or func(*loop.Call) (any, error)
	cost    float64        // metered cost of every call
	costOf  func(c *loop.Call) float64
	estOf   func(c *loop.Call) float64
	calls   []loop.Call
}

func newFake(answers map[string]any) *fake {
	f := &fake{answers: map[string]any{
		loop.OpIdentify: m{"constraints": []any{m{"type": "semantic", "domain": "quality", "title": "complete", "rubric": "nothing missing"}},
			"required_capabilities": []string{"generate_code"}, "rationale": "test"},
		loop.OpSelect:      m{"selected": []string{"c1"}, "rationale": "test"},
		loop.OpRoute:       m{"resolver_id": loop.ClaudeCodeID, "capability": "generate_code", "rationale": "test"},
		loop.OpResolve:     func(c *loop.Call) (any, error) { return m{"summary": "done: " + c.Summary, "text": c.Goal}, nil },
		loop.OpVerify:      leafOK(0.9),
		loop.OpConsistency: m{"verdict": "SAT", "conflicts": []any{}},
		loop.OpAssemble:    m{"summary": "assembled"},
	}, cost: 0.01}
	for k, v := range answers {
		f.answers[k] = v
	}
	return f
}

func leafOK(sigma float64) m {
	return m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": sigma, "detail": "ok"}}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "small"}
}

func notLeaf(sigma float64) m {
	return m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": sigma, "detail": "plausible"}}, "is_leaf": false, "leaf_reason": "too big"}
}

func unsat(sigma float64, why string) m {
	return m{"checks": []any{m{"ref": "c1", "passed": false, "sigma": sigma, "detail": why}}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "small", "feedback": "fix: " + why}
}

// judgeAll answers a verify call with a verdict on every constraint it is
// given (passed, at sigma).
func judgeAll(sigma float64, leaf bool) func(c *loop.Call) (any, error) {
	return func(c *loop.Call) (any, error) {
		var checks []any
		for _, v := range c.Constraints {
			checks = append(checks, m{"ref": v.Ref, "passed": true, "sigma": sigma, "detail": "judged"})
		}
		return m{"checks": checks, "is_leaf": leaf, "leaf_kind": "atomic", "leaf_reason": "judged"}, nil
	}
}

func children(cs ...m) m { return m{"children": cs, "rationale": "test"} }

func child(ref, goal string, weight float64, deps ...string) m {
	if deps == nil {
		deps = []string{}
	}
	return m{"ref": ref, "goal": goal, "summary": goal, "weight": weight, "depends_on": deps}
}

func (f *fake) key(c *loop.Call) any {
	for _, k := range []string{fmt.Sprintf("%s|%s|%d", c.Op, c.Goal, c.Attempt), c.Op + "|" + c.Goal,
		fmt.Sprintf("%s|%s|%d", c.Op, c.Summary, c.Attempt), c.Op + "|" + c.Summary, c.Op} {
		if a, ok := f.answers[k]; ok {
			return a
		}
	}
	return fmt.Errorf("fake claude-code-0: no answer for %s on %q (attempt %d)", c.Op, c.Goal, c.Attempt)
}

func (f *fake) Estimate(ctx context.Context, c *loop.Call) (float64, float64) {
	if f.estOf != nil {
		return f.estOf(c), 1
	}
	return f.cost, 1
}

func (f *fake) Resolve(ctx context.Context, c *loop.Call) (*loop.Output, error) {
	f.mu.Lock()
	f.calls = append(f.calls, *c)
	a := f.key(c)
	f.mu.Unlock()
	if fn, ok := a.(func(*loop.Call) (any, error)); ok {
		var err error
		if a, err = fn(c); err != nil {
			return nil, err
		}
	}
	if err, ok := a.(error); ok {
		return nil, err
	}
	data, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	cost := f.cost
	if f.costOf != nil {
		cost = f.costOf(c)
	}
	return &loop.Output{Answer: data, Cost: cost, Seconds: 0.5, LLMCalls: 1}, nil
}

// called lists "op goal" of every call, in order.
func (f *fake) called(op string) []loop.Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []loop.Call
	for _, c := range f.calls {
		if c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

func TestMain(m *testing.M) { pgtest.Main(m) }

// kernel is a kernel.db in a temp dir, or a PostgreSQL database (and a
// temp dir for workspaces).
type kernel struct {
	st  *store.Store
	dir string
}

func newKernel(t *testing.T) *kernel {
	t.Helper()
	return newKernelOn(t, "sqlite")
}

// newKernelOn is a fresh kernel on the store named: "sqlite" or
// "postgres" (internal/pgtest).
func newKernelOn(t *testing.T, dialect string) *kernel {
	t.Helper()
	dir := t.TempDir()
	db := filepath.Join(dir, "kernel.db")
	if dialect == "postgres" {
		db = pgtest.New(t)
	}
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &kernel{st: st, dir: dir}
}

// eachStore runs f as subtests "sqlite" and "postgres".
func eachStore(t *testing.T, f func(t *testing.T, dialect string)) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) { f(t, d) })
	}
}

// workspace is an empty workspace directory beside kernel.db.
func (k *kernel) workspace(t *testing.T) string {
	t.Helper()
	ws := filepath.Join(k.dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return ws
}

// options wires the fake and the real resolvers, as the solve facade does.
func (k *kernel) options(f *fake) loop.Options {
	return loop.Options{Resolvers: map[string]loop.Resolver{loop.ClaudeCodeID: f, loop.SelfModelID: selfmodel.New(k.st), loop.CodexToolsID: codex.New(workspace.Sandbox{})},
		Tool: func(e record.Resolver) (loop.Resolver, error) { return tool.New(k.st, e, workspace.Sandbox{}), nil }}
}

func request(goal string) loop.Request {
	return loop.Request{Goal: goal, BudgetUSD: 5, Time: time.Hour, Model: "test"}
}

// run runs a goal and checks the spec's invariants after it.
func (k *kernel) run(t *testing.T, req loop.Request, o loop.Options) *loop.Result {
	t.Helper()
	res, err := loop.Run(context.Background(), k.st, req, o)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	k.invariants(t, res.RootID)
	return res
}

func (k *kernel) invariants(t *testing.T, root string) {
	t.Helper()
	bad, err := loop.CheckInvariants(context.Background(), k.st, root)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("invariants violated:\n%s", strings.Join(bad, "\n"))
	}
}

// flow is the run's tier-1 log, one line per row.
func (k *kernel) flow(t *testing.T) string {
	t.Helper()
	logs, err := k.st.Logs(context.Background(), 1, "")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range logs {
		b.WriteString(l.Summary + "\n")
	}
	return b.String()
}

// node is the live node of a root's tree with the summary.
func (k *kernel) node(t *testing.T, root, summary string) *store.Node {
	t.Helper()
	nodes, err := k.st.TreeNodes(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Summary == summary && !n.Invalidated {
			return n
		}
	}
	t.Fatalf("no live node %q", summary)
	return nil
}
