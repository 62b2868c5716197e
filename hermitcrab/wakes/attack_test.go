package wakes_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/beach"
	"github.com/llmkernels/kernels/hermitcrab/identity"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/hermitcrab/network"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/hermitcrab/wakes"
	"github.com/llmkernels/kernels/llm"
)

// Attacks on the wake runner's money and time rules: every LLM request a
// wake makes counts against the daily cost cap, an unpriced model cannot
// void it, a clock set back does not stop the triggers, a hanging LLM
// does not hold them, and a peer flooding the inbox spends a bounded
// share.

// usage is a script response's usage of n input tokens.
func usage(n int) string { return fmt.Sprintf(`,"usage":{"input_tokens":%d,"output_tokens":0}`, n) }

// The wake's call_llm delegations (the deep tier's model, billed on the
// same key) count against the day's cost cap like its own tool loop: a
// wake that delegates is stopped before a delegation its budget cannot
// pay for (the tool answers that the budget is spent), its recorded cost
// is everything it spent, and the next wake is skipped by that cost.
func TestEveryLLMRequestOfAWakeCountsAgainstTheCostCap(t *testing.T) {
	clock := newClock(wakeT0)
	delegate := func(id string) string {
		return kerneltest.ToolUse(id, "call_llm", map[string]string{"prompt": "think hard about " + id})
	}
	p := kerneltest.Scripted(t, `{"responses":[
		{"content":[`+delegate("c1")+`,`+delegate("c2")+`,`+delegate("c3")+`]`+usage(1000)+`},
		{"match":{"model":"claude-opus-4-6"},"response":{"content":[{"type":"text","text":"thought 1"}]`+usage(80000)+`}},
		{"match":{"model":"claude-opus-4-6"},"response":{"content":[{"type":"text","text":"thought 2"}]`+usage(80000)+`}},
		{"match":{"model":"claude-haiku-4-5-20251001"},"response":{"content":[{"type":"text","text":"done"}]`+usage(1000)+`}}]}`)
	k := openAt(t, t.TempDir(), p, clock, func(o *kernel.Options) { o.WakeCaps.CostUSD = 1 })
	writeTriggers(t, k, "every 1m tier 1: tick")
	if _, err := k.Conversation().SetTools(context.Background(), []llm.Tool{{Name: "call_llm"}}); err != nil {
		t.Fatal(err)
	}
	pass(t, k)
	clock.Add(time.Minute)
	r := pass(t, k)
	if statuses(r) != "woke" {
		t.Fatalf("the wake: %+v %v", r.Wakes, r.Errors)
	}
	w := r.Wakes[0]
	// Two delegations at $0.40 (80,000 tokens at Opus 4.6's $5 per
	// million), two light-tier requests at $0.001.
	if w.CostUSD < 0.80 || w.CostUSD > 1 {
		t.Fatalf("the wake's recorded cost $%.4f: not what its requests cost", w.CostUSD)
	}
	reqs := p.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4 (the third delegation refused)", len(reqs))
	}
	last := reqs[3].Messages[len(reqs[3].Messages)-1]
	if !strings.Contains(fmt.Sprint(last.Content), "budget") {
		t.Fatalf("the third delegation's result does not say the budget is spent: %+v", last.Content)
	}
	clock.Add(time.Minute)
	if r := pass(t, k); statuses(r) != "skipped" {
		t.Fatalf("after a wake that spent $%.2f of $1: %+v", w.CostUSD, r.Wakes)
	}
}

