// Package smt asks an SMT solver (the z3 binary, fed SMT-LIB2 on stdin)
// yes-or-no questions and compares its answers with the kernel's. It
// knows nothing about plans: solve/planning encodes its figures as
// definitions (a Script) and its claims as Questions.
//
// Every construct a Script offers is linear in its inputs and defines
// each variable as a function of earlier ones: a maximum is a chain of
// named running maxima, each an if-then-else of the previous one and the
// next term (not one nested if-then-else that repeats its arguments, which
// doubled the formula per term: a 24-task plan ran z3 out of memory; and
// not "at least each term and equal to one of them", a disjunction z3 had
// to search: at 1,000 tasks half the questions ran out of time).
package smt

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
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
	Kernel string  // Sat or Unsat
	Defs   *Script // the definitions Body reads (nil: none)
	Body   string  // assertions after them
}

// Answer is the SMT word for whether something is satisfiable.
func Answer(sat bool) string {
	if sat {
		return Sat
	}
	return Unsat
}

// Timeout is how long z3 may think about one question before answering
// unknown. z3 does not always keep to it (it reads and simplifies the
// definitions before its clock starts): a run still going at half as
// long again is stopped, and its question counted unknown.
var Timeout = 30 * time.Second

// Ask asks z3 the questions and reports, for each, the kernel's answer
// next to the solver's (named by its version). Each question is its own
// z3 run over only its own definitions, as many at once as there are
// CPUs: a run without push and pop lets z3 simplify the definitions
// before it searches (one run asking every question in turn searched
// them as they stand). A question z3 cannot decide within Timeout is
// answered unknown; ctx bounds the whole. Only z3's answer line counts:
// a run that ends without exactly one sat, unsat or unknown, or that says
// anything else (an error), fails Ask, naming the question.
func Ask(ctx context.Context, version string, qs []Question) (*Report, error) {
	began := time.Now()
	answers := make([]string, len(qs))
	errs := make([]error, len(qs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.NumCPU(), len(qs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				answers[k], errs[k] = ask(ctx, qs[k])
			}
		}()
	}
	for k := range qs {
		if ctx.Err() != nil {
			errs[k] = ctx.Err()
			continue
		}
		next <- k
	}
	close(next)
	wg.Wait()
	var failed []string
	for k, err := range errs {
		if err != nil {
			failed = append(failed, fmt.Sprintf("%q (%v)", qs[k].What, err))
		}
	}
	if n := len(failed); n > 0 {
		more := ""
		if n > 2 {
			failed, more = failed[:2], fmt.Sprintf(" and %d more", n-2)
		}
		return nil, fmt.Errorf("z3 answered %d of %d questions; no answer to %s%s", len(qs)-n, len(qs), strings.Join(failed, ", "), more)
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

// tactic is how z3 takes a question: it substitutes the definitions
// (each variable a function of earlier ones) and folds the constants
// before it searches. Left to plain (check-sat), z3 4.8 searched a
// 10,000-task plan's definitions as they stand and decided half the
// questions within the timeout; this way, each in seconds.
const tactic = "(then simplify propagate-values solve-eqs simplify smt)"

// ask runs z3 on one question and returns its answer.
func ask(ctx context.Context, q Question) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "(set-option :timeout %d)\n(set-logic ALL)\n", Timeout.Milliseconds())
	if q.Defs != nil {
		b.WriteString(q.Defs.b.String())
	}
	fmt.Fprintf(&b, "%s(check-sat-using %s)\n", q.Body, tactic)
	qctx, cancel := context.WithTimeout(ctx, Timeout+Timeout/2)
	defer cancel()
	r, err := proc.Run(qctx, proc.Cmd{Name: "z3", Args: []string{"-in", "-smt2"}, Stdin: strings.NewReader(b.String())})
	if err != nil {
		return "", err
	}
	if r.Stopped != nil && ctx.Err() == nil {
		return Unknown, nil // past its own time: undecided
	}
	return answer(r)
}

// answer is z3's one answer line in a run's output; anything else is an
// error quoting what z3 said.
func answer(r *proc.Result) (string, error) {
	var words, other []string
	for _, l := range strings.Split(string(r.Stdout), "\n") {
		switch l = strings.TrimSpace(l); l {
		case "":
		case Sat, Unsat, Unknown:
			words = append(words, l)
		default:
			other = append(other, l)
		}
	}
	if err := r.Err(); err != nil {
		return "", fmt.Errorf("z3 %w: %s %s", err, clip(strings.Join(other, " ")), clip(string(r.Stderr)))
	}
	if len(words) != 1 || len(other) > 0 {
		return "", fmt.Errorf("z3 said %q", clip(string(r.Stdout)+string(r.Stderr)))
	}
	return words[0], nil
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
// (0.0 for none), through running maxima name__1, name__2, …: each the
// previous one or the next term, whichever is larger. Linear in the number
// of terms, and a function of them: z3 evaluates it, it does not search.
func (s *Script) DefineMax(name string, terms []string) {
	switch len(terms) {
	case 0:
		s.Define(name, "Real", "0.0")
		return
	case 1:
		s.Define(name, "Real", terms[0])
		return
	}
	prev := terms[0]
	for k, t := range terms[1:] {
		cur := fmt.Sprintf("%s__%d", name, k+1)
		if k == len(terms)-2 {
			cur = name
		}
		s.Define(cur, "Real", fmt.Sprintf("(ite (>= %s %s) %s %s)", prev, t, prev, t))
		prev = cur
	}
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
