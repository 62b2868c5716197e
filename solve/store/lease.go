package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A run's lease: one process at a time runs or resumes a root. The lease
// is a row of run_leases taken, renewed and released in transactions; a
// holder that stops renewing loses it when it expires, and a holder on the
// same host whose process is gone (kill -9) loses it at once.

// Lease is a run_leases row.
type Lease struct {
	Root, Owner, Host string
	PID               int
	Acquired, Expires time.Time
}

// LeaseHeldError refuses a lease another live process holds.
type LeaseHeldError struct{ Lease }

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("run %s is being run by process %d on %s (since %s); wait for it to finish or stop it: two processes on one run would repeat its paid calls",
		e.Root, e.PID, e.Host, e.Acquired.Local().Format("2006-01-02 15:04:05"))
}

// ErrLeaseLost is a renewal that found the lease taken by another process.
var ErrLeaseLost = errors.New("the run's lease was taken by another process")

// AcquireLease takes the root's lease for owner, or refuses with a
// *LeaseHeldError when a live process holds it. alive reports whether a
// process on this host still runs (same host only; a holder on another
// host is alive until its lease expires). Race-free without a lock: the
// insert does nothing when a lease exists, and a takeover is an update
// conditional on the stale holder still holding it.
func (s *Store) AcquireLease(ctx context.Context, root, owner, host string, pid int, ttl time.Duration, alive func(pid int) bool) error {
	return s.Write(ctx, func(tx *Tx) error {
		nowT := time.Now()
		res, err := tx.exec(ctx, `INSERT INTO run_leases (root_id, owner, host, pid, acquired_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (root_id) DO NOTHING`, root, owner, host, pid, nowT.UnixMilli(), nowT.Add(ttl).UnixMilli())
		if err != nil {
			return fmt.Errorf("run %s: take its lease: %w", root, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var l Lease
		var acquired, expires int64
		if err := tx.row(ctx, `SELECT owner, host, pid, acquired_at, expires_at FROM run_leases WHERE root_id = ?`, root).Scan(&l.Owner, &l.Host, &l.PID, &acquired, &expires); err != nil {
			return fmt.Errorf("run %s: read its lease: %w", root, err)
		}
		l.Root, l.Acquired, l.Expires = root, time.UnixMilli(acquired), time.UnixMilli(expires)
		stale := l.Owner == owner || l.Expires.Before(nowT) || (l.Host == host && !alive(l.PID))
		if !stale {
			return &LeaseHeldError{l}
		}
		res, err = tx.exec(ctx, `UPDATE run_leases SET owner = ?, host = ?, pid = ?, acquired_at = ?, expires_at = ? WHERE root_id = ? AND owner = ?`,
			owner, host, pid, nowT.UnixMilli(), nowT.Add(ttl).UnixMilli(), root, l.Owner)
		if err != nil {
			return fmt.Errorf("run %s: take over its lease: %w", root, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return &LeaseHeldError{l} // another process took it over first
		}
		return nil
	})
}

// RenewLease extends the owner's lease by ttl from now.
func (s *Store) RenewLease(ctx context.Context, root, owner string, ttl time.Duration) error {
	return s.Write(ctx, func(tx *Tx) error {
		res, err := tx.exec(ctx, `UPDATE run_leases SET expires_at = ? WHERE root_id = ? AND owner = ?`, time.Now().Add(ttl).UnixMilli(), root, owner)
		if err != nil {
			return fmt.Errorf("run %s: renew its lease: %w", root, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("run %s: %w", root, ErrLeaseLost)
		}
		return nil
	})
}

// ReleaseLease gives the owner's lease up.
func (s *Store) ReleaseLease(ctx context.Context, root, owner string) error {
	if _, err := s.exec(ctx, `DELETE FROM run_leases WHERE root_id = ? AND owner = ?`, root, owner); err != nil {
		return fmt.Errorf("run %s: release its lease: %w", root, err)
	}
	return nil
}

// HoldsLease is the fence of a run's writes: in the caller's transaction,
// ErrLeaseLost unless owner still holds the root's lease. A process that
// lost it (stopped past its expiry, and another process took the run
// over) changes nothing more, even before its next renewal notices. The
// check is an UPDATE that changes nothing, so the lease row stays locked
// until the transaction ends (a takeover waits for it) in either dialect.
func (c *Conn) HoldsLease(ctx context.Context, root, owner string) error {
	res, err := c.exec(ctx, `UPDATE run_leases SET expires_at = expires_at WHERE root_id = ? AND owner = ?`, root, owner)
	if err != nil {
		return fmt.Errorf("run %s: check its lease: %w", root, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errors.Join(fmt.Errorf("run %s: %w", root, ErrLeaseLost), err)
	}
	return nil
}