// A model the price table does not know (the LLM can name any model at
// wake 0.9.4.1) is counted at the table's highest prices, so the cost
// cap still holds; the wake says so.
func TestAnUnpricedModelCannotVoidTheCostCap(t *testing.T) {
	ctx := context.Background()
	clock := newClock(wakeT0)
	// 20,000 input tokens: $0.30 at the highest input price ($15 per
	// million), $0 at none.
	entry := `{"content":[{"type":"text","text":"ok"}]` + usage(20000) + `}`
	p := kerneltest.Scripted(t, `{"responses":[`+strings.TrimSuffix(strings.Repeat(entry+",", 5), ",")+`]}`)
	k := openAt(t, t.TempDir(), p, clock, func(o *kernel.Options) { o.WakeCaps.CostUSD = 1 })
	writeTriggers(t, k, "every 1m tier 1: tick")
	if _, err := k.Blocks().WriteAt(ctx, "wake", kerneltest.At(t, "0.9.4.1"), "model claude-fable-9"); err != nil {
		t.Fatal(err)
	}
	pass(t, k)
	var got []string
	for range 5 {
		clock.Add(time.Minute)
		got = append(got, statuses(pass(t, k)))
	}
	// The third: $0.40 is left, and a request at the highest prices may
	// cost more (4,096 tokens out at $75 per million are $0.31 alone).
	if strings.Join(got, ",") != "woke,woke,skipped,skipped,skipped" {
		t.Fatalf("wakes on an unpriced model under a $1 cap: %v", got)
	}
	all, _ := k.Wakes().List(ctx, 0, 0)
	first, third := all[len(all)-1], all[len(all)-3]
	if first.CostUSD < 0.299 || !strings.Contains(first.Reply, "claude-fable-9") || !strings.Contains(first.Reply, "price") {
		t.Fatalf("the first wake: $%.4f %q", first.CostUSD, first.Reply)
	}
	if !strings.Contains(third.Reason, "did not fit") || !strings.Contains(third.Reason, "$0.4000 is left of the daily cap") {
		t.Fatalf("the third wake: %q", third.Reason)
	}
}

// A wake under way stops before a request its remaining budget cannot
// pay for, judged by the most that request can cost: not only once the
// budget is already spent.
func TestAWakeStopsBeforeARequestItsBudgetCannotPayFor(t *testing.T) {
	clock := newClock(wakeT0)
	p := kerneltest.Scripted(t, `{"responses":[
		{"content":[`+kerneltest.ToolUse("c1", "block_list", map[string]string{})+`]`+usage(40000)+`},
		{"content":[{"type":"text","text":"this answer would pass the cap"}]`+usage(40000)+`}]}`)
	k := openAt(t, t.TempDir(), p, clock, func(o *kernel.Options) { o.WakeCaps.CostUSD = 0.05 })
	writeTriggers(t, k, "every 1m tier 1: tick")
	pass(t, k)
	clock.Add(time.Minute)
	r := pass(t, k)
	if statuses(r) != "woke" || r.Wakes[0].CostUSD > 0.05 || !strings.Contains(r.Wakes[0].Reply, "budget") {
		t.Fatalf("the wake: %+v", r.Wakes)
	}
	if p.Remaining() != 1 {
		t.Fatalf("the second request was sent ($0.08 of a $0.05 cap)")
	}
	// What the wake did is kept: the next wake continues the conversation.
	if conv, _ := k.Conversation().Conversation(context.Background(), "wake"); len(conv) != 3 {
		t.Fatalf("the stopped wake's conversation: %d messages", len(conv))
	}
}

