package planning

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Explicit constraints and their coverage (check 1.1). The model lists,
// in the constraints stage, every constraint the goal states, as verbatim
// quotes (stated_constraints), worded ones included ("using only free
// data sources", "IP65"), and the figures of the goal that are not
// constraints with a reason (not_constraints: "2 TB" of data, versions
// "11 → 16"). The kernel holds the list to the goal: every quote must be
// words of the goal, every figure of the goal must fall in a stated or a
// not-constraint quote, and every stated constraint must be covered by an
// explicit constraint whose quote overlaps it. N, the number of explicit
// constraints the goal states, is the stated list plus one per
// --constraint and one each for --budget and --time. A human who finds a
// constraint missing adds it with --constraint.

// StatedConstraint is a constraint the goal states, as the model quoted
// it, and the explicit constraints that cover it (computed by the kernel).
type StatedConstraint struct {
	Quote     string   `json:"quote"`
	CoveredBy []string `json:"covered_by"`
}

// NotConstraint is a figure of the goal that is not a constraint, and why.
type NotConstraint struct {
	Quote  string `json:"quote"`
	Reason string `json:"reason"`
}

// goalFigure matches a figure in a goal: a number not glued to a word
// (p99 and GPT-5 do not count), with its sign, currency and unit.
var goalFigure = regexp.MustCompile(`(?:^|[^\p{L}\p{N}_.\-])([<>≤≥~]?\$?\d[\d,]*(?:\.\d+)?(?:%|[\p{L}]+)?(?:/[\p{L}]+)?)`)

