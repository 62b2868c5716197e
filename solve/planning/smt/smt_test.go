package smt

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTerms(t *testing.T) {
	if Sum(nil) != "0.0" || Sum([]string{"a"}) != "a" || Sum([]string{"a", "b"}) != "(+ a b)" {
		t.Error("Sum")
	}
	var s Script
	s.DefineMax("m", []string{"a", "b", "c"})
	if got := s.b.String(); got != "(declare-const m__1 Real)\n(assert (= m__1 (ite (>= a b) a b)))\n(declare-const m Real)\n(assert (= m (ite (>= m__1 c) m__1 c)))\n" {
		t.Errorf("DefineMax:\n%s", got)
	}
	if Answer(true) != "sat" || Answer(false) != "unsat" {
		t.Error("Answer")
	}
}

func TestAskComparesTheSolversAnswersWithTheKernels(t *testing.T) {
	if _, err := exec.LookPath("z3"); err != nil {
		t.Skip("z3 is not installed (Debian: apt-get install z3); CI installs it")
	}
	ctx := context.Background()
	v, err := Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var s Script
	s.Define("x", "Real", Sum([]string{"1.5", "2.5"}))
	rep, err := Ask(ctx, v, []Question{
		{What: "x is 4", Kernel: "sat", Defs: &s, Body: "(assert (= x 4.0))\n"},
		{What: "x exceeds 4 (a wrong kernel answer)", Kernel: "sat", Defs: &s, Body: "(assert (> x 4.0))\n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Agree || rep.Disagree != 1 || !rep.Checks[0].Agree || rep.Checks[1].Solver != "unsat" || rep.Disagreements() != `"x exceeds 4 (a wrong kernel answer)": kernel sat, z3 unsat` {
		t.Errorf("report %+v: %s", rep, rep.Disagreements())
	}
}

// Only z3's answer lines count: an error z3 prints about a question is no
// answer, whatever its words (before, every word of z3's output counted:
// "z3 answered 16 of 10 questions").
func TestAskCountsOnlyZ3sAnswers(t *testing.T) {
	if _, err := exec.LookPath("z3"); err != nil {
		t.Skip("z3 is not installed (Debian: apt-get install z3); CI installs it")
	}
	var s Script
	s.Define("x", "Real", "2.0")
	_, err := Ask(context.Background(), "z3", []Question{
		{What: "x is 2", Kernel: Sat, Defs: &s, Body: "(assert (= x 2.0))\n"},
		{What: "y is 2", Kernel: Sat, Defs: &s, Body: "(assert (= y 2.0))\n"},
	})
	if err == nil || !strings.Contains(err.Error(), `z3 answered 1 of 2 questions; no answer to "y is 2"`) || !strings.Contains(err.Error(), "unknown constant y") {
		t.Fatalf("a question z3 refused: %v", err)
	}
}

// fakeZ3 puts a z3 on PATH that runs script.
func fakeZ3(t *testing.T, script string) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "z3"), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// A z3 stopped by the context (the run's time ran out) answered nothing
// it had not finished, whatever it printed before it was stopped.
func TestAskStoppedByItsContextCountsNoAnswer(t *testing.T) {
	fakeZ3(t, `echo sat; echo '(error "canceled")'; echo unknown; exec sleep 60`)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	qs := []Question{{What: "a", Kernel: Sat}, {What: "b", Kernel: Sat}, {What: "c", Kernel: Sat}}
	_, err := Ask(ctx, "z3", qs)
	if err == nil || !strings.Contains(err.Error(), "z3 answered 0 of 3 questions") || !strings.Contains(err.Error(), "and 1 more") {
		t.Fatalf("a z3 stopped by its context: %v", err)
	}
}

// Two answers to one question, or an answer with an error beside it, is
// no answer.
func TestAskRefusesAnAnswerBesideAnythingElse(t *testing.T) {
	for _, out := range []string{`echo sat; echo sat`, `echo '(error "line 9: x")'; echo sat`, `echo ""`} {
		fakeZ3(t, out)
		if _, err := Ask(context.Background(), "z3", []Question{{What: "q", Kernel: Sat}}); err == nil || !strings.Contains(err.Error(), "z3 answered 0 of 1 questions") {
			t.Errorf("z3 printing `%s`: %v", out, err)
		}
	}
	fakeZ3(t, `echo; echo unsat`)
	rep, err := Ask(context.Background(), "z3", []Question{{What: "q", Kernel: Sat}})
	if err != nil || rep.Disagree != 1 || rep.Checks[0].Solver != Unsat {
		t.Errorf("an answer after a blank line: %+v %v", rep, err)
	}
}

// A z3 that keeps thinking past Timeout (it did, reading a 10,000-task
// plan) is stopped, and its question counted undecided, not failed.
func TestAskStopsAQuestionPastItsTimeAsUnknown(t *testing.T) {
	fakeZ3(t, `exec sleep 60`)
	defer func(d time.Duration) { Timeout = d }(Timeout)
	Timeout = 200 * time.Millisecond
	rep, err := Ask(context.Background(), "z3", []Question{{What: "a", Kernel: Sat}, {What: "b", Kernel: Unsat}})
	if err != nil || rep.Unknown != 2 || rep.Agree || rep.Disagree != 0 {
		t.Fatalf("a z3 past its time: %+v %v", rep, err)
	}
}
