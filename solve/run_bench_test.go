package solve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmkernels/kernels/solve"
	"github.com/llmkernels/kernels/solve/loop"
)

// treeResolver stands in for claude-code-0 in the loop's benchmarks: it
// answers every operation at once (or after sleep), so what is measured
// is the kernel (dispatch, budget gate, SQLite commits, KG queries). A
// goal "tree F1 F2 …" decomposes into F1 children "tree F2 …"; "tree"
// alone is a leaf. It records when each call returns.
type treeResolver struct {
	sleep time.Duration
	mu    sync.Mutex
	ends  []time.Time
	begun []time.Time
}

func (r *treeResolver) Estimate(ctx context.Context, c *loop.Call) (float64, float64) {
	return 1e-6, 1
}

func (r *treeResolver) Resolve(ctx context.Context, c *loop.Call) (*loop.Output, error) {
	r.mu.Lock()
	r.begun = append(r.begun, time.Now())
	r.mu.Unlock()
	if r.sleep > 0 {
		time.Sleep(r.sleep)
	}
	fan := strings.Fields(c.Goal)[1:]
	var a any
	switch c.Op {
	case loop.OpIdentify:
		a = m{"constraints": []any{m{"type": "semantic", "domain": "quality", "title": "complete", "rubric": "nothing missing"}}, "required_capabilities": []string{"generate_code"}, "rationale": "bench"}
	case loop.OpSelect:
		a = m{"selected": []string{"c1"}, "rationale": "bench"}
	case loop.OpRoute:
		a = m{"resolver_id": loop.ClaudeCodeID, "capability": "generate_code", "rationale": "bench"}
	case loop.OpResolve:
		a = m{"summary": "done: " + c.Summary, "text": c.Goal}
	case loop.OpVerify:
		a = m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": 0.99, "detail": "ok"}}, "is_leaf": len(fan) == 0, "leaf_kind": "atomic", "leaf_reason": "bench"}
	case loop.OpDecompose:
		n, _ := strconv.Atoi(fan[0])
		rest := strings.Join(append([]string{"tree"}, fan[1:]...), " ")
		var children []any
		for i := range n {
			children = append(children, m{"ref": fmt.Sprintf("k%d", i), "goal": rest, "summary": fmt.Sprintf("%s · %s/%d", c.Summary, rest, i), "weight": 1, "depends_on": []string{}})
		}
		a = m{"children": children, "rationale": "bench"}
	case loop.OpConsistency:
		a = m{"verdict": "SAT", "conflicts": []any{}}
	case loop.OpAssemble:
		a = m{"summary": "assembled"}
	default:
		return nil, fmt.Errorf("bench resolver: operation %s", c.Op)
	}
	data, _ := json.Marshal(a)
	r.mu.Lock()
	r.ends = append(r.ends, time.Now())
	r.mu.Unlock()
	return &loop.Output{Answer: data, Cost: 1e-6, Seconds: r.sleep.Seconds()}, nil
}

// runTree runs a goal to completion with the tree resolver in a fresh kernel.db.
func runTree(b *testing.B, goal string, r *treeResolver, workers int) *loop.Result {
	b.Helper()
	ctx := context.Background()
	k, err := solve.Open(ctx, filepath.Join(b.TempDir(), "kernel.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	res, err := k.Run(ctx, loop.Request{Goal: goal, BudgetUSD: 1000, Time: 1000 * time.Hour, Workers: workers, Model: "bench"},
		solve.Options{Resolvers: map[string]loop.Resolver{loop.ClaudeCodeID: r}})
	if err != nil {
		b.Fatal(err)
	}
	if res.Outcome != loop.OutcomeAchieved {
		b.Fatalf("outcome %s", res.Outcome)
	}
	return res
}

// BenchmarkDispatchStep is the kernel's overhead per node step with an
// instant resolver and one worker: the time from one resolver call's
// return to the next call's start (load the node, budget session, KG
// history, commit, schedule). Target: p50 under 2 ms on SQLite.
func BenchmarkDispatchStep(b *testing.B) {
	var gaps []time.Duration
	for b.Loop() {
		r := &treeResolver{}
		runTree(b, "tree 20", r, 1)
		for i := 1; i < len(r.begun); i++ {
			gaps = append(gaps, r.begun[i].Sub(r.ends[i-1]))
		}
	}
	slices.Sort(gaps)
	b.ReportMetric(float64(gaps[len(gaps)/2].Microseconds())/1000, "ms/step-p50")
	b.ReportMetric(float64(gaps[len(gaps)*9/10].Microseconds())/1000, "ms/step-p90")
}

// BenchmarkTree10000 runs a 10,101-node tree (a root, 100 children, 100
// leaves under each) to completion with an instant resolver, one worker.
func BenchmarkTree10000(b *testing.B) {
	for b.Loop() {
		res := runTree(b, "tree 100 100", &treeResolver{}, 1)
		b.ReportMetric(float64(res.Nodes), "nodes")
	}
}

// BenchmarkWorkers runs a wide tree (8 leaves) with a resolver that
// sleeps 200 ms per call, with 1 and 8 workers, and reports wall time
// over the critical path (13 sequential calls: 6 on the root, 5 on a
// leaf, consistency and assembly = 2.6 s). Target with 8 workers: ≤ 1.3.
func BenchmarkWorkers(b *testing.B) {
	const sleep = 200 * time.Millisecond
	critical := 13 * sleep
	for _, w := range []int{1, 8} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			for b.Loop() {
				began := time.Now()
				runTree(b, "tree 8", &treeResolver{sleep: sleep}, w)
				wall := time.Since(began)
				b.ReportMetric(wall.Seconds(), "wall-s")
				b.ReportMetric(wall.Seconds()/critical.Seconds(), "wall/critical-path")
			}
		})
	}
}
