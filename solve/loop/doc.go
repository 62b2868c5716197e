// Package loop is the SOLVE loop (spec §5): the dispatcher over a goal's
// node tree and the steps each node walks — identify and select
// constraints, route to a resolver, resolve, verify, decompose — with
// retry on UNSAT, confidence gating, BUILD (lookup-before-build first),
// HIRE, the global consistency check and assembly.
//
// The rules a user trusts it with:
//
//   - Money: every paid call is reserved in the store before it runs, in
//     the transaction that checks the node's remaining budget (topping it
//     up from the parent's reserve, as PRE_CHECK says), and settled after it
//     with what it actually cost; no interleaving of workers or processes
//     can overdraw, and a call a killed process made is settled on resume
//     at what it reserved. A call cut off (deadline, Ctrl-C) is settled at
//     its hold when a request of its was in flight (its cost is unknown),
//     and at what it reported when none was (ResolverError.NotInFlight: a
//     retry back-off after an error answer, or nothing sent; error answers
//     are not billed). A call is capped at its reservation
//     (Call.MaxCost; the hold grows towards a resolver's Ceiling from the
//     node's own remainder), so not even one answer overshoots. An
//     invalidated subtree's unspent money returns to the reopened ancestor.
//   - Time: every call runs under a deadline equal to the node's remaining
//     wall time (commands killed, LLM requests cancelled there).
//   - Verification: every selected constraint gets a check — a command, an
//     expression over the node's real spend and time, or the verifier's
//     verdict (asked again when skipped, failing when still unjudged).
//   - Isolation: each attempt works in its own copy of the workspace; only
//     a SAT leaf's files are merged, refusing files changed since.
//   - One process per run (a lease in the store), fenced: every step
//     commit and reservation checks the lease in its transaction.
//
// With a PostgreSQL store and Options.Remote (solve run --remote), the
// steps are not run in this process: each ready node's step is a River
// job that `solve worker` processes (Work), on any machines, claim and
// run with the same step code, so the rules above hold unchanged; the
// coordinator waits for the jobs and finalises. A dead worker's job is
// rescued after WorkerOptions.RescueAfter and redone from the node's last
// committed state, its open reservations settled first; each step runs
// under a deadline of RescueAfter less a margin, so no step runs on two
// workers at once. The workspace is stored in the database and built per
// step on the worker (remotews.go). remote.go says what was chosen.
//
// Each step's other effects are committed in one transaction, so a killed
// run resumes without repeating or losing a recorded call.
//
// The loop consumes resolvers through the Resolver interface (contract.go);
// their implementations live in solve/resolver/… and are handed in through
// Options.Resolvers and Options.Tool. All storage goes through solve/store;
// the knowledge graph's queries through solve/kg. docs/solve.md lists the
// choices the loop makes where the spec is silent.
//
// Files: engine.go (Run, Resume, the scheduler, the live view), steps.go
// (Steps 2–5), budget.go (the reservation rule and deadlines), verify.go
// (Step 6, SAT and UNSAT), checks.go (the kernel's own checks), isolate.go
// (attempt workspaces), grow.go (decompose, gating, BUILD), hire.go (HIRE
// and answers), finalize.go (Steps 12–13, the extraction dialogue),
// lease.go (one process per run), registry.go (boot resolvers,
// candidates), invariants.go (the §2 invariants as a check), remote.go
// (steps as River jobs, the coordinator's side), worker.go (solve
// worker), remotews.go (the workspace stored in the database).
package loop
