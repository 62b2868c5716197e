package solve_test

import (
	"context"
	"testing"
	"time"

	"github.com/llmkernels/kernels/internal/pgtest"
	"github.com/llmkernels/kernels/solve"
	"github.com/llmkernels/kernels/solve/loop"
)

// BenchmarkRemoteStepCostFlat is BenchmarkStepCostFlat for solve run
// --remote: the coordinator and one worker (solve.Kernel.Work) in this
// process, on PostgreSQL (internal/pgtest), one step in flight, the tree
// resolver in place of claude-code-0. The tree is a root, 50 children and
// 60 leaves under each (3,051 nodes): the children's first five steps run
// while the tree has 51 nodes, the leaves' once it has 3,051. It compares
// the kernel's time from one call's return to the next call's start at
// 50 to 111 nodes with that at 3,000 or more (the run is stopped after
// 300 such steps). Target: within 1.3× (the coordinator applies each
// step's result to its view, as the single-machine loop does, instead of
// reading the tree again).
func BenchmarkRemoteStepCostFlat(b *testing.B) {
	const large, samples = 3000, 300
	for range b.N {
		b.StopTimer()
		ctx := context.Background()
		url := pgtest.New(b)
		k, err := solve.Open(ctx, url)
		if err != nil {
			b.Fatal(err)
		}
		r := &treeResolver{}
		res := map[string]loop.Resolver{loop.ClaudeCodeID: r}
		wctx, stopWorker := context.WithCancel(ctx)
		ready, worked := make(chan struct{}), make(chan error, 1)
		go func() {
			worked <- k.Work(wctx, solve.Options{Resolvers: res}, solve.WorkerOptions{Steps: 1, RescueAfter: time.Hour, Ready: func(string) { close(ready) }})
		}()
		<-ready
		// Stopped once enough steps ran on the large tree.
		rctx, stopRun := context.WithCancel(ctx)
		go func() {
			for rctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
				r.mu.Lock()
				n := 0
				for _, s := range r.sizes {
					if s >= large {
						n++
					}
				}
				r.mu.Unlock()
				if n > samples {
					stopRun()
				}
			}
		}()
		b.StartTimer()
		_, err = k.Run(rctx, loop.Request{Goal: "tree 50 60", BudgetUSD: 1000, Time: 1000 * time.Hour, Workers: 1, Model: "bench"},
			solve.Options{Resolvers: res, Remote: true})
		b.StopTimer()
		stopRun()
		if rctx.Err() == nil {
			b.Fatalf("the run ended before %d steps on %d nodes: %v", samples, large, err)
		}
		stopWorker()
		<-worked
		if err := k.Close(); err != nil {
			b.Fatal(err)
		}
		small, big := r.gapsAt(50, 112, large)
		b.ReportMetric(p50(small), "ms/step-at-51")
		b.ReportMetric(p50(big), "ms/step-at-3051")
		b.ReportMetric(p50(big)/p50(small), "ratio")
		b.StartTimer()
	}
}
