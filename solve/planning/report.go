package planning

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/llmkernels/kernels/solve/store"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/solve/planning/smt"
)

// VerdictDefinitions is printed in every report.
const VerdictDefinitions = "**SAT**: the constraint holds at the high estimates and at mid. **TIGHT**: it holds at the mid estimates but not at the high ones. " +
	"**UNSAT**: it fails at the mid estimates. **JUDGED**: a semantic constraint; no arithmetic decides it, σ is the model's judgment. " +
	"Logic constraints are evaluated by the kernel on totals it computes from the tasks (σ = 1.0); no figure stated by the model is used."

// Files are the paths `solve plan --out` writes.
type Files struct {
	JSON, Report, Mermaid, Gantt string
}

// OutputFiles derives the four file names from --out: FILE.json stays the
// plan; the report, Mermaid text and Gantt chart share its base name.
func OutputFiles(out string) Files {
	base := strings.TrimSuffix(out, filepath.Ext(out))
	if filepath.Ext(out) != ".json" {
		base, out = out, out+".json"
	}
	return Files{JSON: out, Report: base + ".md", Mermaid: base + ".mmd", Gantt: base + ".svg"}
}

// WriteFiles writes the plan, its report, the Mermaid DAG and the SVG
// Gantt chart, each atomically (temp file + rename).
func WriteFiles(p *Plan, out string) (Files, error) {
	f := OutputFiles(out)
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return f, err
	}
	tasks, a := finalPlan(p)
	mermaid := Mermaid(tasks, a)
	gantt := Gantt(p)
	// An earlier plan file is set aside first and this one written last,
	// so a write that fails or is killed half way never leaves an earlier
	// plan.json beside this run's report and pictures: FILE is there only
	// when all four are this run's.
	prev := ""
	if _, err := os.Lstat(f.JSON); err == nil {
		// A name of its own, so that nothing else there is replaced.
		tmp, err := os.CreateTemp(filepath.Dir(f.JSON), "."+filepath.Base(f.JSON)+".earlier-*")
		if err != nil {
			return f, fmt.Errorf("set aside the earlier %s: %w", f.JSON, err)
		}
		prev = tmp.Name()
		if err := errors.Join(tmp.Close(), os.Rename(f.JSON, prev)); err != nil {
			_ = os.Remove(prev) // our own empty file; the rename error is the news
			return f, fmt.Errorf("set aside the earlier %s: %w", f.JSON, err)
		}
	}
	hadPrev := prev != ""
	for _, w := range []struct {
		path string
		data []byte
	}{{f.Report, []byte(Report(p, filepath.Base(f.Gantt)))}, {f.Mermaid, []byte(mermaid)}, {f.Gantt, []byte(gantt)}, {f.JSON, append(data, '\n')}} {
		if err := atomicfile.Write(w.path, w.data, 0o644); err != nil {
			if hadPrev {
				err = fmt.Errorf("%w (the earlier plan is at %s)", err, prev)
			}
			return f, err
		}
	}
	if hadPrev {
		// This run's plan replaced it: the earlier one is no longer needed.
		if err := os.Remove(prev); err != nil {
			return f, fmt.Errorf("remove the earlier plan set aside at %s: %w", prev, err)
		}
	}
	return f, nil
}

// finalPlan is the plan to execute: the revised one when repaired.
func finalPlan(p *Plan) ([]Task, *Analysis) {
	if p.Repair.Status == RepairRepaired && p.Repair.Revised != nil {
		return applyChoices(p.Tasks, p.Surveys, p.Repair.Choices), p.Repair.Revised
	}
	return p.Tasks, p.Analysis
}

func triple(e Estimate, unit string) string {
	if unit == "$" {
		return fmt.Sprintf("$%s / %s / %s", num(e.Low), num(e.Mid), num(e.High))
	}
	return fmt.Sprintf("%s / %s / %s%s", num(e.Low), num(e.Mid), num(e.High), unit)
}

