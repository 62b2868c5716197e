package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)

// Many handles on one file (as many processes) claim the same due time
// at once: exactly one wake is recorded, and the trigger moves on once.
func TestAWakeIsClaimedOncePerDueTimeAcrossHandles(t *testing.T) {
	s, path := openTest(t, Options{})
	ctx := context.Background()
	if _, err := s.InitTrigger(ctx, "every 6h", t0, t0.Add(-6*time.Hour)); err != nil {
		t.Fatal(err)
	}
	var won atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := Open(path, Options{})
			if err != nil {
				t.Error(err)
				return
			}
			defer h.Close()
			_, ok, err := h.ClaimWake(ctx, WakeClaim{Trigger: "every 6h", Due: t0.Format(time.RFC3339), Day: "2026-11-03", At: t0, Tier: 1,
				From: t0, Next: t0.Add(6 * time.Hour)})
			if err != nil {
				t.Error(err)
			}
			if ok {
				won.Add(1)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d claims won, want 1", won.Load())
	}
	wakes, _ := s.Wakes(ctx, 0, 0)
	states, _ := s.TriggerStates(ctx)
	if len(wakes) != 1 || !states["every 6h"].NextDue.Equal(t0.Add(6*time.Hour)) {
		t.Fatalf("wakes %+v, next due %s", wakes, states["every 6h"].NextDue)
	}
	// The same due time once more (a clock set back): no second wake.
	if _, ok, err := s.ClaimWake(ctx, WakeClaim{Trigger: "every 6h", Due: t0.Format(time.RFC3339), Day: "2026-11-03", At: t0, Tier: 1}); ok || err != nil {
		t.Fatalf("a second claim of one due time: %v %v", ok, err)
	}
	// The trigger's next due time moved back onto the due time that fired:
	// the claim records no wake but moves it on, so it is not stuck there.
	if moved, err := s.AdvanceTrigger(ctx, "every 6h", t0.Add(6*time.Hour), t0, t0); !moved || err != nil {
		t.Fatal(moved, err)
	}
	if _, ok, err := s.ClaimWake(ctx, WakeClaim{Trigger: "every 6h", Due: t0.Format(time.RFC3339), Day: "2026-11-03", At: t0, Tier: 1,
		From: t0, Next: t0.Add(6 * time.Hour)}); ok || err != nil {
		t.Fatalf("a claim of a due time that fired: %v %v", ok, err)
	}
	states, _ = s.TriggerStates(ctx)
	if wakes, _ := s.Wakes(ctx, 0, 0); len(wakes) != 1 || !states["every 6h"].NextDue.Equal(t0.Add(6*time.Hour)) {
		t.Fatalf("after the claim of a due time that fired: wakes %+v, next due %s", wakes, states["every 6h"].NextDue)
	}
}

