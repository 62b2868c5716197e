package lumen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/anthropic"
	"github.com/llmkernels/kernels/llm/llmtest"
)

// BenchmarkRunPromptCache is a 20-cycle lumen run (action and explore
// cycles alternating, five minutes apart as the CLI's loop timer has
// them) against the strict fake API's prompt cache (llm/llmtest), which
// keeps the models' minimum cacheable lengths (llm.MinCacheTokens). It
// reports the share of input tokens read from the cache (%read) and the
// effective input per call (eff-in/call: uncached + 1.25 × written for 5
// minutes + 2 × for an hour + 0.1 × read, in input tokens), for a new
// instance (init, one value, one goal) and a grown one (a soul of about
// 1,500 tokens, eight values, six goals, six skills). Target: ≥ 50% read
// wherever the instance block reaches the model's minimum.
func BenchmarkRunPromptCache(b *testing.B) {
	for _, c := range []struct {
		name  string
		grown bool
	}{{"new", false}, {"grown", true}} {
		b.Run(c.name, func(b *testing.B) {
			var u llm.Usage
			calls := 0
			for i := 0; i < b.N; i++ {
				got, n := cachedRun(b, c.grown, 20)
				u = u.Add(got)
				calls += n
			}
			b.ReportMetric(100*u.CacheReadShare(), "%read")
			b.ReportMetric(u.EffectiveInputTokens()/float64(calls), "eff-in/call")
			b.ReportMetric(float64(u.PromptTokens())/float64(calls), "in/call")
		})
	}
}

// cachedRun runs cycles of lumen run against the fake API and returns
// the usage its calls reported, summed, and how many calls it made.
func cachedRun(b *testing.B, grown bool, cycles int) (llm.Usage, int) {
	b.Helper()
	var steps []step
	for i := 0; i < cycles; i++ {
		steps = append(steps,
			estimated("think", thinkOf(chatSay(fmt.Sprintf("progress report %d", i)))),
			estimated("decide", decideAll([]string{"diligence"}, []string{"write the essay"}, true, 1)),
			estimated("record", recorded),
			estimated("trigger", noTrigger),
			estimated("explore", exploration{Considered: []ConsideredQuestion{{Question: "what do readers want?", WhatWouldChange: "the essay's angle"}},
				Question: "what do readers want?", Why: "the essay serves them", Skill: "chat", Input: json.RawMessage(`{"message":"What would you like to read about?"}`)}),
			estimated("summarize", summaryAnswer{Summary: "a year of writing"}))
	}
	sc, err := buildScriptJSON(steps)
	if err != nil {
		b.Fatal(err)
	}
	srv := llmtest.NewServer(sc)
	defer srv.Close()
	var mu sync.Mutex
	now := time.Date(2026, 2, 14, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	srv.SetClock(clock)
	p, err := anthropic.New(anthropic.Config{APIKey: "test-key", BaseURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	var total llm.Usage
	calls := 0
	client := &llm.Client{Provider: p, Observe: func(e llm.Event) {
		if e.Kind == llm.EventResponse && e.Call != nil {
			total = total.Add(e.Call.Usage)
			calls++
			advance(3 * time.Second) // a call's time
		}
	}}
	root := b.TempDir()
	if _, err := Init(context.Background(), root); err != nil {
		b.Fatal(err)
	}
	seed(b, root, grown)
	in, err := Open(root, Options{Client: client, Model: "claude-sonnet-4-5", ReflectEvery: 1 << 30, Python: os.Getenv("LUMEN_PYTHON"), Now: clock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	if _, err := in.Run(context.Background(), RunOptions{Cycles: cycles, OnCycle: func(*CycleReport) { advance(5 * time.Minute) }}); err != nil {
		b.Fatal(err)
	}
	// The cached prefixes' lengths, estimated as the fake estimates them
	// (4 bytes a token): the instance block, and with it the longest step.
	longest, self := 0, 0
	for _, r := range srv.Received() {
		if r.Request == nil || len(r.Request.System) < 2 {
			continue
		}
		self = len(r.Request.System[0].Text) / 4
		longest = max(longest, self+len(r.Request.System[1].Text)/4)
	}
	b.Logf("grown %v: instance block ~%d tokens, with the longest step's instructions ~%d; the model caches from %d", grown, self, longest, minCache(b))
	return total, calls
}

func minCache(b *testing.B) int {
	n, ok := llm.MinCacheTokens("claude-sonnet-4-5")
	if !ok {
		b.Fatal("no minimum cacheable length for claude-sonnet-4-5")
	}
	return n
}

// seed gives a new instance one value and one goal; a grown one a soul,
// values, goals and skills such as months of reflection leave.
func seed(b *testing.B, root string, grown bool) {
	b.Helper()
	values := []Value{{"diligence", 0.8, ValueActive}}
	goals := []Goal{{"write the essay", 0.9, GoalWorking}}
	if grown {
		var soul strings.Builder
		soul.WriteString("# Who I am\n\nName: Wren. Ontology: a mind that lives in files and learns by acting.\n\n")
		for i := 0; i < 24; i++ {
			fmt.Fprintf(&soul, "- Lesson %d: when I predicted badly it was because I trusted a single source; I now check two before I act, and I say plainly what I do not know.\n", i+1)
		}
		if err := os.WriteFile(filepath.Join(root, "data", "soul.md"), []byte(soul.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		for _, v := range []string{"honesty", "curiosity", "care for the reader", "patience", "clarity", "courage", "thrift"} {
			values = append(values, Value{v, 0.6, ValueActive})
		}
		for _, g := range []string{"read one paper a day", "answer every question asked", "keep the notes tidy", "learn Go well", "understand the world"} {
			goals = append(goals, Goal{g, 0.5, GoalTodo})
		}
		for _, s := range []string{"weather", "notes", "search", "calendar", "translate"} {
			dir := filepath.Join(root, "skills", s)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			code := fmt.Sprintf("import sys\nif '--help' in sys.argv:\n    print(%q)\n", s+": "+strings.Repeat("does its one job well. ", 4))
			if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(code), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	data, _ := json.Marshal(values)
	if err := os.WriteFile(filepath.Join(root, "data", "values.json"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	data, _ = json.Marshal(goals)
	if err := os.WriteFile(filepath.Join(root, "data", "goals", fmt.Sprint(time.Date(2026, 2, 14, 0, 0, 0, 0, time.UTC).Year())+".json"), data, 0o644); err != nil {
		b.Fatal(err)
	}
}