func pct(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", *p*100)
}

// md is MarkdownText; mdList escapes each item and joins them.
var md = MarkdownText

func mdList(items []string, sep string) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = md(s)
	}
	return strings.Join(out, sep)
}

// Report renders the plan as Markdown. Every text in it from the user or
// the model (goal, ids, titles, payloads, reasons) is escaped
// (MarkdownText, MarkdownCode): one line, no markup of its own.
func Report(p *Plan, ganttFile string) string {
	r := &reportWriter{}
	r.header(p)
	r.verdicts(p)
	r.constraints(p)
	r.tasks(p)
	r.surveys(p)
	r.repair(p)
	r.tail(p, ganttFile)
	return r.String()
}

// reportWriter builds the report one section at a time, each section a
// step of its own so a reader finds a heading's text in one place.
type reportWriter struct{ strings.Builder }

// w appends to the report; a strings.Builder never fails a write.
func (r *reportWriter) w(format string, args ...any) { _, _ = fmt.Fprintf(r, format, args...) }

// header gives the goal and what the run cost, so a report read alone
// says what was planned and at what price.
func (r *reportWriter) header(p *Plan) {
	r.w("# Plan: %s\n\n", md(p.Goal))
	r.w("Root node `%s` · %s · model %s · %d LLM calls, %d tokens in, %d out, %s · %.1fs wall (cap %s)\n\n",
		p.RootID, md(p.Schema), orDash(md(p.Run.Model)), p.Usage.Calls, p.Usage.InputTokens, p.Usage.OutputTokens, p.cost(true), p.Run.WallSeconds, capText(p.Run.MaxWallSeconds))
}

// verdicts tables each constraint's verdict before and after repair, and
// σ_v against the thresholds: the answer a reader came for comes first.
func (r *reportWriter) verdicts(p *Plan) {
	r.w("## Verdicts\n\n%s\n\n", VerdictDefinitions)
	revised := map[string]Verdict{}
	if p.Repair.Revised != nil {
		for _, v := range p.Repair.Revised.Verdicts {
			revised[v.ConstraintID] = v
		}
	}
	r.w("| id | type | title | payload | σ | plan | after repair | figures (plan) |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range p.Constraints {
		v := verdictFor(p.Analysis, c.ID)
		payload := c.Payload.Expr
		if c.Type != Logic {
			payload = c.Payload.Rubric
		}
		after := "—"
		if rv, ok := revised[c.ID]; ok {
			after = rv.Verdict
			if rv.Sigma != c.Sigma {
				after += fmt.Sprintf(" (σ %.2f)", rv.Sigma)
			}
		}
		r.w("| %s | %s | %s | %s | %.2f | **%s** | %s | %s |\n", md(c.ID), md(c.Type), md(c.Title), MarkdownCode(payload), c.Sigma, md(v.Verdict), md(after), md(v.Detail))
	}
	if p.Analysis != nil {
		r.w("\nσ_v (min σ_i) = %.2f", p.Analysis.SigmaV)
		if p.Repair.Revised != nil {
			r.w(" (after repair %.2f: a chosen approach's judged σ replaces a semantic constraint's)", p.Repair.Revised.SigmaV)
		}
		r.w("; τ_local = %.2f, τ_global = %.2f.\n", store.TauLocal, store.TauGlobal)
	}
}

