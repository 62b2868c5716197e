package store

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// tree is a root with $1 / 100 s and one child given half of it.
func tree(t *testing.T, st *Store) (root, child string) {
	t.Helper()
	ctx := context.Background()
	root = node(t, st, NewNode{})
	child = node(t, st, NewNode{Parent: root, Root: root})
	if err := st.WriteLedger(ctx, LedgerEntry{Node: root, Event: Allocate, Amount: 1, Time: 100}); err != nil {
		t.Fatal(err)
	}
	if err := st.Write(ctx, func(tx *Tx) error { return tx.Delegate(ctx, root, child, 0.5, 50, "to child", "from root") }); err != nil {
		t.Fatal(err)
	}
	return root, child
}

// A reservation holds the estimate when the node's remaining budget
// covers it; otherwise the parent's remainder tops the node up first (the
// spec's PRE_CHECK); otherwise it is denied and nothing changes.
func TestReserveHoldsTopsUpOrDenies(t *testing.T) {
	eachStore(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		root, child := tree(t, st)
		r, err := st.Reserve(ctx, Hold{Node: child, Parent: root, Root: root, Resolver: "r", Op: "op", Owner: "o", Cost: 0.4, Time: 10})
		if err != nil || r.TopUpCost != 0 || r.TimeLeft != 50 {
			t.Fatalf("a hold within the node's budget: %+v %v", r, err)
		}
		r2, err := st.Reserve(ctx, Hold{Node: child, Parent: root, Root: root, Resolver: "r", Op: "op", Owner: "o", Cost: 0.3, Time: 10})
		if err != nil || r2.TopUpCost != 0.3 {
			t.Fatalf("a hold the parent's reserve covers: %+v %v", r2, err)
		}
		_, err = st.Reserve(ctx, Hold{Node: child, Parent: root, Root: root, Resolver: "r", Op: "op", Owner: "o", Cost: 0.3, Time: 10})
		var d *DeniedError
		if !errors.As(err, &d) || math.Abs(d.RemainingCost-0.1) > 1e-9 || math.Abs(d.ParentCost-0.2) > 1e-9 {
			t.Fatalf("a hold nothing covers: %v", err)
		}
		cb, _ := st.Balance(ctx, child)
		rb, _ := st.Balance(ctx, root)
		if math.Abs(cb.Reserved-0.7) > 1e-9 || math.Abs(cb.Allocated-0.8) > 1e-9 || math.Abs(rb.Spent-0.8) > 1e-9 {
			t.Errorf("child %+v, root %+v", cb, rb)
		}
		// Settled: the actual cost is spent, the hold freed, the call logged;
		// settling twice changes nothing.
		for i := range 2 {
			ok, err := st.Settle(ctx, Settlement{Reservation: r.ID, Cost: 0.1, Time: 3, LogSummary: "r op", LogDetail: map[string]any{"llm_calls": 1}})
			if err != nil || ok != (i == 0) {
				t.Fatalf("settle %d: %v %v", i, ok, err)
			}
		}
		cb, _ = st.Balance(ctx, child)
		n, _ := st.Node(ctx, child)
		if math.Abs(cb.Reserved-0.3) > 1e-9 || math.Abs(cb.Spent-0.1) > 1e-9 || math.Abs(n.BudgetReserved-0.3) > 1e-9 || math.Abs(n.BudgetSpent-0.1) > 1e-9 {
			t.Errorf("after settling: ledger %+v, cache %+v", cb, n)
		}
		if logs, _ := st.Logs(ctx, 3, child); len(logs) != 1 {
			t.Errorf("%d tier-3 rows, want the one call", len(logs))
		}
	})
}

