package wakes

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/fetch"
	"github.com/llmkernels/kernels/hermitcrab/network"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/hermitcrab/trigger"
)

// Looks: a trigger that looks at the network (an inbox polling its beach,
// a watched page) does so on a goroutine of its own, under its own
// deadline (pollTimeout), so a beach or a page that accepts a connection
// and never answers holds up only its own look, never the other triggers
// of the pass. A look starts when its trigger is due (in the one process
// that moved the due time); what it found is taken by a later run of its
// trigger: in the same pass when the pass waits for its looks
// (RunTriggers, one pass for cron), else in the pass its end asks for
// (RunWakes).

// pollTimeout bounds one look: a poll of the beach, a fetch of a watched
// page. A variable so a test can shorten it.
var pollTimeout = 30 * time.Second

// look is one look under way, or ended and not yet taken.
type look struct {
	due  time.Time     // the trigger's due time it was made for
	done chan struct{} // closed when it ended
	// Set before done is closed: what it found, or why it failed.
	inbox *network.Inbox
	page  fetch.Page
	err   error
}

// lookWhenDue starts fn as t's look when t is due, in the one process
// that moves its due time on.
func (r *Runner) lookWhenDue(ctx context.Context, t trigger.Trigger, st store.TriggerState, now time.Time, fn func(ctx context.Context, l *look)) error {
	if now.Before(st.NextDue) {
		return nil
	}
	moved, err := r.store.AdvanceTrigger(ctx, t.Key(), st.NextDue, t.Next(st.NextDue, now), now)
	if err == nil && moved {
		r.startLook(ctx, t.Key(), st.NextDue, fn)
	}
	return err
}

// startLook starts fn as the look of trigger key for due, on its own
// goroutine under its own deadline, unless the trigger has a look under
// way or one waiting to be taken. A look that ends asks for a pass.
func (r *Runner) startLook(ctx context.Context, key string, due time.Time, fn func(ctx context.Context, l *look)) {
	r.wake.lookMu.Lock()
	defer r.wake.lookMu.Unlock()
	if _, ok := r.wake.looks[key]; ok {
		return
	}
	if r.wake.looks == nil {
		r.wake.looks = map[string]*look{}
	}
	l := &look{due: due, done: make(chan struct{})}
	r.wake.looks[key] = l
	r.wake.looking.Add(1)
	go func() {
		defer r.wake.looking.Done()
		lctx, cancel := context.WithTimeoutCause(ctx, pollTimeout, fmt.Errorf("no answer within %s", pollTimeout))
		fn(lctx, l)
		if l.err != nil && lctx.Err() != nil {
			l.err = fmt.Errorf("%v: %w", context.Cause(lctx), l.err)
		}
		cancel()
		close(l.done)
		if ctx.Err() != nil {
			// Stopped with the runner, not at its deadline: what it found
			// is nobody's; the trigger looks again when next due.
			r.wake.lookMu.Lock()
			if r.wake.looks[key] == l {
				delete(r.wake.looks, key)
			}
			r.wake.lookMu.Unlock()
			return
		}
		select {
		case r.wake.kicks() <- struct{}{}:
		default:
		}
	}()
}

// takeLook returns the look of trigger key once it has ended, and forgets
// it; nil while none has.
func (r *Runner) takeLook(key string) *look {
	r.wake.lookMu.Lock()
	defer r.wake.lookMu.Unlock()
	l, ok := r.wake.looks[key]
	if !ok {
		return nil
	}
	select {
	case <-l.done:
		delete(r.wake.looks, key)
		return l
	default:
		return nil
	}
}

// waitLooks waits for the looks of the triggers keys (each ends by its
// deadline) and returns the keys that have one to take. The looks of
// triggers no longer in keys (their lines were edited away) are
// forgotten once they end.
func (r *Runner) waitLooks(keys []string) map[string]bool {
	r.wake.lookMu.Lock()
	var waiting []*look
	ended := map[string]bool{}
	for key, l := range r.wake.looks {
		if slices.Contains(keys, key) {
			waiting = append(waiting, l)
			ended[key] = true
		}
	}
	r.wake.lookMu.Unlock()
	for _, l := range waiting {
		<-l.done
	}
	r.forgetLooks(keys)
	return ended
}

// forgetLooks forgets the ended looks of triggers not in keys.
func (r *Runner) forgetLooks(keys []string) {
	r.wake.lookMu.Lock()
	defer r.wake.lookMu.Unlock()
	for key, l := range r.wake.looks {
		select {
		case <-l.done:
			if !slices.Contains(keys, key) {
				delete(r.wake.looks, key)
			}
		default:
		}
	}
}
