// Package store is the SOLVE kernel's storage: the spec's eleven tables
// (§2) and the artifacts' contents, content-addressed by sha256, in
// SQLite (kernel.db and artifact_store/ beside it) or PostgreSQL (a
// postgres:// URL). Every SQL statement of the kernel lives here; the
// rest of solve calls typed methods and never sees a query.
//
// A Store is the open database; Store.Write runs a function in one write
// transaction, whose Tx has the same methods. Each method names the
// operation in its error. The budget ledger is authoritative: a paid
// call is reserved (Reserve: a conditional UPDATE that holds the node's
// remaining money and time) and settled (Settle, SettleOpen). Transition
// enforces the node state machine of the spec.
//
// How it is built (dialects, SERIALIZABLE and retries on PostgreSQL, the
// budget's transfers, leases): docs/design/solve.md.
package store