func normalize(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// span is a byte range of a normalized text.
type span struct{ from, to int }

func (a span) overlaps(b span) bool { return a.from < b.to && b.from < a.to }

// figureSpans finds the figures of a goal, as text and where they are in
// the normalized goal.
func figureSpans(goal string) ([]string, []span) {
	g := normalize(goal)
	var figs []string
	var spans []span
	for _, m := range goalFigure.FindAllStringSubmatchIndex(g, -1) {
		f := strings.TrimRight(g[m[2]:m[3]], ",")
		figs = append(figs, f)
		spans = append(spans, span{m[2], m[2] + len(f)})
	}
	return figs, spans
}

// GoalFigures lists the quantified figures a goal states (lower-cased):
// each must be a stated constraint or a not-constraint.
func GoalFigures(goal string) []string {
	figs, _ := figureSpans(goal)
	return figs
}

// quoteSpans finds every occurrence of a quote in a text, both normalized.
func quoteSpans(text, quote string) []span {
	t, q := normalize(text), normalize(quote)
	var out []span
	if q == "" {
		return nil
	}
	for from := 0; ; {
		k := strings.Index(t[from:], q)
		if k < 0 {
			return out
		}
		out = append(out, span{from + k, from + k + len(q)})
		from += k + 1
	}
}

func anyOverlap(a, b []span) bool {
	for _, x := range a {
		if slices.ContainsFunc(b, x.overlaps) {
			return true
		}
	}
	return false
}

// quoteFound reports whether an explicit constraint's quote is in the goal
// or a --constraint (case and spacing ignored), or names a flag the kernel
// turned into a constraint.
func quoteFound(c Constraint, goal string, in Inputs) bool {
	q := normalize(c.Quote)
	if q == "" {
		return false
	}
	if c.Provenance.ResolverID == KernelResolverID {
		// Only the quote the kernel writes for that flag's constraint: a
		// hand edit cannot pass a constraint off as a flag's.
		return slices.ContainsFunc(kernelConstraints(Request{BudgetUSD: in.BudgetUSD, TimeHours: in.TimeHours}),
			func(k Constraint) bool { return k.ID == c.ID && k.Quote == c.Quote })
	}
	if len(quoteSpans(goal, q)) > 0 {
		return true
	}
	return slices.ContainsFunc(in.Constraints, func(t string) bool { return len(quoteSpans(t, q)) > 0 })
}

// ExplicitMinimum is N of check 1.1: the constraints the goal states, one
// per --constraint, one each for --budget and --time.
func ExplicitMinimum(stated []StatedConstraint, in Inputs) (int, string) {
	n := len(stated) + len(in.Constraints)
	var quotes []string
	for _, s := range stated {
		quotes = append(quotes, fmt.Sprintf("%q", s.Quote))
	}
	why := fmt.Sprintf("%d stated in the goal (%s); %d --constraint", len(stated), strings.Join(quotes, ", "), len(in.Constraints))
	for _, f := range []struct {
		set  bool
		name string
	}{{in.BudgetUSD != nil, "--budget"}, {in.TimeHours != nil, "--time"}} {
		if f.set {
			n++
			why += "; " + f.name
		}
	}
	return n, why
}

// Quote lengths: a stated constraint or a not-constraint is a few words
// of the goal, so that quoting the whole goal cannot stand for counting
// its constraints.
const (
	maxStatedWords = 12
	maxNotWords    = 8
)

// coverage is the kernel's reading of the explicit constraints against
// what the goal and the flags state.
type coverage struct {
	stated     []StatedConstraint // with CoveredBy recomputed
	problems   []string           // quotes not in the goal, uncovered constraints
	unaccounts []string           // figures in no stated or not-constraint quote
}

// cover checks the stated and not-constraint lists against the goal and
// computes which explicit constraints cover each stated one.
func cover(goal string, in Inputs, constraints []Constraint, stated []StatedConstraint, nots []NotConstraint) coverage {
	var cv coverage
	explicit := map[string][]span{}
	for _, c := range constraints {
		if c.Explicit {
			explicit[c.ID] = quoteSpans(goal, c.Quote)
		}
	}
	var quoted, explicitSpans []span
	for _, sp := range explicit {
		explicitSpans = append(explicitSpans, sp...)
	}
	for _, s := range stated {
		spans := quoteSpans(goal, s.Quote)
		if len(spans) == 0 {
			cv.problems = append(cv.problems, fmt.Sprintf("stated constraint %q is not words of the goal; copy them verbatim", s.Quote))
		}
		if n := len(strings.Fields(s.Quote)); n > maxStatedWords {
			cv.problems = append(cv.problems, fmt.Sprintf("stated constraint %q has %d words; quote each constraint on its own, in at most %d words", s.Quote, n, maxStatedWords))
		}
		quoted = append(quoted, spans...)
		covered := []string{}
		for _, c := range constraints {
			if c.Explicit && anyOverlap(spans, explicit[c.ID]) {
				covered = append(covered, c.ID)
			}
		}
		if len(spans) > 0 && len(covered) == 0 {
			cv.problems = append(cv.problems, fmt.Sprintf("the goal states %q, but no explicit constraint quotes it; add one", s.Quote))
		}
		cv.stated = append(cv.stated, StatedConstraint{Quote: s.Quote, CoveredBy: covered})
	}
	for _, n := range nots {
		spans := quoteSpans(goal, n.Quote)
		switch {
		case len(spans) == 0:
			cv.problems = append(cv.problems, fmt.Sprintf("not-constraint %q is not words of the goal; copy them verbatim", n.Quote))
		case strings.TrimSpace(n.Reason) == "":
			cv.problems = append(cv.problems, fmt.Sprintf("not-constraint %q has no reason: say why this figure is not a constraint", n.Quote))
		case len(strings.Fields(n.Quote)) > maxNotWords:
			cv.problems = append(cv.problems, fmt.Sprintf("not-constraint %q has %d words; quote only the figure and its few words (at most %d)", n.Quote, len(strings.Fields(n.Quote)), maxNotWords))
		case anyOverlap(spans, explicitSpans):
			cv.problems = append(cv.problems, fmt.Sprintf("not-constraint %q overlaps the quote of an explicit constraint; a figure is either a constraint or not", n.Quote))
		}
		quoted = append(quoted, spans...)
	}
	figs, spans := figureSpans(goal)
	for k, f := range spans {
		if !slices.ContainsFunc(quoted, f.overlaps) {
			cv.unaccounts = append(cv.unaccounts, figs[k])
		}
	}
	for _, t := range in.Constraints {
		ok := slices.ContainsFunc(constraints, func(c Constraint) bool { return c.Explicit && len(quoteSpans(t, c.Quote)) > 0 })
		if !ok {
			cv.problems = append(cv.problems, fmt.Sprintf("--constraint %q is covered by no explicit constraint; add one quoting it", t))
		}
	}
	for _, f := range []struct {
		set  bool
		id   string
		flag string
	}{{in.BudgetUSD != nil, "budget", "--budget"}, {in.TimeHours != nil, "time", "--time"}} {
		if f.set && !slices.ContainsFunc(constraints, func(c Constraint) bool { return c.ID == f.id && c.Explicit }) {
			cv.problems = append(cv.problems, fmt.Sprintf("%s has no constraint %q", f.flag, f.id))
		}
	}
	return cv
}
