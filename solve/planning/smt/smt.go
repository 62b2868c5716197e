// Package smt asks an SMT solver (the z3 binary, fed SMT-LIB2 on stdin)
// yes-or-no questions and compares its answers with the kernel's. It
// knows nothing about plans: solve/planning encodes its figures as
// definitions (a Script) and its claims as Questions.
package smt

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/llmkernels/kernels/internal/proc"
)

// Report is the result of a cross-check.
type Report struct {
	Solver string  `json:"solver"`
	Agree  bool    `json:"agree"`
	Checks []Check `json:"checks"`
}

// Check is one question answered by both.
type Check struct {
	What   string `json:"what"`
	Kernel string `json:"kernel"`
	Solver string `json:"solver"`
	Agree  bool   `json:"agree"`
}

// Disagreements describes the checks where the solver disagreed.
func (r *Report) Disagreements() string {
	var out []string
	for _, c := range r.Checks {
		if !c.Agree {
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
	Kernel string // "sat" or "unsat"
	Body   string // assertions inside (push) … (pop)
}

// Answer is the SMT word for whether something is satisfiable.
func Answer(sat bool) string {
	if sat {
		return "sat"
	}
	return "unsat"
}

// Ask runs the questions after the shared definitions and reports, for
// each, the kernel's answer next to the solver's (named by its version).
func Ask(ctx context.Context, version string, defs *Script, qs []Question) (*Report, error) {
	var b strings.Builder
	b.WriteString("(set-logic ALL)\n")
	b.WriteString(defs.b.String())
	for _, q := range qs {
		fmt.Fprintf(&b, "(push)\n%s(check-sat)\n(pop)\n", q.Body)
	}
	r, err := proc.Run(ctx, proc.Cmd{Name: "z3", Args: []string{"-in", "-smt2", "-T:30"}, Stdin: strings.NewReader(b.String())})
	if err != nil {
		return nil, fmt.Errorf("z3 failed: %w", err)
	}
	out := r.Stdout
	answers := strings.Fields(string(out))
	if err := r.Err(); err != nil && len(answers) < len(qs) {
		return nil, fmt.Errorf("z3 failed: %v: %s %s", err, strings.TrimSpace(string(out)), strings.TrimSpace(string(r.Stderr)))
	}
	if len(answers) != len(qs) {
		return nil, fmt.Errorf("z3 answered %d of %d questions: %s", len(answers), len(qs), strings.TrimSpace(string(out)))
	}
	rep := &Report{Solver: version, Agree: true}
	for k, q := range qs {
		c := Check{What: q.What, Kernel: q.Kernel, Solver: answers[k], Agree: answers[k] == q.Kernel}
		rep.Agree = rep.Agree && c.Agree
		rep.Checks = append(rep.Checks, c)
	}
	return rep, nil
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

// Raw appends SMT-LIB2 text as it is.
func (s *Script) Raw(format string, args ...any) {
	fmt.Fprintf(&s.b, format, args...)
}

// Sum is the term adding terms (0.0 for none).
func Sum(terms []string) string {
	switch len(terms) {
	case 0:
		return "0.0"
	case 1:
		return terms[0]
	}
	return "(+ " + strings.Join(terms, " ") + ")"
}

// Max is the term for the largest of terms (0.0 for none).
func Max(terms []string) string {
	if len(terms) == 0 {
		return "0.0"
	}
	acc := terms[0]
	for _, t := range terms[1:] {
		acc = fmt.Sprintf("(ite (>= %s %s) %s %s)", acc, t, acc, t)
	}
	return acc
}