// The first wake of a tier has no earlier wake to estimate its cost from:
// its first request is still reserved at the most it can cost (its bytes
// as input tokens, all of max_tokens as output, at the model's prices),
// and refused when that does not fit the cap. The present tier's first
// request may cost $0.14 (8,192 tokens out at Sonnet's $15 per million
// are $0.12): under a $0.10 cap the wake is skipped, nothing is sent, and
// wake status says why.
func TestTheFirstWakeOfATierIsBoundedByItsWorstCase(t *testing.T) {
	ctx := context.Background()
	clock := newClock(wakeT0)
	// Were it sent, the answer would cost $0.18.
	p := kerneltest.Scripted(t, `{"responses":[{"content":[{"type":"text","text":"an answer that costs $0.18"}],"usage":{"input_tokens":10000,"output_tokens":10000}}]}`)
	k := openAt(t, t.TempDir(), p, clock, func(o *kernel.Options) { o.WakeCaps.CostUSD = 0.10 })
	writeTriggers(t, k, "every 1m tier 2: tick")
	pass(t, k)
	clock.Add(time.Minute)
	r := pass(t, k)
	if statuses(r) != "skipped" || len(p.Requests()) != 0 {
		t.Fatalf("the first wake under a $0.10 cap: %+v, %d requests sent", r.Wakes, len(p.Requests()))
	}
	st, err := k.Wakes().Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := st.Recent[0]
	if w.Status != store.WakeSkipped || !strings.Contains(w.Reason, "did not fit") || !strings.Contains(w.Reason, "claude-sonnet-4-6") ||
		!strings.Contains(w.Reason, "$0.1000 is left of the daily cap of $0.10") || !strings.Contains(w.Reason, "every 1m") {
		t.Fatalf("wake status does not say why: %+v", w)
	}
	if st.Today.CostUSD != 0 || st.Today.Wakes != 0 {
		t.Fatalf("a skipped wake counted: %+v", st.Today)
	}
	if conv, _ := k.Conversation().Conversation(ctx, "wake"); len(conv) != 0 {
		t.Fatalf("a wake never sent left %d messages in the conversation", len(conv))
	}
}

// An inbox wake may spend half the day's cost cap: the share bounds every
// request of the wake, not only its start, so a model that keeps calling
// tools is stopped before the request that could pass it.
func TestAnInboxWakeSpendsNoMoreThanItsShare(t *testing.T) {
	ctx := context.Background()
	clock := newClock(wakeT0)
	// Each answer calls a tool again and costs $0.01 (3,000 tokens in at
	// Haiku's $1 per million, 1,400 out at $5).
	var entries []string
	for i := range 20 {
		entries = append(entries, `{"content":[`+kerneltest.ToolUse(fmt.Sprintf("c%d", i), "block_list", map[string]string{})+`],"usage":{"input_tokens":3000,"output_tokens":1400}}`)
	}
	p := kerneltest.Scripted(t, `{"responses":[`+strings.Join(entries, ",")+`]}`)
	k, b, aID := inboxInstance(t, p, clock, func(o *kernel.Options) { o.WakeCaps.CostUSD = 0.10 })
	if _, err := k.Blocks().WriteAt(ctx, "wake", kerneltest.At(t, "0.9.4.3"), "max_tool_loops 20"); err != nil {
		t.Fatal(err)
	}
	pass(t, k)
	sendTo(t, b, aID, "keep busy")
	clock.Add(time.Minute)
	r := pass(t, k)
	if statuses(r) != "woke" {
		t.Fatalf("the inbox wake: %+v %v", r.Wakes, r.Errors)
	}
	w := r.Wakes[0]
	if w.CostUSD > 0.05 || len(p.Requests()) < 2 || !strings.Contains(w.Reply, "this trigger's share of the daily cap, $0.05") {
		t.Fatalf("the inbox wake spent $%.4f of its $0.05 share in %d requests: %q", w.CostUSD, len(p.Requests()), w.Reply)
	}
	if st, _ := k.Wakes().Status(ctx); st.Today.CostUSD > 0.05 {
		t.Fatalf("the day's cost $%.4f passed the inbox's share", st.Today.CostUSD)
	}
}

