package lumen

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/llmkernels/kernels/lumen/memory"
)

// longRunScript answers n cycles of a run whose action cycles skip (M <
// 0.2: no skill process) and whose explore cycles use no skill, with the
// reflections and summaries they bring.
func longRunScript(t testing.TB, n int) []step {
	var steps []step
	skip := decideAll([]string{"idleness"}, []string{"tend the garden"}, false, 1)
	for i := 0; i < n; i++ {
		steps = append(steps,
			answer("think", thinkOf(chatSay(`tending`))),
			answer("decide", skip),
			answer("explore", exploration{Considered: []ConsideredQuestion{{"why do plants grow?", "I would understand"}}, Question: "why do plants grow?", Why: "curiosity"}))
	}
	for i := 0; i < n/10+1; i++ {
		steps = append(steps,
			answer("review", reviewAnswer{Summary: "I tended the garden.", Tensions: []Tension{}}),
			answer("ask", askAnswer{Proposals: []Proposal{}}),
			answer("summarize", summaryAnswer{Summary: "A year of gardening."}))
	}
	return steps
}

func TestAThousandCycleRunStaysCorrect(t *testing.T) {
	cycles := 1000
	if raceEnabled {
		cycles = 100
	}
	p := scripted(t, longRunScript(t, cycles)...)
	in, _ := newInstance(t, "", state([]Value{{"idleness", 0.1, ValueActive}}, []Goal{{"tend the garden", 0.9, GoalWorking}}), withScript(p))
	ctx := context.Background()
	start := time.Now()
	var firstTenth, lastTenth time.Duration
	rep, err := in.Run(ctx, RunOptions{Cycles: cycles, OnCycle: func(r *CycleReport) {
		if r.Failed != "" {
			t.Errorf("cycle %d failed: %s", r.N, r.Failed)
		}
		switch {
		case r.N <= cycles/10:
			firstTenth += r.Duration
		case r.N > cycles-cycles/10:
			lastTenth += r.Duration
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d cycles in %s: first tenth %s, last tenth %s", cycles, time.Since(start).Round(time.Millisecond), firstTenth.Round(time.Millisecond), lastTenth.Round(time.Millisecond))
	if rep.Cycles != cycles || rep.Failed != 0 || rep.ByLoop[LoopAction] != cycles/2 {
		t.Fatalf("run = %+v", rep)
	}
	reviews := list(t, in, memory.Filter{Authors: []string{memory.Kernel}, Step: stepReview})
	if want := cycles / 2 / 10; len(reviews) != want {
		t.Errorf("%d reflections, want %d (one every 10 action cycles)", len(reviews), want)
	}
	// The index built along the way equals one rebuilt from the files.
	before := list(t, in, memory.Filter{})
	if err := in.Memory().Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	after := list(t, in, memory.Filter{})
	if len(before) != len(after) {
		t.Fatalf("%d memories incrementally, %d rebuilt", len(before), len(after))
	}
	for i := range before {
		if before[i].ID != after[i].ID || math.Abs(before[i].Current-after[i].Current) > 1e-9 || before[i].Strength != after[i].Strength {
			t.Fatalf("memory %d differs: incremental %+v, rebuilt %+v", i, before[i], after[i])
		}
	}
}

func TestARunAndAChatAtOnceLoseNothing(t *testing.T) {
	runSteps := longRunScript(t, 20)
	var chatSteps []step
	for i := 0; i < 10; i++ {
		chatSteps = append(chatSteps, chatTurn("noted")...)
		// The period counts both processes' action cycles: the chat may
		// be the one that reflects.
		chatSteps = append(chatSteps, answer("review", reviewAnswer{Summary: "notes", Tensions: []Tension{}}), answer("ask", askAnswer{Proposals: []Proposal{}}))
	}
	runner, _ := newInstance(t, "", state([]Value{{"idleness", 0.1, ValueActive}, {"honesty", 0.8, ValueActive}},
		[]Goal{{"tend the garden", 0.9, GoalWorking}}), withScript(scripted(t, runSteps...)))
	chatOpts := runner.opts
	chatOpts.Client = nil
	withScript(scripted(t, chatSteps...))(&chatOpts)
	chatter, err := Open(runner.Root, chatOpts) // another process's view of the same instance
	if err != nil {
		t.Fatal(err)
	}
	defer chatter.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		rep, err := runner.Run(ctx, RunOptions{Cycles: 20})
		if err == nil && rep.Failed > 0 {
			err = errorf("the run had %d failed cycles", rep.Failed)
		}
		errs <- err
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 10; i++ {
			if _, err := chatter.Chat(ctx, "note number "+string(rune('a'+i))); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	ext := byAuthor(t, runner, memory.External)
	cyc := list(t, runner, memory.Filter{Step: "cycle"})
	if len(ext) != 10 || len(cyc) != 20 {
		t.Fatalf("%d chat inputs and %d cycles recorded, want 10 and 20", len(ext), len(cyc))
	}
	// Both views of the index agree with each other and with a rebuild.
	a, b := list(t, runner, memory.Filter{}), list(t, chatter, memory.Filter{})
	if len(a) != len(b) {
		t.Fatalf("the two processes' indexes hold %d and %d memories", len(a), len(b))
	}
	if err := runner.Memory().Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	r := list(t, runner, memory.Filter{})
	byID := map[string]memory.Entry{}
	for _, e := range r {
		byID[e.ID] = e
	}
	for _, e := range b {
		if got, ok := byID[e.ID]; !ok || math.Abs(got.Current-e.Current) > 1e-9 {
			t.Fatalf("memory %s: the chat's index says %v, a rebuild %v", e.ID, e.Current, got.Current)
		}
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