// constraints shows where each constraint came from and what the goal
// states, so a reader can check the extraction against the goal.
func (r *reportWriter) constraints(p *Plan) {
	r.w("\n## Constraints\n\n| id | kind | domain | quote | removal consequence | open questions |\n|---|---|---|---|---|---|\n")
	for _, c := range p.Constraints {
		kind := "implicit"
		if c.Explicit {
			kind = "explicit"
		}
		r.w("| %s | %s (%s) | %s | %s | %s | %s |\n", md(c.ID), kind, md(c.Provenance.Source), md(c.Domain), md(c.Quote), md(c.RemovalConsequence), mdList(c.OpenQuestions, " · "))
	}
	if len(p.Stated) > 0 || len(p.NotStated) > 0 {
		n, why := ExplicitMinimum(p.Stated, p.Inputs)
		r.w("\n### What the goal states\n\nAt least %d explicit constraints (%s).\n\n| stated in the goal | covered by |\n|---|---|\n", n, md(why))
		for _, st := range p.Stated {
			r.w("| %s | %s |\n", md(st.Quote), orDash(mdList(st.CoveredBy, ", ")))
		}
		for _, nc := range p.NotStated {
			r.w("| %s | not a constraint: %s |\n", md(nc.Quote), md(nc.Reason))
		}
	}
	if len(p.OpenQuestions) > 0 {
		r.w("\n## Open questions\n\n")
		for _, q := range p.OpenQuestions {
			r.w("- %s\n", md(q))
		}
	}
	if len(p.Quantities) > 0 {
		r.w("\n## Quantities\n\n| name | unit | aggregate | description |\n|---|---|---|---|\n")
		for _, q := range p.Quantities {
			r.w("| %s | %s | %s | %s |\n", md(q.Name), md(q.Unit), md(q.Aggregate), md(q.Description))
		}
	}
}

// tasks lists the tasks, the kernel's analysis of them and the figures
// the model stated beside the kernel's own.
func (r *reportWriter) tasks(p *Plan) {
	r.w("\n## Tasks\n\n| id | type | title | depends on | cost (low / mid / high) | hours (low / mid / high) | confidence | method |\n|---|---|---|---|---|---|---|---|\n")
	for _, t := range p.Tasks {
		r.w("| %s | %s | %s | %s | %s | %s | %.2f | %s |\n", md(t.ID), md(t.Type), md(t.Title), orDash(mdList(t.DependsOn, ", ")), triple(t.CostUSD, "$"), triple(t.Hours, "h"), t.Confidence, md(t.Method))
	}
	if p.Analysis != nil {
		analysisSection(&r.Builder, "", p.Analysis)
	}
	if len(p.Claims) > 0 {
		r.w("\n## Figures the model stated\n\nThe kernel computes every total itself; a stated figure is only compared.\n\n| figure | stated by the model | computed by the kernel | agrees |\n|---|---|---|---|\n")
		for _, c := range p.Claims {
			r.w("| %s | %s | %s | %s |\n", md(c.Name), num(c.Stated), num(c.Computed), map[bool]string{true: "yes", false: "**no** (kernel's figure used)"}[c.Agrees])
		}
	}
}

// surveys shows the approach surveys round by round: the alternatives
// the repair could choose from.
func (r *reportWriter) surveys(p *Plan) {
	if len(p.Surveys) == 0 {
		return
	}
	r.w("\n## Approach surveys\n")
	if len(p.SurveyRounds) > 0 {
		r.w("\n| round | kind | tasks | outcome |\n|---|---|---|---|\n")
		for _, sr := range p.SurveyRounds {
			r.w("| %d | %s | %s | %s |\n", sr.Round, md(sr.Kind), mdList(sr.Tasks, ", "), md(sr.Outcome))
		}
		for _, sr := range p.SurveyRounds {
			if sr.Feedback != "" {
				r.w("\nRound %d was told: %s\n", sr.Round, md(sr.Feedback))
			}
		}
	}
	for _, s := range p.Surveys {
		r.w("\n### %s — %s\n\nTriggered by: %s. Planned: %s, %s, confidence %.2f.\n\n", md(s.TaskID), md(taskTitle(p.Tasks, s.TaskID)), mdList(s.Triggers, "; "),
			triple(taskOf(p.Tasks, s.TaskID).CostUSD, "$"), triple(taskOf(p.Tasks, s.TaskID).Hours, "h"), taskOf(p.Tasks, s.TaskID).Confidence)
		if s.NothingBetter != "" {
			r.w("Nothing better is possible, the model says: %s\n\n", md(s.NothingBetter))
		}
		r.w("| approach | round | title | cost | hours | confidence | known-method share | judgment required | effects |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, ap := range s.Approaches {
			var eff []string
			for _, e := range ap.ConstraintEffects {
				eff = append(eff, fmt.Sprintf("%s σ %.2f (%s)", e.ConstraintID, e.Sigma, e.Reason))
			}
			r.w("| %s | %d | %s | %s | %s | %.2f | %.0f%% | %s | %s |\n", md(ap.ID), ap.Round, md(ap.Title), triple(ap.CostUSD, "$"), triple(ap.Hours, "h"), ap.Confidence,
				ap.KnownMethodShare*100, mdList(ap.JudgmentRequired, "; "), mdList(eff, "; "))
		}
	}
}

