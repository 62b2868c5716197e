package wakes_test

import (
	"context"
	"testing"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/store"
)

// After failed wakes in a row a trigger waits a minute, two, four, …, at
// most an hour from the last failure.
func TestRetryPauseDoublesUpToAnHour(t *testing.T) {
	ctx := context.Background()
	clock := newClock(wakeT0)
	k := openAt(t, t.TempDir(), respondAll(), clock)
	writeTriggers(t, k, "every 1h tier 1: x")
	set, _ := k.Wakes().Triggers(ctx)
	tr := set.Triggers[0]
	last := wakeT0
	for n := 1; n <= 8; n++ {
		w, ok, err := k.Wakes().Store().ClaimWake(ctx, store.WakeClaim{Trigger: tr.Key(), Due: last.String(), At: last, Day: k.Wakes().Day(last), Tier: 1})
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if err := k.Wakes().Store().FinishWake(ctx, w.ID, store.WakeEnd{Status: store.WakeFailed, Reply: "down", At: last}); err != nil {
			t.Fatal(err)
		}
		wait := min(time.Minute<<(n-1), time.Hour)
		for _, c := range []struct {
			at    time.Time
			pause bool
		}{{last.Add(wait - time.Second), true}, {last.Add(wait), false}} {
			if pause, err := k.Wakes().RetryPause(ctx, tr, c.at); err != nil || pause != c.pause {
				t.Fatalf("after %d failures, %s after the last: pause %v, want %v (%v)", n, c.at.Sub(last), pause, c.pause, err)
			}
		}
		last = last.Add(2 * time.Hour)
	}
}
