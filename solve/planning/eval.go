package planning

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/solve/store"
)

// solve eval: the spec's v1 step "run the 3 examples, check traces, run
// the assertion framework" as one command. Each goal is planned with the
// configured provider (Make), written (WriteFiles) and checked (Check);
// the report gives, per goal, each assertion group's result, the logic
// verdicts before and after repair, the calls, tokens, cost and time, and
// a total. The project's tests run it only on scripted providers: no real
// model was run to make the figures in its docs.

// EvalGoal is one goal to evaluate: a spec example or a goal file.
type EvalGoal struct {
	Name        string   `json:"name"`
	Goal        string   `json:"goal"`
	Constraints []string `json:"constraints,omitempty"`
	BudgetUSD   *float64 `json:"budget_usd,omitempty"`
	TimeHours   *float64 `json:"time_hours,omitempty"`
}

// Examples are the spec's three verification examples (Implementation
// Notes, "Verification Examples").
var Examples = []EvalGoal{
	{Name: "swe-agent", Goal: "Build an autonomous SWE agent achieving 80% on SWE-bench Lite, within 24h, for <$500 compute."},
	{Name: "trading-strategy", Goal: "Build and backtest a momentum-based equities trading strategy achieving >12% annualized return with <15% max drawdown, using only free data sources (Yahoo Finance, FRED), deployable to Alpaca paper trading, within 16h dev time, for <$100 total compute."},
	{Name: "document-classification", Goal: "Deploy a document classification model achieving >88% F1 on a 50-class subset of RVL-CDIP (document images: invoices, contracts, forms, etc.) to a REST endpoint handling 10,000 requests/week with p99 latency <500ms, hosted for <$50/month, for <$50 total compute including training, within 8h dev time."},
}

// EvalReport is the outcome of solve eval.
type EvalReport struct {
	Model string       `json:"model"`
	Goals []EvalResult `json:"goals"`
	Total EvalTotal    `json:"total"`
}

// EvalResult is one goal's outcome.
type EvalResult struct {
	Name     string        `json:"name"`
	Goal     string        `json:"goal"`
	File     string        `json:"file,omitempty"`  // the plan file written
	Error    string        `json:"error,omitempty"` // why no plan was made
	Repair   string        `json:"repair,omitempty"`
	Groups   []EvalGroup   `json:"groups"`
	Verdicts []EvalVerdict `json:"verdicts"`
	EvalUsage
}

