// Command solve runs the SOLVE planning kernel (docs/solve.md).
package main

import "github.com/llmkernels/kernels/internal/cli"

func main() {
	cli.New("solve", "Turn a goal with hard constraints into a checked task DAG, and solve it",
		`Solve turns a goal with hard constraints into a constraint-checked task DAG with
budgets, critical path, walls and repairs, and runs the SOLVE loop that resolves,
verifies, builds tools and asks a human when it must.

Not built yet in this version: planning (plan, check) and the SOLVE loop (run,
resume, status, hire). What works now is the shared LLM runtime: use 'solve ping'
to check your provider set-up.`).Run()
}