// A process that stopped during a call left its reservation open: resume
// settles it at the amount held, an unknown outcome, labelled, so the
// spend is never lost; and at the time the call ran by its heartbeat
// (plus the interval to the next one it did not write), not its hold.
func TestSettleOpenChargesWhatWasHeld(t *testing.T) {
	eachStore(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		root, child := tree(t, st)
		beat, err := st.Reserve(ctx, Hold{Node: child, Parent: root, Root: root, Resolver: "claude-code-0", Op: "resolve", Owner: "dead", Cost: 0.05, Time: 30})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Heartbeat(ctx, beat.ID, 4.5); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Reserve(ctx, Hold{Node: child, Parent: root, Root: root, Resolver: "codex-tools-0", Op: "run_check", Owner: "dead", Cost: 0.01, Time: 15}); err != nil {
			t.Fatal(err)
		}
		open, err := st.SettleOpen(ctx, root)
		if err != nil || len(open) != 2 || open[0].Owner != "dead" || open[0].Alive != 4.5 || open[1].Alive != 0 {
			t.Fatalf("settled %+v %v", open, err)
		}
		b, _ := st.Balance(ctx, child)
		tb, _ := st.TreeBudget(ctx, root)
		if b.Reserved != 0 || math.Abs(b.Spent-0.06) > 1e-9 || math.Abs(tb.SpentUSD-0.06) > 1e-9 || math.Abs(tb.UnknownUSD-0.06) > 1e-9 || tb.ReservedUSD != 0 || tb.AllowanceUSD != 1 {
			t.Errorf("child %+v, tree %+v", b, tb)
		}
		// 4.5 s to its last heartbeat and a second to the next; the check
		// never wrote one: a second.
		if want := 4.5 + HeartbeatInterval.Seconds() + HeartbeatInterval.Seconds(); math.Abs(b.TimeSpent-want) > 1e-9 || math.Abs(tb.SpentSeconds-want) > 1e-9 {
			t.Errorf("the calls took %vs (tree %vs), want %vs", b.TimeSpent, tb.SpentSeconds, want)
		}
		nb, err := st.NodeBudgets(ctx, root)
		if err != nil || math.Abs(nb[child].UnknownUSD-0.06) > 1e-9 || nb[root].UnknownUSD != 0 {
			t.Errorf("node budgets %+v %v", nb, err)
		}
		logs, _ := st.Logs(ctx, 3, child)
		if len(logs) != 2 || logs[0].Summary != "claude-code-0 resolve (settled at its reservation after a stop: unknown outcome)" {
			t.Errorf("logs %+v", logs)
		}
		if again, err := st.SettleOpen(ctx, root); err != nil || len(again) != 0 {
			t.Errorf("a second resume settled %d more (%v)", len(again), err)
		}
	})
}

// A call that ran longer than its hold is settled at most at its hold.
func TestACallStoppedPastItsHoldCostsItsHold(t *testing.T) {
	o := OpenReservation{Time: 30, Alive: 29.5}
	if o.Ran() != 30 {
		t.Errorf("ran %v of a 30 s hold", o.Ran())
	}
}

// What an invalidated subtree has left goes back to the live ancestor,
// through invalidated parents, and a call settled later in an invalidated
// node sends its leftover the same way.
func TestInvalidatedSubtreeReturnsWhatItDidNotSpend(t *testing.T) {
	eachStore(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		root, child := tree(t, st)
		grand := node(t, st, NewNode{Parent: child, Root: root})
		if err := st.Write(ctx, func(tx *Tx) error { return tx.Delegate(ctx, child, grand, 0.2, 20, "to grandchild", "from child") }); err != nil {
			t.Fatal(err)
		}
		r, err := st.Reserve(ctx, Hold{Node: grand, Parent: child, Root: root, Resolver: "r", Op: "op", Owner: "o", Cost: 0.1, Time: 5})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Write(ctx, func(tx *Tx) error { _, err := tx.InvalidateSubtree(ctx, root); return err }); err != nil {
			t.Fatal(err)
		}
		rb, _ := st.Balance(ctx, root)
		if math.Abs(rb.RemainingCost()-0.9) > 1e-9 { // $0.1 is still held by the grandchild's call
			t.Errorf("root remaining $%v after the invalidation, want $0.9", rb.RemainingCost())
		}
		if _, err := st.Settle(ctx, Settlement{Reservation: r.ID, Cost: 0.04, Time: 1}); err != nil {
			t.Fatal(err)
		}
		rb, _ = st.Balance(ctx, root)
		for _, id := range []string{child, grand} {
			if b, _ := st.Balance(ctx, id); math.Abs(b.RemainingCost()) > 1e-9 || b.Reserved != 0 {
				t.Errorf("invalidated node keeps %+v", b)
			}
		}
		if math.Abs(rb.RemainingCost()-0.96) > 1e-9 {
			t.Errorf("root remaining $%v, want all but the $0.04 spent", rb.RemainingCost())
		}
	})
}

