// Package store is the SOLVE kernel's storage: kernel.db (the spec's
// eleven tables, §2) and the content-addressed artifact_store/ beside it.
// Every SQL statement of the kernel lives in this package; the rest of
// solve calls typed methods and never sees a query.
//
// Open and OpenReadOnly go through internal/sqlite (application_id
// "SOLV", user_version steps from schema.sql; another program's file is
// refused unchanged; a read-only store never creates or writes a file).
// A Store is the open database. Its methods (those of the embedded Conn)
// run outside a transaction; Store.Write runs a function in one write
// transaction, whose Tx has the same methods. Each method names the
// operation in its error ("load node 1234: sql: no rows in result set"),
// so a failing query says what the kernel was doing.
//
// The budget (ledger.go, budget.go): the ledger is authoritative; a paid
// call is reserved (Reserve: one transaction whose conditional UPDATE of
// the node's row checks and holds the remaining budget, topping it up from
// the parent's the same way) and settled (Settle, SettleOpen for a
// stopped process's calls); transfers between nodes (Delegate, Cover,
// ReturnUnspent) are conditional too. A hold may grow from the estimate
// towards a ceiling (Hold.Upto) with what the node itself has left, so a
// call can be capped at what is held. Leases (lease.go) keep one process
// per run; HoldsLease fences a run's writes (a process that lost the
// lease commits nothing).
//
// Typed rows: Node, Attempt, Constraint, Artifact, LedgerEntry/Balance,
// LogRow, Resolver, CapabilityRequest, the knowledge graph's Pattern,
// SimilarGoal, ResolverOutcome and FailureCount. JSON columns are written
// with JSONText and read back into the rows' fields.
//
// The node state machine is enforced here: Transition refuses a move the
// spec's table does not allow (Allowed) and a move from a status the node
// is not in, so no caller can write a status without the guard;
// EndInfeasible and InvalidateSubtree are the two documented exceptions
// (a declined HIRE, backtracking).
//
// Dialects: statements are written once in the SQL that SQLite and
// PostgreSQL share; the few differences (insertion order, an index hint,
// the float type in casts, and for PostgreSQL the placeholders, jsonb,
// the schema and its version) are marks that one dialect value fills in
// (see dialect in store.go). Only SQLite is implemented.
package store
