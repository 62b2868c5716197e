package loop

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/solve/store"
)

// The budget rule (B1/B2), for every resolver call: estimate, reserve the
// estimate in the store (one transaction that checks the node's remaining
// budget, topping it up from the parent's reserve when the parent can
// cover it), run the call under a deadline equal to the node's remaining
// wall time, settle the reservation with what the call actually cost and
// took. A denied reservation routes the node to HIRE; a call cut off at
// its deadline too (the node's time ran out).

var (
	errDenied    = errors.New("budget pre_check DENIED")
	errOutOfTime = errors.New("the node's wall time ran out")
	// errUnsettled is a paid call whose settlement failed: never tried
	// again (that would pay twice); the run stops, and resume settles the
	// reservation at its hold.
	errUnsettled = errors.New("the call was made but its cost could not be recorded")
)

// retries is how many times a retryable resolver error is tried in all.
const retries = 3

// call is the budget wrapper of every resolver call.
func (s *stepCtx) call(ctx context.Context, resolverID string, c *Call) (*Output, error) {
	r, err := s.e.resolver(ctx, resolverID)
	if err != nil {
		return nil, err
	}
	c.Goal, c.Summary, c.Model, c.Node, c.RunGoal = s.n.Goal, s.n.Summary, s.e.cfg.Model, s.n.ID, s.e.cfg.Goal
	c.Tools = s.tools(resolverID, c.Op)
	if c.Workspace == "" {
		c.Workspace = s.e.cfg.Workspace
	}
	cost, secs := r.Estimate(ctx, c)
	// An estimate below zero or not a number holds nothing (a negative
	// hold would add to what the node has left).
	if !(cost >= 0) {
		cost = 0
	}
	if !(secs >= 0) {
		secs = 0
	}
	for try := 1; ; try++ {
		out, err := s.paid(ctx, r, resolverID, c, cost, secs)
		if err == nil {
			return out, nil
		}
		// A malformed answer is asked again like a retryable error: the
		// resolver sends no repair turn, as a repair is another answer the
		// call's reservation does not pay for; each re-ask is reserved.
		re, perm := isPermanent(err)
		malformed := perm && re.Mode == "malformed_json"
		if (perm && !malformed) || try == retries || ctx.Err() != nil || errors.Is(err, errDenied) || errors.Is(err, errOutOfTime) || errors.Is(err, store.ErrLeaseLost) || errors.Is(err, errUnsettled) {
			return nil, err
		}
		if malformed {
			s.e.progress("Node %s: %s %s answered malformed JSON; asking again (%d of %d)", store.Short(s.n.ID), resolverID, c.Op, try+1, retries)
			continue
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(retryWait * time.Duration(try)):
		}
	}
}

