// Package planning is the SOLVE kernel's planning mode (solve plan,
// check and eval): constraint extraction, decomposition into a task DAG,
// the kernel's arithmetic (rollups, PERT, waterfall, critical paths,
// verdicts, walls), the approach survey in rounds, exact repair with
// unsat cores, the optional z3 cross-check (planning/smt), the reports
// and pictures, and the assertion framework that recomputes a plan file
// and proves its repair claim without the search (proof.go).
//
// The model supplies judgment through llm.AskJSON; the kernel does every
// sum, pass and comparison itself and never uses a number the model
// computed. The choices made where the spec leaves room are in
// docs/design/solve.md (for whoever changes this package) and
// docs/solve.md (for a user).
package planning