// EvalUsage is what planning a goal (or all of them) took.
type EvalUsage struct {
	Calls        int     `json:"calls"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	Unpriced     bool    `json:"unpriced,omitempty"`
	Seconds      float64 `json:"seconds"`
}

func (u *EvalUsage) add(v EvalUsage) {
	u.Calls += v.Calls
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.CostUSD += v.CostUSD
	u.Unpriced = u.Unpriced || v.Unpriced
	u.Seconds += v.Seconds
}

// EvalGroup is one assertion group's result on a plan.
type EvalGroup struct {
	Group    int      `json:"group"`
	Name     string   `json:"name"`
	Passed   int      `json:"passed"`
	Failed   int      `json:"failed"`
	Failures []string `json:"failures,omitempty"`
}

// EvalVerdict is a logic constraint's verdict before and after repair.
type EvalVerdict struct {
	ConstraintID string `json:"constraint_id"`
	Before       string `json:"before"`
	After        string `json:"after,omitempty"` // absent without a repair
}

// EvalTotal adds up the goals.
type EvalTotal struct {
	Goals            int `json:"goals"`
	Planned          int `json:"planned"`
	Clean            int `json:"clean"` // planned with every assertion passing
	AssertionsPassed int `json:"assertions_passed"`
	AssertionsFailed int `json:"assertions_failed"`
	EvalUsage
}

// OK reports whether every goal was planned and passed every assertion.
func (r *EvalReport) OK() bool { return r.Total.Clean == r.Total.Goals }

// Eval plans each goal with req's settings (its Goal, Constraints,
// BudgetUSD and TimeHours come from the goal), writes OUTDIR/NAME.json and
// its pictures, and checks the plan. A goal that fails is reported and
// the next one runs; err is only for what stops the whole evaluation
// (ctx).
func Eval(ctx context.Context, st *store.Store, client *llm.Client, goals []EvalGoal, req Request, outDir string) (*EvalReport, error) {
	rep := &EvalReport{Model: req.Model, Goals: []EvalResult{}}
	var cur *EvalResult
	c := *client
	prev := c.Observe
	c.Observe = func(e llm.Event) {
		if prev != nil {
			prev(e)
		}
		if e.Kind == llm.EventResponse && cur != nil {
			cur.add(EvalUsage{Calls: 1, InputTokens: e.Call.Usage.InputTokens + e.Call.Usage.CacheCreationInputTokens + e.Call.Usage.CacheReadInputTokens,
				OutputTokens: e.Call.Usage.OutputTokens, CostUSD: e.Call.CostUSD, Unpriced: !e.Call.Priced})
		}
	}
	for _, g := range goals {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		res := EvalResult{Name: g.Name, Goal: g.Goal, Groups: []EvalGroup{}, Verdicts: []EvalVerdict{}}
		cur = &res
		r := req
		r.Goal, r.Constraints, r.BudgetUSD, r.TimeHours = g.Goal, g.Constraints, g.BudgetUSD, g.TimeHours
		began := time.Now()
		p, err := Make(ctx, st, &c, r)
		if err == nil {
			var f Files
			if f, err = WriteFiles(p, filepath.Join(outDir, g.Name+".json")); err == nil {
				res.File = f.JSON
				res.Repair = p.Repair.Status
				res.Groups = evalGroups(Check(ctx, p, CheckOptions{SMT: req.SMT, SMTTimeout: req.SMTTimeout, SearchLimit: req.SearchLimit}))
				res.Verdicts = evalVerdicts(p)
			}
		}
		res.Seconds = time.Since(began).Seconds()
		if err != nil {
			res.Error = err.Error()
		}
		cur = nil
		rep.Goals = append(rep.Goals, res)
		if ctx.Err() != nil {
			break
		}
	}
	t := &rep.Total
	for _, g := range rep.Goals {
		t.Goals++
		t.add(g.EvalUsage)
		if g.Error != "" {
			continue
		}
		t.Planned++
		failed := 0
		for _, gr := range g.Groups {
			t.AssertionsPassed += gr.Passed
			failed += gr.Failed
		}
		t.AssertionsFailed += failed
		if failed == 0 {
			t.Clean++
		}
	}
	return rep, nil
}

func evalGroups(as []Assertion) []EvalGroup {
	var out []EvalGroup
	for g := 1; g <= 6; g++ {
		eg := EvalGroup{Group: g, Name: AssertionGroups[g]}
		for _, a := range as {
			if a.Group != g {
				continue
			}
			if a.Pass {
				eg.Passed++
			} else {
				eg.Failed++
				eg.Failures = append(eg.Failures, a.ID+" "+a.Name+": "+a.Detail)
			}
		}
		out = append(out, eg)
	}
	return out
}

func evalVerdicts(p *Plan) []EvalVerdict {
	var out []EvalVerdict
	for _, v := range p.Analysis.Verdicts {
		if v.Type != Logic {
			continue
		}
		ev := EvalVerdict{ConstraintID: v.ConstraintID, Before: v.Verdict}
		if p.Repair.Revised != nil {
			ev.After = verdictFor(p.Repair.Revised, v.ConstraintID).Verdict
		}
		out = append(out, ev)
	}
	return out
}

// EvalMarkdown renders the report as Markdown.
func EvalMarkdown(r *EvalReport) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# solve eval: %d goal(s), model %s\n\n", r.Total.Goals, orDash(md(r.Model)))
	w("Each plan is checked with the spec's assertion framework (solve check): a PASS says the plan is complete and its arithmetic, surveys and repair hold up, not that the model's estimates are right.\n\n")
	w("| goal | plan | 1 constraints | 2 decomposition | 3 budget | 4 surveys | 5 repair | 6 critical path | verdicts | after repair | calls | tokens in / out | cost | time |\n")
	w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, g := range r.Goals {
		plan := g.Repair
		if g.Error != "" {
			plan = "**failed**"
		}
		w("| %s | %s |", md(g.Name), md(plan))
		for k := 1; k <= 6; k++ {
			i := slices.IndexFunc(g.Groups, func(x EvalGroup) bool { return x.Group == k })
			switch {
			case i < 0:
				w(" — |")
			case g.Groups[i].Failed > 0:
				w(" **%d/%d** |", g.Groups[i].Passed, g.Groups[i].Passed+g.Groups[i].Failed)
			default:
				w(" %d/%d |", g.Groups[i].Passed, g.Groups[i].Passed)
			}
		}
		var before, after []string
		for _, v := range g.Verdicts {
			before = append(before, v.ConstraintID+" "+v.Before)
			if v.After != "" {
				after = append(after, v.ConstraintID+" "+v.After)
			}
		}
		w(" %s | %s | %d | %d / %d | %s | %.1fs |\n", orDash(mdList(before, ", ")), orDash(mdList(after, ", ")),
			g.Calls, g.InputTokens, g.OutputTokens, usd(g.CostUSD, g.Unpriced), g.Seconds)
	}
	t := r.Total
	w("| **total** | %d of %d planned, %d clean | | | | | | | | | %d | %d / %d | %s | %.1fs |\n\n", t.Planned, t.Goals, t.Clean, t.Calls, t.InputTokens, t.OutputTokens, usd(t.CostUSD, t.Unpriced), t.Seconds)
	w("Assertions: %d passed, %d failed.\n", t.AssertionsPassed, t.AssertionsFailed)
	for _, g := range r.Goals {
		if g.Error != "" {
			w("\n## %s: no plan\n\n%s\n", md(g.Name), md(g.Error))
			continue
		}
		var fails []string
		for _, gr := range g.Groups {
			fails = append(fails, gr.Failures...)
		}
		if len(fails) > 0 {
			w("\n## %s: failed assertions (%s)\n\n", md(g.Name), md(g.File))
			for _, f := range fails {
				w("- %s\n", md(f))
			}
		}
	}
	return b.String()
}

func usd(v float64, unpriced bool) string {
	s := fmt.Sprintf("$%.4f", v)
	if unpriced {
		s += " (some calls unpriced)"
	}
	return s
}