// repair says what the repair searched, excluded and chose, and the
// budget of the revised plan.
func (r *reportWriter) repair(p *Plan) {
	r.w("\n## Repair\n\nStatus: **%s**. %s\n", md(p.Repair.Status), md(p.Repair.Note))
	if len(p.Repair.Required) > 0 {
		r.w("\nRequired to hold (logic: SAT or TIGHT; semantic: no approach below its floor): %s. Searched %d nodes of %s combinations.\n",
			mdList(p.Repair.Required, ", "), p.Repair.Explored, num(p.Repair.Space))
	}
	if len(p.Repair.Excluded) > 0 {
		r.w("\nExcluded approaches:\n\n")
		for _, e := range p.Repair.Excluded {
			r.w("- %s/%s: σ(%s) %.2f below the floor %.2f\n", md(e.TaskID), md(e.ApproachID), md(e.ConstraintID), e.Sigma, e.Floor)
		}
	}
	if len(p.Repair.UnsatCore) > 0 {
		r.w("\nUnsat core (a minimal set of constraints no combination satisfies together): **%s**.\n", mdList(p.Repair.UnsatCore, ", "))
	}
	if p.Repair.Status == RepairRepaired {
		r.w("\nThe repair changes least: fewest swaps, then the least confidence given up, then the least mid cost.\n\n| task | chosen approach | why |\n|---|---|---|\n")
		for _, c := range p.Repair.Choices {
			title, why := "keep as planned", "not needed"
			if ap, ok := findApproach(p.Surveys, c); ok {
				title, why = ap.Title, c.Reason
			}
			r.w("| %s | %s: %s | %s |\n", md(c.TaskID), md(c.ApproachID), md(title), md(why))
		}
		r.w("\n### Revised budget\n")
		analysisSection(&r.Builder, "#", p.Repair.Revised)
	}
}

// tail gives z3's cross-check and the final plan's DAG: the evidence and
// the picture come last, after the figures they support.
func (r *reportWriter) tail(p *Plan, ganttFile string) {
	if p.SMT != nil {
		r.w("\n## SMT cross-check\n\n%s\n", md(smtText(p.SMT)))
		if len(p.SMT.Checks) > 0 {
			r.w("\n| question | kernel | z3 |\n|---|---|---|\n")
			for _, c := range p.SMT.Checks {
				r.w("| %s | %s | %s |\n", md(c.What), md(c.Kernel), md(c.Solver))
			}
		}
	}
	tasks, a := finalPlan(p)
	if a != nil {
		label := "the plan"
		if p.Repair.Status == RepairRepaired {
			label = "the revised plan"
		}
		r.w("\n## DAG\n\nCritical path of %s in red. Gantt chart: %s.\n\n```mermaid\n%s```\n", label, MarkdownLink(ganttFile, ganttFile), Mermaid(tasks, a))
	}
}

