package lumen

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/anthropic"
	"github.com/llmkernels/kernels/llm/llmtest"
	"github.com/llmkernels/kernels/llm/script"
	"github.com/llmkernels/kernels/lumen/memory"
)

// cachedTurn is one chat turn's answers, with the usage the script's
// prompt cache estimates.
func cachedTurn(msg string) []step {
	return []step{
		estimated("think", thinkOf(chatSay(msg))),
		estimated("decide", decideAll([]string{"honesty"}, nil, true, 1)),
		estimated("record", recorded),
		estimated("trigger", noTrigger),
	}
}

// longSoul makes the instance block longer than the scripted model's
// minimum cacheable prefix (1,024 tokens of about 4 bytes).
func longSoul(root string) {
	soul := "# Who I am\n\n" + strings.Repeat("I keep my promises and say what I do not know. ", 120)
	if err := os.WriteFile(filepath.Join(root, "data", "soul.md"), []byte(soul), 0o644); err != nil {
		panic(err)
	}
	state([]Value{{"honesty", 0.8, ValueActive}}, nil)(root)
}

// Every step's request begins with the same instance block (soul, values,
// goals, skills) behind a cache breakpoint, the step's instructions after
// it behind a second; nothing that changes between calls (the time, the
// trigger) is in either. The steps of a turn and the next turn read the
// instance from the cache, and the memories record what was read and
// written, priced as the price table says.
func TestStepsShareTheInstancePrefixFromTheCache(t *testing.T) {
	p := scripted(t, append(cachedTurn("one"), cachedTurn("two")...)...)
	prices := llm.PriceTable{"scripted": {Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.3}}
	in, _ := newInstance(t, "", longSoul, func(o *Options) { o.Client = &llm.Client{Provider: p, Prices: prices} })
	ctx := context.Background()
	for _, input := range []string{"Hello", "Still there?"} {
		if _, err := in.Chat(ctx, input); err != nil {
			t.Fatal(err)
		}
	}
	allUsed(t, p)
	reqs := p.Requests()
	first := reqs[0].System[0]
	if first.CacheControl == nil || !strings.Contains(first.Text, "I keep my promises") || !strings.Contains(first.Text, "honesty") {
		t.Fatalf("the first system block is not the instance behind a breakpoint: %+v", first)
	}
	now := in.opts.Now().UTC().Format("2006-01-02")
	for i, r := range reqs {
		if r.System[0].Text != first.Text || r.System[0].CacheControl == nil {
			t.Errorf("request %d: its instance block differs from the first request's:\n%s", i, r.System[0].Text)
		}
		if len(r.System) < 2 || r.System[1].CacheControl == nil || !strings.Contains(r.System[1].Text, "step: ") {
			t.Errorf("request %d: the step's instructions are not the second block, behind a breakpoint: %+v", i, r.System)
		}
		for _, b := range r.System[:2] {
			if strings.Contains(b.Text, now) || strings.Contains(b.Text, "Hello") {
				t.Errorf("request %d: a cached block holds the time or the trigger:\n%s", i, b.Text)
			}
		}
	}
	u, err := in.mem.DayUsage(ctx, memory.Day(in.opts.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if u.Calls != 8 || u.CacheWriteTokens == 0 || 2*u.CacheReadTokens < u.InputTokens {
		t.Fatalf("the day's usage %+v: want 8 calls, writes, and at least half the input read from the cache", u)
	}
	// Each call is priced by its own parts: uncached input, writes for an
	// hour (both breakpoints' lifetime) at 2×, reads at 0.1×.
	var want float64
	for _, e := range list(t, in, memory.Filter{Authors: []string{memory.Kernel}}) {
		if e.Usage == nil {
			continue
		}
		c := e.Usage
		want += (float64(c.InputTokens-c.CacheReadTokens-c.CacheWriteTokens)*3 + float64(c.CacheWriteTokens)*6 +
			float64(c.CacheReadTokens)*0.3 + float64(c.OutputTokens)*15) / 1e6
	}
	if math.Abs(u.CostUSD-want) > 1e-9 || u.CostUSD == 0 {
		t.Fatalf("recorded cost $%.6f, want $%.6f from the cache's prices", u.CostUSD, want)
	}
	st, err := in.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Text(), "% of input from cache") || st.UsageToday.CacheReadTokens != u.CacheReadTokens {
		t.Fatalf("status does not show the cache's share:\n%s", st.Text())
	}
}

// --no-cache (Client.NoCache) sends no breakpoint at all, in a run too
// (the run wraps the client to count spend caps: the setting must pass
// through), and nothing is read from the cache.
func TestNoCacheSendsNoBreakpoints(t *testing.T) {
	in, p := newInstance(t, "run-four-cycles.json", state(
		[]Value{{"curiosity", 0.9, ValueActive}},
		[]Goal{{"learn what the user cares about", 0.8, GoalTodo}, {"understand the world", 0.6, GoalPerpetual}}), nil)
	in.opts.Client.NoCache = true
	if _, err := in.Run(context.Background(), RunOptions{Cycles: 4}); err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	if len(reqs) < 8 {
		t.Fatalf("%d requests: the run made too few calls to tell", len(reqs))
	}
	for i, r := range reqs {
		if r.CacheControl != nil {
			t.Errorf("request %d has a top-level cache_control", i)
		}
		for _, b := range r.System {
			if b.CacheControl != nil {
				t.Errorf("request %d: a system block has a breakpoint with --no-cache", i)
			}
		}
	}
}

// Ctrl-C while a chat turn's answer streams in stops the call at once
// (the server here stalls the stream), keeps nothing of the answer,
// and says so in a kernel memory; the person's input stays.
func TestChatInterruptedMidStreamKeepsNothingOfTheAnswer(t *testing.T) {
	think, _ := json.Marshal(thinkOf(chatSay("hello")))
	sc, err := script.Parse([]byte(`{"responses":[{"content":[{"type":"thinking","thinking":"Let me think about who is there.","signature":"c2ln"},{"type":"text","text":` + strconv.Quote(string(think)) + `}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(sc)
	defer srv.Close()
	srv.BreakStream(llmtest.StreamFault{After: 4, Stall: 15 * time.Second}) // a call not stopped waits it out, then goes on
	provider, err := anthropic.New(anthropic.Config{APIKey: "test-key", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []Progress
	in, _ := newInstance(t, "", nil, func(o *Options) {
		o.Model = "claude-sonnet-4-5"
		o.Client = &llm.Client{Provider: provider}
		o.OnProgress = func(p Progress) {
			got = append(got, p)
			if p.Delta.Kind == llm.DeltaThinking {
				cancel() // Ctrl-C as the thinking arrives
			}
		}
	})
	rep, err := in.Chat(ctx, "Hello?")
	if err == nil {
		t.Fatalf("the interrupted turn succeeded: %+v", rep)
	}
	if len(got) == 0 || got[0].Step != "think" {
		t.Fatalf("progress %+v: the thinking did not arrive as it streamed", got)
	}
	kernel := byAuthor(t, in, memory.Kernel)
	if find(kernel, "THINK:") != nil || len(byAuthor(t, in, memory.Self)) != 0 {
		t.Fatal("a memory of the interrupted answer was written")
	}
	stop := find(kernel, "interrupted: stopped during THINK")
	if stop == nil || stop.Usage != nil {
		t.Fatalf("no kernel memory says the turn was interrupted, or it charges the cut answer: %+v", stop)
	}
	if find(byAuthor(t, in, memory.External), "Hello?") == nil {
		t.Error("the person's input was lost")
	}
	if u := in.Spent(); u.Calls != 0 {
		t.Errorf("the cut answer was counted as a call: %+v", u)
	}
}