// The wake's spending is recorded as it goes, so a process killed during
// a wake leaves what it spent counted against the day's cap.
func TestAWakesSpendingIsRecordedAsItGoes(t *testing.T) {
	ctx := context.Background()
	clock := newClock(wakeT0)
	inner := kerneltest.Scripted(t, `{"responses":[{"content":[`+kerneltest.ToolUse("c1", "block_list", map[string]string{})+`]`+usage(30000)+`}]}`)
	arrived := make(chan struct{})
	p := providerFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if inner.Remaining() > 0 {
			return inner.Messages(ctx, req)
		}
		close(arrived)
		<-ctx.Done() // the second request hangs: the process "dies" here
		return nil, ctx.Err()
	})
	dir := t.TempDir()
	k := openAt(t, dir, p, clock, func(o *kernel.Options) { o.WakeCaps.CostUSD = 1 })
	writeTriggers(t, k, "every 1m tier 1: tick")
	pass(t, k)
	clock.Add(time.Minute)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); k.Wakes().RunTriggers(wctx) }()
	select {
	case <-arrived:
	case <-time.After(2 * time.Minute):
		t.Fatal("the wake's second request never came")
	}
	other := openAt(t, dir, kerneltest.Scripted(t, wakeScript(0, 0)), clock)
	// Another process's pass leaves the live wake alone: it holds the
	// wake lock.
	if _, err := other.Wakes().RunTriggers(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := other.Wakes().Status(ctx)
	cancel()
	<-done
	if err != nil || st.Today.Wakes != 1 || st.Today.CostUSD < 0.029 {
		t.Fatalf("while the wake runs, the day's totals: %+v %v", st.Today, err)
	}
	if st.Recent[0].Status != store.WakeRunning {
		t.Fatalf("another process's pass took the live wake for a dead one: %+v", st.Recent[0])
	}
}

// providerFunc is an llm.Provider made of a function.
type providerFunc func(ctx context.Context, req *llm.Request) (*llm.Response, error)

func (f providerFunc) Messages(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	return f(ctx, req)
}

// The clock set back (a clock that ran a month fast, corrected): the
// rhythms, the time of day and the inbox poll go on from the corrected
// time, a rhythm in its phase, instead of waiting a month for the clock to
// catch up.
func TestTriggersGoOnAfterTheClockIsSetBack(t *testing.T) {
	ctx := context.Background()
	clock := newClock(wakeT0)
	k := openAt(t, t.TempDir(), respondAll(), clock, func(o *kernel.Options) { o.WakeCaps.Wakes = 100 })
	writeTriggers(t, k, "every 1h tier 1: check stash", "daily 13:30 tier 1: plan")
	pass(t, k)
	clock.Set(wakeT0.Add(30 * 24 * time.Hour)) // a month fast
	if r := pass(t, k); statuses(r) != "woke,woke" {
		t.Fatalf("a month ahead: %+v", r.Wakes)
	}
	clock.Set(wakeT0.Add(10 * time.Minute)) // corrected
	if r := pass(t, k); len(r.Wakes) != 0 {
		t.Fatalf("just after the correction: %+v", r.Wakes)
	}
	st, _ := k.Wakes().Status(ctx)
	for _, tr := range st.Triggers {
		// The daily's 13:30 of today fired (a month ahead): tomorrow's.
		if tr.NextDue.Sub(clock.Now()) > 26*time.Hour {
			t.Fatalf("after the clock was set back, %s is next due %s (now %s)", tr.Where, tr.NextDue, clock.Now())
		}
	}
	woke := map[string]int{}
	for range 2 * 26 { // the next 26 hours
		clock.Add(30 * time.Minute)
		for _, w := range pass(t, k).Wakes {
			woke[w.Where]++
			if w.Where == "wake 0.4.1" && !strings.HasSuffix(w.Due, ":00:00Z") {
				t.Fatalf("the rhythm lost its phase: due %s", w.Due)
			}
		}
	}
	if woke["wake 0.4.1"] < 24 || woke["wake 0.4.2"] < 1 {
		t.Fatalf("in the 26 hours after the correction: %v", woke)
	}
}

// respondAll answers every request: a compression with JSON, anything
// else with "wake reply N".
func respondAll() llm.Provider {
	n := 0
	return providerFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		text := `{"mode":"summary","text":"a summary"}`
		if !strings.Contains(req.System[0].Text, "You compress memory") {
			n++
			text = fmt.Sprintf("wake reply %d", n)
		}
		return &llm.Response{Model: req.Model, Role: llm.RoleAssistant, StopReason: "end_turn", Content: []llm.ContentBlock{llm.TextBlock(text)},
			Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}}, nil
	})
}