// Delegate and Cover never move money a node does not have.
func TestDelegateAndCoverRefuseWhatIsNotThere(t *testing.T) {
	eachStore(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		root, child := tree(t, st)
		err := st.Write(ctx, func(tx *Tx) error { return tx.Delegate(ctx, root, child, 0.6, 1, "too much", "too much") })
		if !errors.Is(err, ErrInsufficient) {
			t.Errorf("delegating more than the root has: %v", err)
		}
		if ok, err := st.Cover(ctx, child, root, 0.6, 1); err != nil || ok {
			t.Errorf("cover $0.6 (the child has $0.5, the parent must cover it alone and has $0.5): %v %v", ok, err)
		}
		if ok, err := st.Cover(ctx, child, root, 0.4, 1); err != nil || !ok {
			t.Errorf("cover $0.4: %v %v", ok, err)
		}
		if b, _ := st.Balance(ctx, child); math.Abs(b.Allocated-0.5) > 1e-9 {
			t.Errorf("child %+v: a covered estimate moves nothing", b)
		}
		if _, err := st.Reserve(ctx, Hold{Node: child, Parent: root, Root: root, Resolver: "r", Op: "op", Owner: "o", Cost: 0.3, Time: 1}); err != nil {
			t.Fatal(err)
		}
		if ok, err := st.Cover(ctx, child, root, 0.4, 1); err != nil || !ok {
			t.Errorf("cover $0.4 from the parent: %v %v", ok, err)
		}
		if b, _ := st.Balance(ctx, child); math.Abs(b.Allocated-0.9) > 1e-9 {
			t.Errorf("child %+v after a top-up of $0.4", b)
		}
	})
}

// One process at a time runs a root: a live holder refuses others; a dead
// one on this host (kill -9) or an expired one on another host is taken
// over; a renewal after a takeover says the lease was lost.
func TestLeasesRefuseALiveHolderAndTakeOverADeadOne(t *testing.T) {
	eachStore(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		alive := func(pid int) bool { return pid == 100 }
		if err := st.AcquireLease(ctx, "r", "a", "h1", 100, time.Minute, alive); err != nil {
			t.Fatal(err)
		}
		var held *LeaseHeldError
		if err := st.AcquireLease(ctx, "r", "b", "h1", 200, time.Minute, alive); !errors.As(err, &held) || held.PID != 100 || held.Host != "h1" {
			t.Errorf("a live holder on this host: %v", err)
		}
		if err := st.AcquireLease(ctx, "r", "b", "h2", 200, time.Minute, alive); !errors.As(err, &held) {
			t.Errorf("a live holder on another host, not expired: %v", err)
		}
		if err := st.AcquireLease(ctx, "r", "c", "h1", 300, time.Minute, func(int) bool { return false }); err != nil {
			t.Errorf("a dead holder on this host: %v", err)
		}
		if err := st.RenewLease(ctx, "r", "a", time.Minute); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("the old holder's renewal: %v", err)
		}
		if err := st.AcquireLease(ctx, "s", "d", "h2", 1, -time.Second, alive); err != nil {
			t.Fatal(err)
		}
		if err := st.AcquireLease(ctx, "s", "e", "h1", 2, time.Minute, alive); err != nil {
			t.Errorf("an expired lease from another host: %v", err)
		}
		if err := st.ReleaseLease(ctx, "r", "c"); err != nil {
			t.Fatal(err)
		}
		if err := st.AcquireLease(ctx, "r", "f", "h1", 100, time.Minute, alive); err != nil {
			t.Errorf("a released lease: %v", err)
		}
	})
}