// paid is one try of a call: reserve, run under the node's deadline,
// settle.
func (s *stepCtx) paid(ctx context.Context, r Resolver, resolverID string, c *Call, cost, secs float64) (*Output, error) {
	upto := 0.0
	if cr, ok := r.(Ceiling); ok {
		upto = cr.Ceiling(ctx, c)
	}
	res, err := s.st.Reserve(ctx, store.Hold{Node: s.n.ID, Parent: s.n.Parent, Root: s.e.root, Resolver: resolverID, Op: c.Op, Owner: s.e.owner, Cost: cost, Time: secs, Upto: upto, Leased: true})
	var denied *store.DeniedError
	if errors.As(err, &denied) {
		return nil, fmt.Errorf("%w: %s %s %v", errDenied, resolverID, c.Op, denied)
	}
	if err != nil {
		return nil, err
	}
	if res.TopUpCost > 0 || res.TopUpTime > 0 {
		s.e.progress("Node %s: PRE_CHECK: $%.4f / %.0fs reallocated from the parent's reserve for %s %s", store.Short(s.n.ID), res.TopUpCost, res.TopUpTime, resolverID, c.Op)
	}
	deadline := time.Duration(math.Max(res.TimeLeft, 0) * float64(time.Second))
	cctx, cancel := context.WithTimeout(ctx, deadline)
	c.MaxCost = res.Cost
	began := time.Now()
	stopBeats := s.heartbeat(ctx, res.ID, began)
	out, err := r.Resolve(cctx, c)
	took := time.Since(began).Seconds()
	stopBeats()
	timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	interrupted := err != nil && cctx.Err() != nil // at the deadline, or stopped (Ctrl-C)
	cancel()
	// What the call cost: its own account, or the amount reserved when it
	// was cut off with a request in flight, or its last request got an
	// answer that may have been billed (re.MaybeBilled) (the cost of such a
	// request is unknown, and so is whether it was billed: the reservation
	// is the most it was allowed to cost, and what it adds to the call's
	// own account is marked unknown). Cut off with none in flight (waiting
	// out a retry back-off after an error answer, or before sending), its
	// own account holds: error answers are not billed.
	spent := 0.0
	var re *ResolverError
	switch {
	case err == nil:
		spent = out.Cost
	case errors.As(err, &re):
		spent = re.Cost
	}
	reported, known := spent, spent
	if !(spent >= 0) || math.IsInf(spent, 1) {
		spent, known = res.Cost, 0 // a cost below zero or not a number: the most it was allowed
	}
	unknown := 0.0
	if (interrupted && (re == nil || !re.NotInFlight) || re != nil && re.MaybeBilled) && known < res.Cost {
		unknown, spent = res.Cost-known, math.Max(spent, res.Cost)
	}
	if timedOut {
		took = math.Min(took, res.TimeLeft)
	}
	detail := map[string]any{"resolver": resolverID, "op": c.Op, "raw_io_policy": "redacted_by_default", "cost": spent, "time_seconds": took,
		"reserved": res.Cost, "reservation_id": res.ID}
	var usage llm.Usage
	if out != nil {
		detail["llm_calls"] = out.LLMCalls
		usage = out.Usage
	} else if re != nil && re.LLMCalls > 0 {
		detail["llm_calls"] = re.LLMCalls
		usage = re.Usage
	}
	if usage != (llm.Usage{}) {
		detail["input_tokens"], detail["output_tokens"] = usage.InputTokens, usage.OutputTokens
		detail["cache_creation_input_tokens"], detail["cache_read_input_tokens"] = usage.CacheCreationInputTokens, usage.CacheReadInputTokens
	}
	if err != nil {
		detail["error"] = err.Error()
	}
	if reported != spent {
		detail["reported_cost"] = fmt.Sprint(reported)
	}
	if unknown > 0 {
		detail["outcome"], detail["unknown_usd"] = "unknown", unknown
	}
	if timedOut {
		detail["deadline_seconds"] = res.TimeLeft
	}
	// Settled even when the run is being stopped: the money was spent.
	if _, serr := s.st.Settle(context.WithoutCancel(ctx), store.Settlement{Reservation: res.ID, Cost: spent, Unknown: unknown, Time: took,
		LogSummary: resolverID + " " + c.Op, LogDetail: detail}); serr != nil {
		// Unsettled, the reservation stays open and the next resume settles
		// it at the amount held: the spend is not lost. The call's own error
		// is quoted, not wrapped: whatever it was, the run stops here.
		if err != nil {
			return nil, fmt.Errorf("%w (%s %s): %w; the call itself: %v", errUnsettled, resolverID, c.Op, serr, err)
		}
		return nil, fmt.Errorf("%w (%s %s): %w", errUnsettled, resolverID, c.Op, serr)
	}
	s.spentCost += spent
	s.spentTime += took
	s.e.addSpent(spent)
	s.e.addUsage(usage)
	s.e.crashPoint()
	if timedOut {
		return nil, fmt.Errorf("%w during %s %s after %.1fs (its deadline): %v", errOutOfTime, resolverID, c.Op, took, err)
	}
	return out, err
}

// heartbeat records, every store.HeartbeatInterval while a call runs, how
// long it has run, so a process killed during it leaves the time the call
// took behind: resume settles it at that time, not at its whole hold. The
// returned function stops it. A heartbeat that cannot be written is
// skipped: the call goes on, and should its process die the call costs
// up to its hold in time.
func (s *stepCtx) heartbeat(ctx context.Context, reservation string, began time.Time) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(store.HeartbeatInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = s.st.Heartbeat(ctx, reservation, time.Since(began).Seconds())
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