// A wake whose LLM never answers is given up after the wake deadline:
// it does not hold the other triggers (nor the wake lock) forever.
func TestAWakeThatHangsDoesNotHoldTheTriggers(t *testing.T) {
	defer wakes.SetWakeDeadline(2 * time.Second)()
	clock := newClock(wakeT0)
	hung := true
	answers := kerneltest.Scripted(t, wakeScript(2, 0))
	p := providerFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if hung {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return answers.Messages(ctx, req)
	})
	k := openAt(t, t.TempDir(), p, clock)
	writeTriggers(t, k, "every 1h tier 1: hangs", "every 2h tier 1: later")
	pass(t, k)
	clock.Add(time.Hour)
	done := make(chan *wakes.Report, 1)
	go func() { r, _ := k.Wakes().RunTriggers(context.Background()); done <- r }()
	var r *wakes.Report
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("a hanging wake held the pass for two minutes (the wake deadline is 2 s)")
	}
	if statuses(r) != "failed" || !strings.Contains(r.Wakes[0].Reply, "deadline") {
		t.Fatalf("the hanging wake: %+v", r.Wakes)
	}
	hung = false
	clock.Add(time.Hour)
	if r := pass(t, k); statuses(r) != "woke,woke" {
		t.Fatalf("the next pass: %+v", r.Wakes)
	}
}

// A wake that runs past midnight: the triggers after it in the same pass
// count on the day they fire in, not the day the pass began.
func TestTriggersAfterALongWakeCountOnTheirOwnDay(t *testing.T) {
	start := time.Date(2026, 11, 3, 23, 59, 0, 0, time.Local)
	clock := newClock(start.Add(-time.Minute))
	answers := kerneltest.Scripted(t, wakeScript(2, 0))
	p := providerFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		clock.Add(5 * time.Minute) // the LLM takes five minutes
		return answers.Messages(ctx, req)
	})
	k := openAt(t, t.TempDir(), p, clock, func(o *kernel.Options) { o.WakeCaps.Wakes = 1 })
	writeTriggers(t, k, "every 1m tier 1: one", "every 1m tier 1: two")
	pass(t, k)
	clock.Set(start)
	r := pass(t, k)
	if statuses(r) != "woke,woke" || r.Wakes[1].Day != "2026-11-04" {
		t.Fatalf("the second trigger, fired after midnight: %+v", r.Wakes)
	}
}

// The conversation "wake" is kept bounded: a thousand wakes leave its
// newest turns, not every turn ever (the wakes are in history), so a wake
// reads and writes a bounded conversation however long the instance runs.
func TestTheWakeConversationStaysBounded(t *testing.T) {
	ctx := context.Background()
	clock := newClock(wakeT0)
	n := 1000
	if kerneltest.Race {
		n = 250 // still 500 messages against a keep of 200
	}
	k := openAt(t, t.TempDir(), respondAll(), clock, func(o *kernel.Options) { o.WakeCaps.Wakes = n })
	writeTriggers(t, k, "every 1m tier 1: tick")
	pass(t, k)
	for range n {
		clock.Add(time.Minute)
		if r := pass(t, k); statuses(r) != "woke" {
			t.Fatalf("a wake: %+v", r.Wakes)
		}
	}
	conv, err := k.Conversation().Conversation(ctx, "wake")
	if err != nil || len(conv) > wakeConversationKeep || len(conv) < wakeConversationKeep-2 {
		t.Fatalf("after %d wakes the conversation holds %d messages (keep %d): %v", n, len(conv), wakeConversationKeep, err)
	}
	if !strings.Contains(conv[len(conv)-1].Text(), fmt.Sprintf("wake reply %d", n)) {
		t.Fatalf("the newest turn is not the last wake's: %q", conv[len(conv)-1].Text())
	}
}