// smtText says what z3 answered.
func smtText(r *smt.Report) string {
	switch {
	case r.Error != "":
		return "z3 gave no answers: " + r.Error + "; the plan is the kernel's alone"
	case r.Disagree > 0:
		return fmt.Sprintf("%s DISAGREES with the kernel on %d of %d questions (%s); this is a kernel bug, please report it with the plan", r.Solver, r.Disagree, len(r.Checks), r.Disagreements())
	case r.Unknown > 0:
		return fmt.Sprintf("%s agrees on %d questions and could not decide %d within its timeout (those claims are the kernel's alone)", r.Solver, len(r.Checks)-r.Unknown, r.Unknown)
	}
	return fmt.Sprintf("%s agrees on all %d questions (%.1fs)", r.Solver, len(r.Checks), r.Seconds)
}

func capText(s float64) string {
	if s <= 0 {
		return "none"
	}
	return fmt.Sprintf("%gs", s)
}

func verdictFor(a *Analysis, id string) Verdict {
	if a == nil {
		return Verdict{}
	}
	for _, v := range a.Verdicts {
		if v.ConstraintID == id {
			return v
		}
	}
	return Verdict{}
}

func taskOf(tasks []Task, id string) Task {
	for _, t := range tasks {
		if t.ID == id {
			return t
		}
	}
	return Task{}
}

func taskTitle(tasks []Task, id string) string { return taskOf(tasks, id).Title }

// analysisSection writes rollups, waterfall, schedule, waves and walls;
// level adds heading depth.
func analysisSection(b *strings.Builder, level string, a *Analysis) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	limit := func(r Rollup, unit string) string {
		if r.Limit == nil {
			return ""
		}
		if unit == "$" {
			return fmt.Sprintf("; P(total ≤ $%s) ≈ %s (normal approximation)", num(*r.Limit), pct(r.PWithinLimit))
		}
		return fmt.Sprintf("; P(critical path ≤ %sh) ≈ %s (normal approximation)", num(*r.Limit), pct(r.PWithinLimit))
	}
	w("\n##%s Cost rollup\n\nMid total **$%.2f** (low $%.2f, high $%.2f); PERT mean $%.2f ± $%.2f%s.\n", level,
		a.Cost.Mid, a.Cost.Low, a.Cost.High, a.Cost.PERTMean, a.Cost.PERTSigma, limit(a.Cost, "$"))
	w("\n##%s Budget waterfall (execution order, mid estimates)\n\n| # | task | cost | cumulative | remaining |", level)
	for _, bd := range a.Budgets {
		w(" %s | cumulative | remaining (of %s) |", md(bd.Metric), num(bd.Limit))
	}
	w("\n|---|---|---|---|---|%s\n", strings.Repeat("---|---|---|", len(a.Budgets)))
	for k, r := range a.Waterfall {
		rem := "—"
		if r.Remaining != nil {
			rem = fmt.Sprintf("$%.2f", *r.Remaining)
		}
		w("| %d | %s | $%.2f | $%.2f | %s |", k+1, md(r.TaskID), r.CostMid, r.Cumulative, rem)
		for _, st := range r.Budgets {
			w(" %s | %s | %s |", num(st.Amount), num(st.Cumulative), num(st.Remaining))
		}
		w("\n")
	}
	w("\n##%s Time: critical path\n\nCritical path **%sh** at mid estimates (low %sh, high %sh); PERT mean %.2fh ± %.2fh%s.\n\n", level,
		num(a.Time.Mid), num(a.Time.Low), num(a.Time.High), a.Time.PERTMean, a.Time.PERTSigma, limit(a.Time, "h"))
	count := fmt.Sprintf("%g", a.CriticalPathCount)
	if a.CriticalPathCount >= math.MaxFloat64 {
		count = "more than 10^308"
	}
	w("Critical path(s) (%s in all", count)
	if float64(len(a.CriticalPaths)) < a.CriticalPathCount {
		w(", first %d listed", len(a.CriticalPaths))
	}
	w("):\n\n")
	for _, p := range a.CriticalPaths {
		w("- %s\n", mdList(p, " → "))
	}
	w("\n| task | hours | ES | EF | LS | LF | total float | free float | wave | critical |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range a.Schedule {
		crit := ""
		if r.Critical {
			crit = "**yes**"
		}
		w("| %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n", md(r.TaskID), num(r.Hours), num(r.ES), num(r.EF), num(r.LS), num(r.LF), num(r.TotalFloat), num(r.FreeFloat), r.Wave+1, crit)
	}
	w("\n##%s Parallel waves\n\n", level)
	for k, wave := range a.Waves {
		w("%d. %s\n", k+1, mdList(wave, ", "))
	}
	if len(a.Walls) > 0 {
		w("\n##%s Constraint walls\n", level)
		for _, wl := range a.Walls {
			w("\n**%s** (%s) is over its limit by %s. Ranked contributions (wall: %s):\n\n| rank | task | contribution | share |\n|---|---|---|---|\n",
				md(wl.ConstraintID), MarkdownCode(verdictFor(a, wl.ConstraintID).Expr), num(wl.Overshoot), mdList(wl.Wall, ", "))
			for k, c := range wl.Tasks {
				w("| %d | %s | %s | %.0f%% |\n", k+1, md(c.ID), num(c.Amount), c.Share*100)
			}
			var cl []string
			for _, c := range wl.Clusters {
				cl = append(cl, fmt.Sprintf("%s %s (%.0f%%)", md(c.ID), num(c.Amount), c.Share*100))
			}
			w("\nClusters by task type: %s.\n", strings.Join(cl, ", "))
		}
	}
}

