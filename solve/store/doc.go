// Package store is the SOLVE kernel's storage: the spec's eleven tables
// (§2) and the artifacts' contents, content-addressed by sha256, in
// SQLite (kernel.db and the artifact_store/ directory beside it, the
// default) or in PostgreSQL (a postgres:// or postgresql:// URL: the
// tables and an artifact_blobs table, so that processes on several
// machines share one run). Every SQL statement of the kernel lives in
// this package; the rest of solve calls typed methods and never sees a
// query.
//
// Open and OpenReadOnly take a SQLite path or a PostgreSQL URL. SQLite
// goes through internal/sqlite (application_id "SOLV", user_version steps
// from schema.sql; another program's file is refused unchanged; a
// read-only store never creates or writes a file). PostgreSQL goes through
// internal/pgdb (pgx; errors name the database without its password) and
// postgres.go: the same steps, translated (jsonb, DOUBLE PRECISION,
// BIGINT, a seq column for insertion order), counted in a solve_schema
// table whose marker plays application_id's part — a database holding
// other tables and no marker, or another marker, is refused and left as
// it was; steps are applied in one transaction under an advisory lock. A
// read-only PostgreSQL store runs every session with
// default_transaction_read_only, so the server itself refuses a write,
// and never creates the tables.
//
// Transactions on PostgreSQL are SERIALIZABLE and retried (up to 20
// times, with a random growing pause) when the server reports a
// serialization failure or a deadlock. The reservation's conditional
// UPDATE alone would be safe under READ COMMITTED (the server re-checks
// the WHERE on the newest row version after waiting for the row lock), but
// the write paths were written for SQLite, whose writers are serial: some
// read and then write (the next attempt index, settling, transitions),
// and a top-up locks the parent then the child while a settlement locks
// the child then the parent, which deadlocks under READ COMMITTED (tried:
// TestConcurrentReservationsNeverOverdraw then fails with 40P01; and a
// hold written as read-then-update overdraws there, but not under
// SERIALIZABLE). SERIALIZABLE gives every transaction SQLite's guarantee
// without auditing each path; the price is a retry now and then.
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
// (internal/sqldb's Dialect).
package store
