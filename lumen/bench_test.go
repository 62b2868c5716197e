package lumen

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/lumen/memory"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/script"
)

// cycleScript repeats one action cycle's answers n times.
func cycleScript(b *testing.B, n int, alignValues []string, record bool) *script.Provider {
	text := func(v any) map[string]any {
		data, _ := json.Marshal(v)
		return map[string]any{"content": []map[string]any{{"type": "text", "text": string(data)}}}
	}
	var entries []any
	for i := 0; i < n; i++ {
		entries = append(entries,
			text(thought{Situation: "the user may want news of my work", Candidates: []Candidate{{Action: "tell the user what I am working on",
				Skill: "chat", Input: json.RawMessage(`{"message":"I am working on my essay."}`), Predicted: "the user knows", Counterfactual: "silence"}}}),
			text(decision{Alignments: []Alignment{{Candidate: 1, Values: alignValues, Goals: []string{"write the essay"}, Direct: true}}, Preference: []int{1}}))
		if record {
			entries = append(entries, text(recordAnswer{Outcome: "told", Delta: 0.1, DeltaExplanation: "as predicted", Changes: []Change{}}))
		}
	}
	data, _ := json.Marshal(map[string]any{"responses": entries})
	s, err := script.Parse(data)
	if err != nil {
		b.Fatal(err)
	}
	return script.New(s)
}

func benchInstance(b *testing.B, p *script.Provider) *Instance {
	root := b.TempDir()
	if _, err := Init(context.Background(), root); err != nil {
		b.Fatal(err)
	}
	in, err := Open(root, Options{Client: &llm.Client{Provider: p}, Model: "scripted", ReflectEvery: 1 << 30, Python: os.Getenv("LUMEN_PYTHON"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close() })
	if err := in.writeValues([]Value{{"diligence", 0.8, ValueActive}, {"idleness", 0.1, ValueActive}}); err != nil {
		b.Fatal(err)
	}
	if err := in.writeGoalYear(in.opts.Now().UTC().Year(), []Goal{{"write the essay", 0.9, GoalWorking}}); err != nil {
		b.Fatal(err)
	}
	return in
}

// BenchmarkActionCycle measures one whole action cycle with an instant
// scripted provider: goal selection, retrieval, THINK, DECIDE, the chat
// skill as a python3 subprocess, RECORD, the trigger check and every
// memory write.
func BenchmarkActionCycle(b *testing.B) {
	in := benchInstance(b, cycleScript(b, b.N, []string{"diligence"}, true))
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, _, err := in.pursueGoal(ctx)
		if err != nil || rep.Skill == nil || !rep.Skill.OK {
			b.Fatalf("cycle %d: %v %+v", i, err, rep)
		}
	}
}

// BenchmarkActionCycleKernelOnly is the kernel's own overhead: a cycle
// whose DECIDE skips (M < 0.2), so no skill process runs.
func BenchmarkActionCycleKernelOnly(b *testing.B) {
	in := benchInstance(b, cycleScript(b, b.N, []string{"idleness"}, false))
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, _, err := in.pursueGoal(ctx)
		if err != nil || rep.Verdict.Outcome != OutcomeSkip {
			b.Fatalf("cycle %d: %v %+v", i, err, rep)
		}
	}
}

// BenchmarkChatRecall100k asks the planted questions, in turn, in chat
// turns on a generated instance of 100,000 memories (a year of chat turns,
// goal and explore cycles, a decay pass every six hours; twelve facts told
// early, their words in everyday chatter since): the time of a whole turn
// with an instant scripted provider (retrieval, prompts, THINK, DECIDE
// skipping, the trigger, every memory write) and the share of questions
// whose fact THINK got among the relevant memories. Target: recall 1.
func BenchmarkChatRecall100k(b *testing.B) {
	root, facts := buildChat100k(b)
	start := time.Now()
	in := openRecall(b, root, b.N)
	defer in.Close()
	b.Logf("opened (index brought up to date) in %s", time.Since(start).Round(time.Millisecond))
	ctx := context.Background()
	found := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ok, err := askPlanted(ctx, in, i%len(plantedChat), facts)
		if err != nil {
			b.Fatal(err)
		}
		if ok {
			found++
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(found)/float64(b.N), "recall")
}

// BenchmarkStatus100k is lumen status (a read-only open and Status) on the
// generated instance of 100,000 memories: with the index current on disk,
// as every command that writes leaves it, and with it behind the files by
// one line (a writer killed between writing a line and indexing it), when
// the index is copied into memory and the line read into the copy.
func BenchmarkStatus100k(b *testing.B) {
	root, _ := buildChat100k(b)
	ctx := context.Background()
	status := func(b *testing.B, wantIndex string) {
		for i := 0; i < b.N; i++ {
			in, err := Open(root, Options{ReadOnly: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			st, err := in.Status(ctx)
			if err != nil || !strings.HasPrefix(st.Index, wantIndex) {
				b.Fatalf("status: index %q, %v; want %s", st.Index, err, wantIndex)
			}
			in.Close()
		}
	}
	sync := func(b *testing.B) {
		in := openRecall(b, root, 0)
		if _, err := in.mem.Count(ctx, memory.Filter{}); err != nil {
			b.Fatal(err)
		}
		in.Close()
	}
	b.Run("current", func(b *testing.B) {
		sync(b)
		b.ResetTimer()
		status(b, "on disk")
	})
	b.Run("behind", func(b *testing.B) {
		sync(b)
		appendUnindexed(b, root, memory.Memory{Timestamp: time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC), Author: memory.External, Weight: 0.5,
			Situation: "chat", Description: "a line its writer did not index"})
		b.ResetTimer()
		status(b, "in memory")
		b.StopTimer()
		sync(b)
	})
}
