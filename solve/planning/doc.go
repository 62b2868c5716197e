// Package planning is the SOLVE kernel's planning mode (`solve plan`,
// `solve check`): constraint extraction, decomposition into a task DAG,
// the kernel's arithmetic (rollups, PERT, waterfall, critical paths,
// verdicts, walls), the approach survey, exact repair with unsat cores,
// the optional z3 cross-check (planning/smt), the reports, and the
// assertion framework that checks a plan file.
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
package planning
