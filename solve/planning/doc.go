// Package planning is the SOLVE kernel's planning mode (`solve plan`,
// `solve check`, `solve eval`): constraint extraction, decomposition into
// a task DAG, the kernel's arithmetic (rollups, PERT, waterfall with every
// budgeted quantity, critical paths, verdicts, walls), the approach survey
// in rounds, exact repair with unsat cores, the optional z3 cross-check
// (planning/smt), the reports and pictures, the assertion framework that
// recomputes a plan file and proves its repair claim without the search
// (proof.go), and the evaluation of the spec's examples.
//
// The model supplies judgment (constraints, tasks, estimates, approaches)
// through llm.AskJSON; the kernel does every sum, pass and comparison
// itself and never uses a number the model computed (a stated total is
// compared and reported, see Claim). Pure maths lives in solve/dag (graph,
// critical path, waves) and solve/expr (logic-constraint expressions);
// kernel.db is written through solve/store.
//
// Where the spec leaves room, this package decides as follows; the
// differences are deliberate and documented in docs/solve.md:
//
//   - The goal is the root node. Planning walks it through the spec's
//     transitions: pending → identifying_constraints → selecting_constraints
//     → selecting_resolver → resolving ⇄ verifying (one round per
//     decomposition answer) → decomposing → pending, with one child node
//     per task of the final plan and its node_dependencies. A run that
//     stops moves the root to "failed" (the first iteration's extra state).
//     Parsimony selection belongs to `solve run`: selected = eligible.
//   - Every LLM answer (extraction, each decomposition attempt, survey) is a
//     resolution_attempts row of the root, resolver claude-code-0, with the
//     kernel's validation as its Verification (plus a "stage" field) and
//     the previous violations as its feedback.
//   - A logic constraint's payload is an expression over plan metrics,
//     evaluated by the kernel at the low, mid and high estimates. Outcome
//     targets that only the work can show (a benchmark score, F1) are
//     semantic at planning time, σ judged by the model.
//   - The spec's "constraint feasibility check" and "approach selection /
//     repair" prompt types are deterministic kernel code here, not prompts.
//   - N of check 1.1 (explicit constraints the goal states) is the model's
//     stated_constraints list, held to the goal by the kernel (every
//     figure accounted for, every stated constraint covered), plus one per
//     --constraint and flag (explicit.go).
//   - A survey trigger asks for improvement in its own dimension: cost
//     walls cheaper, schedule walls faster, quantity walls less of it, low
//     confidence more certain; "nothing better possible" is a reason, not
//     an error (survey.go).
//   - The repair is the feasible combination with the fewest swaps, then
//     the least confidence given up, then the least mid cost; σ of a
//     semantic constraint after repair is the least σ the chosen
//     approaches judge for it (repair.go).
//   - When no repair exists, the survey widens to the next contributors,
//     then retries with the violation (spec step 9), within a call budget
//     and the wall clock; z3 never costs the plan (crosscheck.go).
package planning
