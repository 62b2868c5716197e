// Package loop is the SOLVE loop (spec §5): the dispatcher over a goal's
// node tree and the steps each node walks — identify and select
// constraints, route to a resolver, resolve, verify, decompose — with
// retry on UNSAT, confidence gating, BUILD (lookup-before-build first),
// HIRE, the global consistency check and assembly. Every resolver call is
// budget-gated against the ledger, and each step's effects are committed
// in one transaction, so a killed run resumes without repeating or losing
// a recorded call.
//
// The loop consumes resolvers through the Resolver interface (contract.go);
// their implementations live in solve/resolver/… and are handed in through
// Options.Resolvers and Options.Tool. All storage goes through solve/store;
// the knowledge graph's queries through solve/kg. docs/solve.md lists the
// choices the loop makes where the spec is silent.
//
// Files: engine.go (Run, Resume, the scheduler), steps.go (Steps 2–5),
// verify.go (Step 6, SAT and UNSAT), grow.go (decompose, gating, BUILD),
// hire.go (HIRE and answers), finalize.go (Steps 12–13, the extraction
// dialogue), budget.go (pre_check and record), registry.go (boot resolvers,
// candidates), invariants.go (the §2 invariants as a check).
package loop
