package wakes

import (
	"context"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/hermitcrab/trigger"
)

// What the package's tests reach inside a Runner.

// Store is the runner's store.
func (r *Runner) Store() *store.Store { return r.store }

// SetClock sets the clock of the triggers and their caps.
func (r *Runner) SetClock(now func() time.Time) { r.now = now }

// Day is the day a wake at t counts in.
func (r *Runner) Day(t time.Time) string { return r.day(t) }

// RetryPause is retryPause.
func (r *Runner) RetryPause(ctx context.Context, t trigger.Trigger, now time.Time) (bool, error) {
	return r.retryPause(ctx, t, now)
}

// InboxClaim is the claim of the wake an inbox trigger would fire now,
// nil when no message waits.
func (r *Runner) InboxClaim(ctx context.Context, t trigger.Trigger, base store.WakeClaim) (*store.WakeClaim, error) {
	p, err := r.inboxWake(ctx, t, base)
	if p == nil {
		return nil, err
	}
	return &p.claim, err
}

// WakeBatch is how many messages or posts one wake carries.
const WakeBatch = wakeBatch

// SetWakeDeadline shortens the wake deadline until the returned restore.
func SetWakeDeadline(d time.Duration) (restore func()) {
	old := wakeDeadline
	wakeDeadline = d
	return func() { wakeDeadline = old }
}

// SetPollTimeout shortens a look's deadline until the returned restore.
func SetPollTimeout(d time.Duration) (restore func()) {
	old := pollTimeout
	pollTimeout = d
	return func() { pollTimeout = old }
}

// PollTimeout is a look's deadline.
func PollTimeout() time.Duration { return pollTimeout }

// ConversationKeep is how many messages the wakes' conversation keeps.
const ConversationKeep = wakeConversationKeep
