// Package solve is the SOLVE kernel (specs/solve-kernel-boot-spec.md) as
// a library: a thin facade over its packages, whose methods do what the
// CLI does and return plain result structs.
//
//	k, err := solve.Open(ctx, "kernel.db")
//	p, err := k.Plan(ctx, client, planning.Request{Goal: …})  // solve plan
//	r, err := solve.Check(ctx, "plan.json")                   // solve check
//	res, err := k.Run(ctx, loop.Request{Goal: …}, opts)       // solve run
//	res, err = k.Resume(ctx, "", opts)                        // solve resume
//	st, err := k.Status(ctx, root)                            // solve status
//
// The packages, each with one job (dependencies point down this list):
//
//   - solve (this package): Open, the read side (Runs, Status, Logs,
//     Artifacts, KG, Resolvers, Requests) and the wiring of resolver
//     implementations into the loop.
//   - solve/resolver/claudecode, codex, selfmodel, tool: the resolvers
//     claude-code-0, codex-tools-0, self-model-0 and built or hired tools.
//   - solve/loop: the SOLVE loop (dispatch, steps, verify, grow, HIRE,
//     finalize, registry, invariants) and the Resolver contract.
//   - solve/planning (+ planning/smt): solve plan and solve check —
//     constraint extraction, decomposition, the kernel's arithmetic,
//     survey, exact repair, the z3 cross-check, reports.
//   - solve/kg: the knowledge graph's ids, similarity and boot-time queries.
//   - solve/workspace: files into a directory, commands run in it.
//   - solve/store: kernel.db and artifact_store/; every SQL statement.
//   - solve/dag, solve/expr: pure maths (graph passes, constraint
//     expressions).
//
// docs/solve.md describes the behaviour and the choices made where the
// spec is silent.
package solve