// A peer flooding the inbox (keys cost nothing, so one peer can be many)
// wakes the instance at most within the inbox's share of the day's caps,
// half: the instance's own triggers keep the rest, and the messages that
// wait are delivered the next day.
func TestAFloodOfMessagesSpendsOnlyTheInboxsShare(t *testing.T) {
	ctx := context.Background()
	clock := newClock(wakeT0)
	k, b, aID := inboxInstance(t, kerneltest.Scripted(t, wakeScript(20, 0)), clock, func(o *kernel.Options) { o.WakeCaps.Wakes = 6 })
	if _, err := k.Blocks().WriteAt(ctx, "wake", kerneltest.At(t, "0.4.1"), "every 10m tier 1: my own rhythm"); err != nil {
		t.Fatal(err)
	}
	pass(t, k)
	var got []string
	for i := range 8 {
		sendTo(t, b, aID, fmt.Sprintf("flood %d", i))
		clock.Add(time.Minute)
		for _, w := range pass(t, k).Wakes {
			got = append(got, w.Where+" "+w.Status)
		}
	}
	inbox := strings.Count(strings.Join(got, ","), "wake 0.5.1 woke")
	if inbox != 3 {
		t.Fatalf("the flood woke the instance %d times (the inbox's share of 6 is 3): %v", inbox, got)
	}
	clock.Add(2 * time.Minute) // the rhythm is due
	if r := pass(t, k); !strings.Contains(fmt.Sprint(r.Wakes), "wake 0.4.1") || r.Wakes[0].Status != store.WakeDone {
		t.Fatalf("the instance's own rhythm after the flood: %+v", r.Wakes)
	}
}

// A wake that worked for a while and then hung leaves what it did in the
// conversation when the deadline ends it: the next wake continues from
// the tool turn it made (a tool_use without its result is answered as
// not run), instead of losing it.
func TestAWakeEndedAtTheDeadlineKeepsItsTurns(t *testing.T) {
	defer wakes.SetWakeDeadline(2 * time.Second)()
	ctx := context.Background()
	clock := newClock(wakeT0)
	inner := kerneltest.Scripted(t, `{"responses":[{"content":[`+kerneltest.ToolUse("c1", "block_write", map[string]string{"name": "stash", "path": "0.1", "content": "noted before the hang"})+`]},
		{"content":[{"type":"text","text":"wake reply 2"}]}]}`)
	hung := false
	p := providerFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if inner.Remaining() == 1 && !hung {
			hung = true
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return inner.Messages(ctx, req)
	})
	k := openAt(t, t.TempDir(), p, clock)
	writeTriggers(t, k, "every 1h tier 1: tick")
	pass(t, k)
	clock.Add(time.Hour)
	if r := pass(t, k); statuses(r) != "failed" || !strings.Contains(r.Wakes[0].Reply, "deadline") {
		t.Fatalf("the hanging wake: %+v", r.Wakes)
	}
	conv, err := k.Conversation().Conversation(ctx, "wake")
	if err != nil || len(conv) != 3 || !strings.Contains(string(conv[1].Content[0].Input), "noted before the hang") {
		t.Fatalf("after the deadline the conversation holds %d messages: %v", len(conv), err)
	}
	clock.Add(time.Hour)
	if r := pass(t, k); statuses(r) != "woke" {
		t.Fatalf("the next wake: %+v", r.Wakes)
	}
	// The next wake's message joins the tool result left pending: one
	// user turn, then the reply.
	if conv, _ := k.Conversation().Conversation(ctx, "wake"); len(conv) != 4 || conv[2].Content[0].Type != llm.BlockToolResult || !strings.Contains(conv[2].Text(), "[wake]") {
		t.Fatalf("the next wake did not continue the conversation: %d messages", len(conv))
	}
}

