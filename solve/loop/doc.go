// Package loop is the SOLVE loop (spec §5): the dispatcher over a goal's
// node tree and the steps each node walks — identify and select
// constraints, route to a resolver, resolve, verify, decompose — with
// retry on UNSAT, confidence gating, BUILD (lookup-before-build first),
// HIRE, the global consistency check and assembly.
//
// The rules a user trusts it with: every paid call is reserved before it
// runs and settled after, so no interleaving of workers or processes can
// overdraw; every call runs under the node's remaining wall time; every
// selected constraint gets a check; each attempt works in its own copy of
// the workspace; one process holds a run (a lease checked in every step's
// transaction); and each step's effects are committed in one transaction,
// so a killed run resumes without repeating or losing a recorded call.
// With a PostgreSQL store and Options.Remote, the steps are River jobs
// that `solve worker` runs (Work) with the same step code.
//
// The loop consumes resolvers through the Resolver interface (contract.go),
// handed in through Options.Resolvers and Options.Tool; all storage goes
// through solve/store, the knowledge graph's queries through solve/kg.
// docs/design/solve.md ("The SOLVE loop", "Layout") gives each rule in
// full, the choices the loop makes where the spec is silent, and what each
// file holds.
package loop
