package smt

import (
	"context"
	"os/exec"
	"testing"
)

func TestTerms(t *testing.T) {
	if Sum(nil) != "0.0" || Sum([]string{"a"}) != "a" || Sum([]string{"a", "b"}) != "(+ a b)" {
		t.Error("Sum")
	}
	var s Script
	s.DefineMax("m", []string{"a", "b", "c"})
	if got := s.b.String(); got != "(declare-const m Real)\n(assert (>= m a))\n(assert (>= m b))\n(assert (>= m c))\n(assert (or (= m a) (= m b) (= m c)))\n" {
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
	rep, err := Ask(ctx, v, &s, []Question{
		{What: "x is 4", Kernel: "sat", Body: "(assert (= x 4.0))\n"},
		{What: "x exceeds 4 (a wrong kernel answer)", Kernel: "sat", Body: "(assert (> x 4.0))\n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Agree || rep.Disagree != 1 || !rep.Checks[0].Agree || rep.Checks[1].Solver != "unsat" || rep.Disagreements() != `"x exceeds 4 (a wrong kernel answer)": kernel sat, z3 unsat` {
		t.Errorf("report %+v: %s", rep, rep.Disagreements())
	}
}
