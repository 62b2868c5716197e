package lumen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/lumen/memory"
)

// killScript is an endless-enough run: action cycles that answer through
// the chat skill (a subprocess to be killed in), explore cycles, and the
// reflections and summaries they bring.
func killScript(cycles int) []step {
	var steps []step
	for i := 0; i < cycles; i++ {
		steps = append(steps,
			answer("think", thinkOf(chatSay(fmt.Sprintf("tending, round %d", i)))),
			answer("decide", decideAll([]string{"diligence"}, []string{"tend the garden"}, true, 1)),
			answer("record", recorded),
			answer("explore", exploration{Considered: []ConsideredQuestion{{"why do plants grow?", "I would understand"}}, Question: "why do plants grow?", Why: "curiosity"}))
	}
	for i := 0; i < cycles/10+1; i++ {
		steps = append(steps,
			answer("review", reviewAnswer{Summary: "I tended the garden.", Tensions: []Tension{}}),
			answer("ask", askAnswer{Proposals: []Proposal{}}),
			answer("summarize", summaryAnswer{Summary: "A year of gardening."}))
	}
	return steps
}

// runUntilKilled is the helper process: it runs the loop on the instance
// at root until it is killed (or its script runs out).
func runUntilKilled(root string) int {
	p, err := buildScript(killScript(500))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	in, err := Open(root, Options{Client: &llm.Client{Provider: p}, Model: "scripted", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer in.Close()
	if _, err := in.Run(context.Background(), RunOptions{Cycles: 500, Backoff: time.Millisecond}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestKillNineMidStepLosesNothingAndTheRunResumes(t *testing.T) {
	kills := 12
	if raceEnabled {
		kills = 4
	}
	in, _ := newInstance(t, "", state([]Value{{"diligence", 0.8, ValueActive}}, []Goal{{"tend the garden", 0.9, GoalWorking}}), nil)
	root := in.Root
	in.Close()
	r := rand.New(rand.NewPCG(7, 9))
	lines := func() int {
		n := 0
		paths, _ := filepath.Glob(filepath.Join(root, "data", "memory", "*", "*.jsonl"))
		for _, p := range paths {
			data, _ := os.ReadFile(p)
			n += bytes.Count(data, []byte("\n"))
		}
		return n
	}
	for k := 0; k < kills; k++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), killHelperEnv+"="+root)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill it once it has written a random number of lines more.
		target := lines() + 3 + r.IntN(40)
		deadline := time.Now().Add(2 * time.Minute)
		for lines() < target && time.Now().Before(deadline) {
			time.Sleep(time.Duration(1+r.IntN(5)) * time.Millisecond)
		}
		cmd.Process.Kill()
		cmd.Wait()
		if time.Now().After(deadline) {
			t.Fatalf("kill %d: the helper wrote nothing for two minutes: %s", k, stderr.String())
		}
		checkAfterKill(t, root, k)
	}
	// The loop resumes where it was: another run goes on without failure.
	p := scripted(t, killScript(4)...)
	again, err := Open(root, Options{Client: &llm.Client{Provider: p}, Model: "scripted", Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	rep, err := again.Run(context.Background(), RunOptions{Cycles: 4})
	if err != nil || rep.Failed != 0 || rep.Cycles != 4 {
		t.Fatalf("the run after %d kills: %+v, %v", kills, rep, err)
	}
}

// checkAfterKill opens the instance a killed process left and checks it:
// every line but a torn last one is a whole memory, the audit and status
// read it, and the index equals one rebuilt from the files.
func checkAfterKill(t *testing.T, root string, k int) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(root, "data", "memory", "*", "*.jsonl"))
	for _, p := range paths {
		f, _ := os.Open(p)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		var torn []string
		for sc.Scan() {
			if !json.Valid(sc.Bytes()) {
				torn = append(torn, sc.Text())
			}
		}
		f.Close()
		if len(torn) > k+1 { // at most one torn line per kill
			t.Fatalf("kill %d: %d torn lines in %s", k, len(torn), p)
		}
	}
	in, err := Open(root, Options{Now: time.Now})
	if err != nil {
		t.Fatalf("kill %d: the instance does not open: %v", k, err)
	}
	defer in.Close()
	ctx := context.Background()
	if _, err := in.Status(ctx); err != nil {
		t.Fatalf("kill %d: status: %v", k, err)
	}
	a, err := in.Audit(ctx)
	if err != nil || a.Honesty.Pressure != 0 {
		t.Fatalf("kill %d: audit: %+v, %v", k, a, err)
	}
	for _, c := range a.Changes {
		if c.Problem != "" {
			t.Fatalf("kill %d: audit: %+v", k, c)
		}
	}
	if _, err := in.Goals(); err != nil {
		t.Fatalf("kill %d: goals: %v", k, err)
	}
	before := list(t, in, memory.Filter{})
	if err := in.Memory().Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	after := list(t, in, memory.Filter{})
	if len(before) != len(after) {
		t.Fatalf("kill %d: %d memories indexed, %d after a rebuild", k, len(before), len(after))
	}
	for i := range before {
		if before[i].ID != after[i].ID || math.Abs(before[i].Current-after[i].Current) > 1e-9 {
			t.Fatalf("kill %d: memory %s differs from a rebuild", k, before[i].ID)
		}
	}
}