// The daily caps count the wakes of a day (skipped ones not), and a wake
// that would pass either is recorded as skipped with the cap as reason.
func TestClaimsRespectTheDailyCaps(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	claim := func(n int, day string, estimate float64) Wake {
		t.Helper()
		w, ok, err := s.ClaimWake(ctx, WakeClaim{Trigger: "t", Due: fmt.Sprint(n), Day: day, At: t0, Tier: 1, MaxWakes: 3, MaxCostUSD: 1, Estimate: estimate})
		if err != nil || !ok {
			t.Fatalf("claim %d: %v %v", n, ok, err)
		}
		return w
	}
	for i := range 3 {
		if w := claim(i, "2026-11-03", 0); w.Status != WakeRunning {
			t.Fatalf("wake %d: %s %s", i, w.Status, w.Reason)
		}
		if err := s.FinishWake(ctx, int64(i+1), WakeEnd{Status: WakeDone, Reply: "ok", CostUSD: 0.25, At: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if w := claim(3, "2026-11-03", 0); w.Status != WakeSkipped || !strings.Contains(w.Reason, "cap of 3 wakes") {
		t.Fatalf("the fourth wake of a day capped at 3: %s %q", w.Status, w.Reason)
	}
	if n, cost, _ := s.DayTotals(ctx, "2026-11-03", ""); n != 3 || cost != 0.75 {
		t.Fatalf("totals %d $%v: the skipped wake counted", n, cost)
	}
	if w := claim(4, "2026-11-04", 0); w.Status != WakeRunning {
		t.Fatalf("a new day: %s %q", w.Status, w.Reason)
	}
	if err := s.FinishWake(ctx, 5, WakeEnd{Status: WakeDone, Reply: "ok", CostUSD: 0.75, At: t0}); err != nil {
		t.Fatal(err)
	}
	if w := claim(5, "2026-11-04", 0.5); w.Status != WakeSkipped || !strings.Contains(w.Reason, "$1.00 would be passed") {
		t.Fatalf("a wake that would pass the cost cap: %s %q", w.Status, w.Reason)
	}
	if est, _ := s.CostEstimate(ctx, 1); est != 0.75 {
		t.Fatalf("estimate %v", est)
	}
}

// A trigger's share of the caps (the inbox's half) counts only its own
// wakes and their cost: it stops that trigger while the others go on.
func TestATriggersShareOfTheCaps(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	n := 0
	claim := func(trigger string, estimate float64) Wake {
		t.Helper()
		n++
		c := WakeClaim{Trigger: trigger, Due: fmt.Sprint(n), Day: "2026-11-03", At: t0, Tier: 1, MaxWakes: 10, MaxCostUSD: 1, Estimate: estimate}
		if trigger == "inbox" { // only the inbox's claims carry a share
			c.ShareWakes, c.ShareCostUSD = 3, 0.5
		}
		w, ok, err := s.ClaimWake(ctx, c)
		if err != nil || !ok {
			t.Fatalf("claim %d: %v %v", n, ok, err)
		}
		return w
	}
	finish := func(w Wake, cost float64) {
		t.Helper()
		if w.Status != WakeRunning {
			t.Fatalf("%s wake %s: %q", w.Trigger, w.Status, w.Reason)
		}
		if err := s.FinishWake(ctx, w.ID, WakeEnd{Status: WakeDone, Reply: "ok", CostUSD: cost, At: t0}); err != nil {
			t.Fatal(err)
		}
	}
	finish(claim("inbox", 0), 0.3)
	finish(claim("other", 0), 0.3) // another trigger's spending is not the inbox's
	if w := claim("inbox", 0.3); w.Status != WakeSkipped || !strings.Contains(w.Reason, "share of the daily caps, $0.50") {
		t.Fatalf("an inbox wake past its share of the cost: %s %q", w.Status, w.Reason)
	}
	finish(claim("inbox", 0.1), 0.1)
	finish(claim("inbox", 0.05), 0.05)
	if w := claim("inbox", 0); w.Status != WakeSkipped || !strings.Contains(w.Reason, "share of the daily caps, 3 wakes") {
		t.Fatalf("a fourth inbox wake, share 3: %s %q", w.Status, w.Reason)
	}
	if w := claim("other", 0.2); w.Status != WakeRunning {
		t.Fatalf("another trigger while the inbox's share is spent: %s %q", w.Status, w.Reason)
	}
}

// A message is delivered by one wake only; a replay (sender and nonce
// known) is not stored again.
func TestReceivedMessagesAreDeliveredOnceAndReplaysRefused(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	m := Received{Beach: "b:1", BeachID: 7, Sender: "hcA", Nonce: "n1", Signed: t0, Received: t0, Message: json.RawMessage(`{"content":"hi"}`), Envelope: json.RawMessage(`{}`)}
	added, replays, err := s.AddReceived(ctx, []Received{m, m})
	if err != nil || len(added) != 1 || len(replays) != 1 {
		t.Fatalf("added %d replays %d err %v", len(added), len(replays), err)
	}
	if last, _ := s.LastBeachID(ctx, "b:1"); last != 7 {
		t.Fatalf("last beach id %d", last)
	}
	id := added[0].ID
	w1, ok, err := s.ClaimWake(ctx, WakeClaim{Trigger: "inbox", Due: "1", Day: "d", At: t0, Received: []int64{id}})
	if !ok || err != nil || w1.Status != WakeRunning {
		t.Fatalf("first delivery: %v %v", ok, err)
	}
	if _, ok, err := s.ClaimWake(ctx, WakeClaim{Trigger: "inbox other", Due: "1", Day: "d", At: t0, Received: []int64{id}}); ok || err != nil {
		t.Fatalf("a second delivery of one message: %v %v", ok, err)
	}
	if pending, _ := s.ReceivedMessages(ctx, true, 0); len(pending) != 0 {
		t.Fatalf("still pending: %+v", pending)
	}
	got, err := s.ReceivedMessage(ctx, id)
	if err != nil || got.Wake != w1.ID {
		t.Fatalf("message %+v %v", got, err)
	}
}

// A flood of posts to one hook keeps only the newest maxPending.
func TestWebhookPostsAreBounded(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	var dropped int64
	for i := range 250 {
		_, d, err := s.AddEvent(ctx, "ci", fmt.Sprint(i), t0, 100)
		if err != nil {
			t.Fatal(err)
		}
		dropped += d
	}
	pending, _ := s.PendingEvents(ctx, "ci")
	if len(pending) != 100 || dropped != 150 || pending[0].Body != "150" {
		t.Fatalf("%d pending (first %q), %d dropped", len(pending), pending[0].Body, dropped)
	}
}

// A backlog is delivered oldest first; the newest are listed for "all".
func TestABacklogOfMessagesIsDeliveredOldestFirst(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	var msgs []Received
	for i := range 25 {
		msgs = append(msgs, Received{Beach: "b", BeachID: int64(i + 1), Sender: "hcA", Nonce: fmt.Sprint(i), Signed: t0, Received: t0, Message: json.RawMessage(`{}`), Envelope: json.RawMessage(`{}`)})
	}
	if _, _, err := s.AddReceived(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	pending, _ := s.ReceivedMessages(ctx, true, 20)
	all, _ := s.ReceivedMessages(ctx, false, 5)
	if len(pending) != 20 || pending[0].ID != 1 || pending[19].ID != 20 || len(all) != 5 || all[0].ID != 21 || all[4].ID != 25 {
		t.Fatalf("pending %d (%d…%d), all %d (%d…%d)", len(pending), pending[0].ID, pending[len(pending)-1].ID, len(all), all[0].ID, all[len(all)-1].ID)
	}
}
