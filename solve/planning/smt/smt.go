// Package smt asks an SMT solver (the z3 binary, fed SMT-LIB2 on stdin)
// yes-or-no questions and compares its answers with the kernel's. It
// knows nothing about plans: solve/planning encodes its figures as
// definitions (a Script) and its claims as Questions.
//
// Every construct a Script offers is linear in its inputs: a maximum is a
// fresh variable bounded below by each term and equal to one of them, not
// a nested if-then-else that repeats its arguments (which doubled the
// formula per term: a 24-task plan ran z3 out of memory).
package smt

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/proc"
)

// Answers.
const (
	Sat     = "sat"
	Unsat   = "unsat"
	Unknown = "unknown" // the solver gave up (its per-question timeout)
)

// Report is the result of a cross-check.
type Report struct {
	Solver   string  `json:"solver"`
	Agree    bool    `json:"agree"`    // every question answered, as the kernel did
	Disagree int     `json:"disagree"` // questions answered otherwise: a kernel bug
	Unknown  int     `json:"unknown"`  // questions the solver could not decide in time
	Seconds  float64 `json:"seconds"`
	Checks   []Check `json:"checks"`
	Error    string  `json:"error,omitempty"` // why the solver gave no answers at all
}

// Check is one question answered by both.
type Check struct {
	What   string `json:"what"`
	Kernel string `json:"kernel"`
	Solver string `json:"solver"`
	Agree  bool   `json:"agree"`
}

// Disagreements describes the checks where the solver answered otherwise.
func (r *Report) Disagreements() string {
	var out []string
	for _, c := range r.Checks {
		if !c.Agree && c.Solver != Unknown {
			out = append(out, strconv.Quote(c.What)+": kernel "+c.Kernel+", z3 "+c.Solver)
		}
	}
	return strings.Join(out, "; ")
}

// Version finds the z3 binary and returns its version line; the error
// says how to install it.
func Version(ctx context.Context) (string, error) {
	path, err := exec.LookPath("z3")
	if err != nil {
		return "", errors.New("the z3 binary is not on PATH; install it (Debian: apt-get install z3)")
	}
	r, err := proc.Run(ctx, proc.Cmd{Name: path, Args: []string{"--version"}})
	if err == nil {
		err = r.Err()
	}
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", path, err)
	}
	return strings.TrimSpace(string(r.Stdout)), nil
}

// Question is one (check-sat) with the kernel's answer.
type Question struct {
	What   string
	Kernel string // Sat or Unsat
	Body   string // assertions inside (push) … (pop)
}

// Answer is the SMT word for whether something is satisfiable.
func Answer(sat bool) string {
	if sat {
		return Sat
	}
	return Unsat
}

// Timeout is how long z3 may think about one question before answering
// unknown.
var Timeout = 30 * time.Second

// Ask runs the questions after the shared definitions and reports, for
// each, the kernel's answer next to the solver's (named by its version).
// A question z3 cannot decide within Timeout is answered unknown; the
// whole run is also bounded by ctx.
func Ask(ctx context.Context, version string, defs *Script, qs []Question) (*Report, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "(set-option :timeout %d)\n(set-logic ALL)\n", Timeout.Milliseconds())
	b.WriteString(defs.b.String())
	for _, q := range qs {
		fmt.Fprintf(&b, "(push)\n%s(check-sat)\n(pop)\n", q.Body)
	}
	began := time.Now()
	r, err := proc.Run(ctx, proc.Cmd{Name: "z3", Args: []string{"-in", "-smt2"}, Stdin: strings.NewReader(b.String())})
	if err != nil {
		return nil, fmt.Errorf("z3 failed: %w", err)
	}
	answers := strings.Fields(string(r.Stdout))
	if err := r.Err(); err != nil || len(answers) != len(qs) {
		return nil, fmt.Errorf("z3 answered %d of %d questions (%v): %s %s", len(answers), len(qs), err, clip(string(r.Stdout)), clip(string(r.Stderr)))
	}
	rep := &Report{Solver: version, Agree: true, Seconds: time.Since(began).Seconds()}
	for k, q := range qs {
		c := Check{What: q.What, Kernel: q.Kernel, Solver: answers[k], Agree: answers[k] == q.Kernel}
		switch {
		case c.Solver == Unknown:
			rep.Unknown++
		case !c.Agree:
			rep.Disagree++
		}
		rep.Agree = rep.Agree && c.Agree
		rep.Checks = append(rep.Checks, c)
	}
	return rep, nil
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// Script is the SMT-LIB2 text shared by every question: declarations and
// definitions.
type Script struct {
	b strings.Builder
}

// Define declares name of sort and asserts it equals term.
func (s *Script) Define(name, sort, term string) {
	fmt.Fprintf(&s.b, "(declare-const %s %s)\n(assert (= %s %s))\n", name, sort, name, term)
}

// DefineMax declares the Real name and asserts it is the largest of terms
// (0.0 for none): at least each term and equal to one of them. Linear in
// the number of terms.
func (s *Script) DefineMax(name string, terms []string) {
	switch len(terms) {
	case 0:
		s.Define(name, "Real", "0.0")
		return
	case 1:
		s.Define(name, "Real", terms[0])
		return
	}
	fmt.Fprintf(&s.b, "(declare-const %s Real)\n", name)
	eq := make([]string, len(terms))
	for k, t := range terms {
		fmt.Fprintf(&s.b, "(assert (>= %s %s))\n", name, t)
		eq[k] = fmt.Sprintf("(= %s %s)", name, t)
	}
	fmt.Fprintf(&s.b, "(assert (or %s))\n", strings.Join(eq, " "))
}

// Raw appends SMT-LIB2 text as it is.
func (s *Script) Raw(format string, args ...any) {
	fmt.Fprintf(&s.b, format, args...)
}

// Len is the script's size in bytes.
func (s *Script) Len() int { return s.b.Len() }

// Sum is the Real term adding terms (0.0 for none).
func Sum(terms []string) string { return sum(terms, "0.0") }

// IntSum is the Int term adding terms (0 for none).
func IntSum(terms []string) string { return sum(terms, "0") }

func sum(terms []string, zero string) string {
	switch len(terms) {
	case 0:
		return zero
	case 1:
		return terms[0]
	}
	return "(+ " + strings.Join(terms, " ") + ")"
}