// Summary is the few lines `solve plan` prints on stdout.
func Summary(p *Plan, f Files) string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan %s: %d constraints, %d tasks, mid cost $%.2f, critical path %sh\n", p.RootID, len(p.Constraints), len(p.Tasks), p.Analysis.Cost.Mid, num(p.Analysis.Time.Mid))
	var vs []string
	for _, v := range p.Analysis.Verdicts {
		if v.Type == Logic {
			vs = append(vs, v.ConstraintID+" "+v.Verdict)
		}
	}
	fmt.Fprintf(&b, "verdicts: %s\n", orDash(strings.Join(vs, ", ")))
	switch p.Repair.Status {
	case RepairRepaired:
		var rv []string
		for _, v := range p.Repair.Revised.Verdicts {
			if v.Type == Logic {
				rv = append(rv, v.ConstraintID+" "+v.Verdict)
			}
		}
		var swaps []string
		for _, c := range p.Repair.Choices {
			if c.ApproachID != OriginalApproach {
				swaps = append(swaps, fmt.Sprintf("%s→%s (for %s)", c.TaskID, c.ApproachID, strings.Join(c.NeededFor, ", ")))
			}
		}
		fmt.Fprintf(&b, "repair: %s; revised mid cost $%.2f, critical path %sh; %s\n", strings.Join(swaps, ", "), p.Repair.Revised.Cost.Mid, num(p.Repair.Revised.Time.Mid), strings.Join(rv, ", "))
	case RepairInfeasible:
		fmt.Fprintf(&b, "repair: none possible; unsat core: %s\n", strings.Join(p.Repair.UnsatCore, ", "))
	case RepairUndecided:
		fmt.Fprintf(&b, "repair: undecided: %s\n", p.Repair.Note)
	default:
		fmt.Fprintf(&b, "repair: not needed\n")
	}
	if p.SMT != nil {
		fmt.Fprintf(&b, "smt: %s\n", smtText(p.SMT))
	}
	fmt.Fprintf(&b, "LLM: %d calls, %d tokens in, %d out, %s\n", p.Usage.Calls, p.Usage.InputTokens, p.Usage.OutputTokens, p.cost(true))
	files := []string{f.JSON, f.Report, f.Mermaid, f.Gantt}
	fmt.Fprintf(&b, "wrote %s\n", strings.Join(files, ", "))
	return b.String()
}