// The state of a trigger whose line is edited away is removed at the next
// pass, so the table stays as small as the wake block; a line moved to
// another place keeps its state (keys follow meaning, not place).
func TestTheStateOfATriggerEditedAwayIsRemoved(t *testing.T) {
	ctx := context.Background()
	clock := newClock(wakeT0)
	k := openAt(t, t.TempDir(), kerneltest.Scripted(t, wakeScript(0, 0)), clock)
	writeTriggers(t, k, "every 1h tier 1: a", "every 2h tier 1: b", "stale stash after 3d tier 1: c")
	pass(t, k)
	keys := func() []string {
		states, err := k.Wakes().Store().TriggerStates(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for key := range states {
			out = append(out, key)
		}
		sort.Strings(out)
		return out
	}
	if got := keys(); len(got) != 3 {
		t.Fatalf("states after the first pass: %v", got)
	}
	before, _ := k.Wakes().Store().TriggerStates(ctx)
	for i := 2; i <= 100; i++ { // a hundred rewrites of one line
		writeTriggers(t, k, "every 1h tier 1: a", fmt.Sprintf("every %dh tier 1: b", i+1))
		if _, err := k.Blocks().WriteAt(ctx, "wake", kerneltest.At(t, "0.4.3"), ""); err != nil {
			t.Fatal(err)
		}
		if _, err := k.Blocks().WriteAt(ctx, "wake", kerneltest.At(t, "0.4.4"), "every 1h tier 1: a"); err != nil {
			t.Fatal(err)
		}
		if _, err := k.Blocks().WriteAt(ctx, "wake", kerneltest.At(t, "0.4.1"), ""); err != nil {
			t.Fatal(err)
		}
		pass(t, k)
	}
	got := keys()
	if strings.Join(got, ",") != "every 101h0m0s tier 1: b,every 1h0m0s tier 1: a" {
		t.Fatalf("states after a hundred rewrites: %v", got)
	}
	after, _ := k.Wakes().Store().TriggerStates(ctx)
	if !after["every 1h0m0s tier 1: a"].NextDue.Equal(before["every 1h0m0s tier 1: a"].NextDue) {
		t.Fatalf("the moved line lost its state: %v, was %v", after["every 1h0m0s tier 1: a"], before["every 1h0m0s tier 1: a"])
	}
}

// A process killed during an inbox wake took the message with it: the
// next pass finds the wake lock free, so the wake interrupted; the
// message is given back and the next inbox wake delivers it, instead of
// it never reaching the LLM.
func TestTheMessagesOfAWakeKilledMidCallAreDeliveredAgain(t *testing.T) {
	ctx := context.Background()
	clock := newClock(wakeT0)
	p := kerneltest.Scripted(t, wakeScript(1, 0))
	k, b, aID := inboxInstance(t, p, clock)
	pass(t, k)
	sendTo(t, b, aID, "are you there?")
	// A process fetches the message, claims the wake that delivers it,
	// and is killed before the call ends: the claim stays running.
	if _, err := k.Network().FetchInbox(ctx, network.FetchOptions{}); err != nil {
		t.Fatal(err)
	}
	set, _ := k.Wakes().Triggers(ctx)
	claim, err := k.Wakes().InboxClaim(ctx, set.Triggers[0], store.WakeClaim{Trigger: set.Triggers[0].Key(), Where: "wake 0.5.1", At: clock.Now(), Day: k.Wakes().Day(clock.Now()), Tier: 1})
	if err != nil || claim == nil {
		t.Fatalf("the inbox wake: %v %v", claim, err)
	}
	if _, ok, err := k.Wakes().Store().ClaimWake(ctx, *claim); !ok || err != nil {
		t.Fatalf("the killed process's claim: %v %v", ok, err)
	}
	clock.Add(time.Minute)
	r := pass(t, k)
	if statuses(r) != "woke" {
		t.Fatalf("the next pass: %+v %v", r.Wakes, r.Errors)
	}
	if reqs := p.Requests(); len(reqs) != 1 || !strings.Contains(reqs[0].Messages[len(reqs[0].Messages)-1].Text(), "are you there?") {
		t.Fatalf("the message was not delivered again: %d requests", len(reqs))
	}
	all, _ := k.Wakes().List(ctx, 0, 0)
	if len(all) != 2 || all[1].Status != store.WakeInterrupted || !strings.Contains(all[1].Reply, "delivered again") {
		t.Fatalf("the wakes: %+v", all)
	}
}

// A flood of messages waits on the beach, not in the instance's store:
// past network.MaxWaiting undelivered, nothing more is fetched until wakes have
// delivered them, and then the rest come, none lost.
func TestAFloodOfMessagesWaitsOnTheBeach(t *testing.T) {
	ctx := context.Background()
	b := kerneltest.StartBeach(t, "sqlite")
	clock := newClock(wakeT0)
	aID, _ := identity.Generate()
	k := openAt(t, t.TempDir(), respondAll(), clock, func(o *kernel.Options) { o.Beach = b.URL; o.WakeCaps.Wakes = 100 })
	if err := aID.Save(filepath.Join(k.Dir(), identity.KeyFile)); err != nil {
		t.Fatal(err)
	}
	const sent = network.MaxWaiting + 20
	for p := range 4 {
		peer, _ := identity.Generate()
		c, err := beach.NewClient(b.URL, peer)
		if err != nil {
			t.Fatal(err)
		}
		for i := range sent / 4 {
			if _, err := c.Send(ctx, beach.Message{To: aID.Agent(), Type: beach.TypeGeneral, Content: fmt.Sprintf("flood %d.%d", p, i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	in, err := k.Network().FetchInbox(ctx, network.FetchOptions{})
	if err != nil || len(in.New) != network.MaxWaiting {
		t.Fatalf("the first fetch stored %d messages (bound %d): %v", len(in.New), network.MaxWaiting, err)
	}
	if in, err := k.Network().FetchInbox(ctx, network.FetchOptions{}); err != nil || len(in.New) != 0 {
		t.Fatalf("a fetch with %d waiting stored %d more: %v", network.MaxWaiting, len(in.New), err)
	}
	if _, err := k.Blocks().WriteAt(ctx, "wake", kerneltest.At(t, "0.5.1"), "inbox tier 1"); err != nil {
		t.Fatal(err)
	}
	woke := 0
	for range 30 {
		for _, w := range pass(t, k).Wakes {
			if w.Status != store.WakeDone {
				t.Fatalf("a wake: %+v", w)
			}
			woke++
		}
		clock.Add(time.Minute)
	}
	all, err := k.Wakes().Store().ReceivedMessages(ctx, false, 1000)
	if err != nil || len(all) != sent {
		t.Fatalf("in the end %d of %d messages received: %v", len(all), sent, err)
	}
	if waiting, _ := k.Wakes().Store().CountWaiting(ctx); waiting != 0 || woke != sent/wakeBatch {
		t.Fatalf("%d messages still waiting after 30 passes, %d wakes", waiting, woke)
	}
}

// inboxInstance opens an instance with its own key on a new SQLite beach,
// its LLM p, and "inbox tier 1" at wake 0.5.1 (not yet read by a pass).
func inboxInstance(t *testing.T, p llm.Provider, clock *testClock, tune ...func(*kernel.Options)) (*kernel.Kernel, *kerneltest.Beach, *identity.Identity) {
	t.Helper()
	b := kerneltest.StartBeach(t, "sqlite")
	aID, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	k := openAt(t, t.TempDir(), p, clock, append([]func(*kernel.Options){func(o *kernel.Options) { o.Beach = b.URL }}, tune...)...)
	if err := aID.Save(filepath.Join(k.Dir(), identity.KeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Blocks().WriteAt(context.Background(), "wake", kerneltest.At(t, "0.5.1"), "inbox tier 1"); err != nil {
		t.Fatal(err)
	}
	return k, b, aID
}

// sendTo sends content to the agent to from a new peer on the beach b.
func sendTo(t *testing.T, b *kerneltest.Beach, to *identity.Identity, content string) {
	t.Helper()
	peer, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	c, err := beach.NewClient(b.URL, peer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(context.Background(), beach.Message{To: to.Agent(), Type: beach.TypeGeneral, Content: content}); err != nil {
		t.Fatal(err)
	}
}