// A hold with a ceiling grows from the estimate towards it with what the
// node itself has left, never with the parent's reserve, and settles the
// amount it held.
func TestAHoldGrowsTowardsItsCeilingFromTheNodeOnly(t *testing.T) {
	eachStore(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		root, child := tree(t, st)
		r, err := st.Reserve(ctx, Hold{Node: child, Parent: root, Root: root, Resolver: "r", Op: "op", Owner: "o", Cost: 0.1, Time: 1, Upto: 0.3})
		if err != nil || math.Abs(r.Cost-0.3) > 1e-9 {
			t.Fatalf("a ceiling the node covers: %+v %v", r, err)
		}
		r2, err := st.Reserve(ctx, Hold{Node: child, Parent: root, Root: root, Resolver: "r", Op: "op", Owner: "o", Cost: 0.1, Time: 1, Upto: 0.9})
		if err != nil || math.Abs(r2.Cost-0.2) > 1e-9 || r2.TopUpCost != 0 {
			t.Fatalf("a ceiling above what the node has: %+v %v", r2, err)
		}
		r3, err := st.Reserve(ctx, Hold{Node: child, Parent: root, Root: root, Resolver: "r", Op: "op", Owner: "o", Cost: 0.1, Time: 1, Upto: 0.9})
		if err != nil || math.Abs(r3.Cost-0.1) > 1e-9 || math.Abs(r3.TopUpCost-0.1) > 1e-9 {
			t.Fatalf("the estimate topped up from the parent, the ceiling not: %+v %v", r3, err)
		}
		cb, _ := st.Balance(ctx, child)
		rb, _ := st.Balance(ctx, root)
		if math.Abs(cb.Reserved-0.6) > 1e-9 || math.Abs(cb.Allocated-0.6) > 1e-9 || math.Abs(rb.Spent-0.6) > 1e-9 {
			t.Errorf("child %+v, root %+v", cb, rb)
		}
		open, err := st.SettleOpen(ctx, root)
		if err != nil || len(open) != 3 {
			t.Fatalf("settle open: %v %v", open, err)
		}
		if cb, _ = st.Balance(ctx, child); math.Abs(cb.Spent-0.6) > 1e-9 || cb.Reserved > 1e-9 {
			t.Errorf("settled at what was held: %+v", cb)
		}
	})
}

// A hold needs the time as well as the money: a call whose wall time the
// node (and its parent's reserve) cannot cover is denied however little
// it costs, and nothing is held or moved.
func TestAHoldTheNodesTimeCannotCoverIsDenied(t *testing.T) {
	eachStore(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		root, child := tree(t, st)
		for _, h := range []Hold{
			{Node: child, Parent: root, Root: root, Resolver: "r", Op: "op", Owner: "o", Cost: 0.01, Time: 60}, // child 50s, root's reserve 50s
			{Node: root, Root: root, Resolver: "r", Op: "op", Owner: "o", Cost: 0.01, Time: 51},                // root 50s left
		} {
			_, err := st.Reserve(ctx, h)
			var d *DeniedError
			if !errors.As(err, &d) || d.RemainingTime != 50 {
				t.Errorf("a hold of %.0fs on %s: %v", h.Time, h.Node, err)
			}
		}
		for _, id := range []string{root, child} {
			if b, _ := st.Balance(ctx, id); b.Reserved != 0 {
				t.Errorf("%s: %+v after denied holds", id, b)
			}
		}
		if _, err := st.Reserve(ctx, Hold{Node: child, Parent: root, Root: root, Resolver: "r", Op: "op", Owner: "o", Cost: 0.01, Time: 50}); err != nil {
			t.Errorf("a hold of the node's whole time: %v", err)
		}
	})
}
