package planning

import (
	"encoding/json"
	"fmt"
	"github.com/llmkernels/kernels/solve/store"
	"html"
	"math"
	"path/filepath"
	"strings"

	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/internal/clip"
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
	gantt := Gantt(p.Goal, tasks, a)
	for _, w := range []struct {
		path string
		data []byte
	}{{f.JSON, append(data, '\n')}, {f.Report, []byte(Report(p, filepath.Base(f.Gantt)))}, {f.Mermaid, []byte(mermaid)}, {f.Gantt, []byte(gantt)}} {
		if err := atomicfile.Write(w.path, w.data, 0o644); err != nil {
			return f, err
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

func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ")
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

// Report renders the plan as Markdown.
func Report(p *Plan, ganttFile string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Plan: %s\n\n", p.Goal)
	cost := fmt.Sprintf("$%.4f", p.Usage.CostUSD)
	if p.Usage.Unpriced {
		cost += " (some calls unpriced)"
	}
	w("Root node `%s` · %s · model %s · %d LLM calls, %d tokens in, %d out, %s · %.1fs wall (cap %s)\n\n",
		p.RootID, p.Schema, orDash(p.Run.Model), p.Usage.Calls, p.Usage.InputTokens, p.Usage.OutputTokens, cost, p.Run.WallSeconds, capText(p.Run.MaxWallSeconds))

	w("## Verdicts\n\n%s\n\n", VerdictDefinitions)
	revised := map[string]Verdict{}
	if p.Repair.Revised != nil {
		for _, v := range p.Repair.Revised.Verdicts {
			revised[v.ConstraintID] = v
		}
	}
	w("| id | type | title | payload | σ | plan | after repair | figures (plan) |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range p.Constraints {
		v := verdictFor(p.Analysis, c.ID)
		payload := c.Payload.Expr
		if c.Type != Logic {
			payload = c.Payload.Rubric
		}
		after := "—"
		if rv, ok := revised[c.ID]; ok {
			after = rv.Verdict
		}
		w("| %s | %s | %s | %s | %.2f | **%s** | %s | %s |\n", c.ID, c.Type, cell(c.Title), cell("`"+payload+"`"), c.Sigma, v.Verdict, after, cell(v.Detail))
	}
	if p.Analysis != nil {
		w("\nσ_v (min σ_i) = %.2f; τ_local = %.2f, τ_global = %.2f.\n", p.Analysis.SigmaV, store.TauLocal, store.TauGlobal)
	}

	w("\n## Constraints\n\n| id | kind | domain | quote | removal consequence | open questions |\n|---|---|---|---|---|---|\n")
	for _, c := range p.Constraints {
		kind := "implicit"
		if c.Explicit {
			kind = "explicit"
		}
		w("| %s | %s (%s) | %s | %s | %s | %s |\n", c.ID, kind, c.Provenance.Source, c.Domain, cell(c.Quote), cell(c.RemovalConsequence), cell(strings.Join(c.OpenQuestions, " · ")))
	}
	if len(p.OpenQuestions) > 0 {
		w("\n## Open questions\n\n")
		for _, q := range p.OpenQuestions {
			w("- %s\n", q)
		}
	}
	if len(p.Quantities) > 0 {
		w("\n## Quantities\n\n| name | unit | aggregate | description |\n|---|---|---|---|\n")
		for _, q := range p.Quantities {
			w("| %s | %s | %s | %s |\n", q.Name, cell(q.Unit), q.Aggregate, cell(q.Description))
		}
	}

	w("\n## Tasks\n\n| id | type | title | depends on | cost (low / mid / high) | hours (low / mid / high) | confidence | method |\n|---|---|---|---|---|---|---|---|\n")
	for _, t := range p.Tasks {
		w("| %s | %s | %s | %s | %s | %s | %.2f | %s |\n", t.ID, t.Type, cell(t.Title), orDash(strings.Join(t.DependsOn, ", ")), triple(t.CostUSD, "$"), triple(t.Hours, "h"), t.Confidence, t.Method)
	}
	if p.Analysis != nil {
		analysisSection(&b, "", p.Analysis)
	}
	if len(p.Claims) > 0 {
		w("\n## Figures the model stated\n\nThe kernel computes every total itself; a stated figure is only compared.\n\n| figure | stated by the model | computed by the kernel | agrees |\n|---|---|---|---|\n")
		for _, c := range p.Claims {
			w("| %s | %s | %s | %s |\n", c.Name, num(c.Stated), num(c.Computed), map[bool]string{true: "yes", false: "**no** (kernel's figure used)"}[c.Agrees])
		}
	}
	if len(p.Surveys) > 0 {
		w("\n## Approach surveys\n")
		for _, s := range p.Surveys {
			w("\n### %s — %s\n\nTriggered by: %s. Planned: %s, %s.\n\n", s.TaskID, cell(taskTitle(p.Tasks, s.TaskID)), strings.Join(s.Triggers, "; "),
				triple(taskOf(p.Tasks, s.TaskID).CostUSD, "$"), triple(taskOf(p.Tasks, s.TaskID).Hours, "h"))
			w("| approach | title | cost | hours | confidence | known-method share | judgment required | effects |\n|---|---|---|---|---|---|---|---|\n")
			for _, ap := range s.Approaches {
				var eff []string
				for _, e := range ap.ConstraintEffects {
					eff = append(eff, fmt.Sprintf("%s σ %.2f (%s)", e.ConstraintID, e.Sigma, e.Reason))
				}
				w("| %s | %s | %s | %s | %.2f | %.0f%% | %s | %s |\n", ap.ID, cell(ap.Title), triple(ap.CostUSD, "$"), triple(ap.Hours, "h"), ap.Confidence,
					ap.KnownMethodShare*100, cell(strings.Join(ap.JudgmentRequired, "; ")), cell(strings.Join(eff, "; ")))
			}
		}
	}
	w("\n## Repair\n\nStatus: **%s**. %s\n", p.Repair.Status, p.Repair.Note)
	if len(p.Repair.Required) > 0 {
		w("\nRequired to hold (logic: SAT or TIGHT; semantic: no approach below its floor): %s. Searched %d nodes of %s combinations.\n",
			strings.Join(p.Repair.Required, ", "), p.Repair.Explored, num(p.Repair.Space))
	}
	if len(p.Repair.Excluded) > 0 {
		w("\nExcluded approaches:\n\n")
		for _, e := range p.Repair.Excluded {
			w("- %s/%s: σ(%s) %.2f below the floor %.2f\n", e.TaskID, e.ApproachID, e.ConstraintID, e.Sigma, e.Floor)
		}
	}
	if len(p.Repair.UnsatCore) > 0 {
		w("\nUnsat core (a minimal set of constraints no combination satisfies together): **%s**.\n", strings.Join(p.Repair.UnsatCore, ", "))
	}
	if p.Repair.Status == RepairRepaired {
		w("\n| task | chosen approach |\n|---|---|\n")
		for _, c := range p.Repair.Choices {
			title := "keep as planned"
			if ap, ok := findApproach(p.Surveys, c); ok {
				title = ap.Title
			}
			w("| %s | %s: %s |\n", c.TaskID, c.ApproachID, cell(title))
		}
		w("\n### Revised budget\n")
		analysisSection(&b, "#", p.Repair.Revised)
	}
	if p.SMT != nil {
		w("\n## SMT cross-check (%s)\n\nAgree: **%v**.\n\n| question | kernel | z3 |\n|---|---|---|\n", p.SMT.Solver, p.SMT.Agree)
		for _, c := range p.SMT.Checks {
			w("| %s | %s | %s |\n", cell(c.What), c.Kernel, c.Solver)
		}
	}
	tasks, a := finalPlan(p)
	if a != nil {
		label := "the plan"
		if p.Repair.Status == RepairRepaired {
			label = "the revised plan"
		}
		w("\n## DAG\n\nCritical path of %s in red. Gantt chart: [%s](%s).\n\n```mermaid\n%s```\n", label, ganttFile, ganttFile, Mermaid(tasks, a))
	}
	return b.String()
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
	w("\n##%s Budget waterfall (execution order, mid costs)\n\n| # | task | cost | cumulative | remaining |\n|---|---|---|---|---|\n", level)
	for k, r := range a.Waterfall {
		rem := "—"
		if r.Remaining != nil {
			rem = fmt.Sprintf("$%.2f", *r.Remaining)
		}
		w("| %d | %s | $%.2f | $%.2f | %s |\n", k+1, r.TaskID, r.CostMid, r.Cumulative, rem)
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
		w("- %s\n", strings.Join(p, " → "))
	}
	w("\n| task | hours | ES | EF | LS | LF | total float | free float | wave | critical |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range a.Schedule {
		crit := ""
		if r.Critical {
			crit = "**yes**"
		}
		w("| %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n", r.TaskID, num(r.Hours), num(r.ES), num(r.EF), num(r.LS), num(r.LF), num(r.TotalFloat), num(r.FreeFloat), r.Wave+1, crit)
	}
	w("\n##%s Parallel waves\n\n", level)
	for k, wave := range a.Waves {
		w("%d. %s\n", k+1, strings.Join(wave, ", "))
	}
	if len(a.Walls) > 0 {
		w("\n##%s Constraint walls\n", level)
		for _, wl := range a.Walls {
			w("\n**%s** (`%s`) is over its limit by %s. Ranked contributions (wall: %s):\n\n| rank | task | contribution | share |\n|---|---|---|---|\n",
				wl.ConstraintID, verdictFor(a, wl.ConstraintID).Expr, num(wl.Overshoot), strings.Join(wl.Wall, ", "))
			for k, c := range wl.Tasks {
				w("| %d | %s | %s | %.0f%% |\n", k+1, c.ID, num(c.Amount), c.Share*100)
			}
			var cl []string
			for _, c := range wl.Clusters {
				cl = append(cl, fmt.Sprintf("%s %s (%.0f%%)", c.ID, num(c.Amount), c.Share*100))
			}
			w("\nClusters by task type: %s.\n", strings.Join(cl, ", "))
		}
	}
}

// criticalEdges lists the dependency edges on a critical path.
func criticalEdges(a *Analysis) map[[2]string]bool {
	out := map[[2]string]bool{}
	for _, p := range a.CriticalPaths {
		for k := 1; k < len(p); k++ {
			out[[2]string{p[k-1], p[k]}] = true
		}
	}
	return out
}

// Mermaid renders the DAG as a Mermaid flowchart with the critical path in red.
func Mermaid(tasks []Task, a *Analysis) string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	node := map[string]string{}
	critical := map[string]bool{}
	for _, r := range a.Schedule {
		critical[r.TaskID] = r.Critical
	}
	var crit []string
	for i, t := range tasks {
		node[t.ID] = fmt.Sprintf("n%d", i)
		label := strings.ReplaceAll(fmt.Sprintf("%s · %s<br/>$%s · %sh", t.ID, t.Title, num(t.CostUSD.Mid), num(t.Hours.Mid)), `"`, "#quot;")
		fmt.Fprintf(&b, "  %s[\"%s\"]\n", node[t.ID], label)
		if critical[t.ID] {
			crit = append(crit, node[t.ID])
		}
	}
	edges := criticalEdges(a)
	var red []string
	k := 0
	for _, t := range tasks {
		for _, d := range t.DependsOn {
			fmt.Fprintf(&b, "  %s --> %s\n", node[d], node[t.ID])
			if edges[[2]string{d, t.ID}] {
				red = append(red, fmt.Sprint(k))
			}
			k++
		}
	}
	b.WriteString("  classDef critical fill:#fde2e1,stroke:#c0392b,stroke-width:2px\n")
	if len(crit) > 0 {
		fmt.Fprintf(&b, "  class %s critical\n", strings.Join(crit, ","))
	}
	if len(red) > 0 {
		fmt.Fprintf(&b, "  linkStyle %s stroke:#c0392b,stroke-width:3px\n", strings.Join(red, ","))
	}
	return b.String()
}

// Gantt renders the schedule at mid estimates as an SVG chart: a bar per
// task from ES to EF (critical tasks in red), its total float as a pale
// extension, an hour axis, and the critical path named under the chart.
func Gantt(goal string, tasks []Task, a *Analysis) string {
	const left, right, top, row, width = 280.0, 30.0, 60.0, 26.0, 1100.0
	span := a.Time.Mid
	for _, r := range a.Schedule {
		span = math.Max(span, r.LF)
	}
	if a.Time.Limit != nil {
		span = math.Max(span, *a.Time.Limit)
	}
	if span <= 0 {
		span = 1
	}
	scale := (width - left - right) / span
	height := top + row*float64(len(a.Schedule)) + 70
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	w(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	title := clip.Text(goal, 119) // at most 120 characters
	w(`<text x="10" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	w(`<text x="10" y="38" fill="#555">Schedule at mid estimates: %sh critical path. Red: critical tasks. Pale: total float.</text>`+"\n", num(a.Time.Mid))
	step := niceStep(span)
	for x := 0.0; x <= span+1e-9; x += step {
		px := left + x*scale
		w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", px, top-6, px, top+row*float64(len(a.Schedule)))
		w(`<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%sh</text>`+"\n", px, top-10, num(x))
	}
	if a.Time.Limit != nil {
		px := left + *a.Time.Limit*scale
		w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#7d3c98" stroke-width="2" stroke-dasharray="6,4"/>`+"\n", px, top-6, px, top+row*float64(len(a.Schedule)))
		w(`<text x="%.1f" y="%.1f" text-anchor="end" fill="#7d3c98">limit %sh</text>`+"\n", px-4, top+row*float64(len(a.Schedule))+14, num(*a.Time.Limit))
	}
	title2 := map[string]string{}
	for _, t := range tasks {
		title2[t.ID] = t.Title
	}
	for i, r := range a.Schedule {
		y := top + row*float64(i)
		label := r.TaskID + " " + title2[r.TaskID]
		if rr := []rune(label); len(rr) > 40 {
			label = string(rr[:39]) + "…"
		}
		color := "#2e86c1"
		if r.Critical {
			color = "#c0392b"
		}
		w(`<text x="10" y="%.1f">%s</text>`+"\n", y+17, html.EscapeString(label))
		if r.TotalFloat > 0 {
			w(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" opacity="0.18"/>`+"\n", left+r.EF*scale, y+5, r.TotalFloat*scale, row-10, color)
		}
		w(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" rx="2"><title>%s: ES %s, EF %s, LS %s, LF %s, float %s</title></rect>`+"\n",
			left+r.ES*scale, y+4, math.Max(1, r.Hours*scale), row-8, color, html.EscapeString(r.TaskID), num(r.ES), num(r.EF), num(r.LS), num(r.LF), num(r.TotalFloat))
	}
	y := top + row*float64(len(a.Schedule)) + 24
	var paths []string
	for _, p := range a.CriticalPaths {
		paths = append(paths, strings.Join(p, " → "))
		if len(paths) == 3 {
			break
		}
	}
	w(`<text x="10" y="%.1f" fill="#c0392b">Critical path: %s</text>`+"\n", y, html.EscapeString(strings.Join(paths, "  |  ")))
	b.WriteString("</svg>\n")
	return b.String()
}

// niceStep picks an axis step of 1, 2 or 5 × 10^k giving about ten ticks.
func niceStep(span float64) float64 {
	raw := span / 10
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
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
		fmt.Fprintf(&b, "repair: revised mid cost $%.2f, critical path %sh; %s\n", p.Repair.Revised.Cost.Mid, num(p.Repair.Revised.Time.Mid), strings.Join(rv, ", "))
	case RepairInfeasible:
		fmt.Fprintf(&b, "repair: none possible; unsat core: %s\n", strings.Join(p.Repair.UnsatCore, ", "))
	default:
		fmt.Fprintf(&b, "repair: not needed\n")
	}
	if p.SMT != nil {
		fmt.Fprintf(&b, "smt: %s agrees on %d questions\n", p.SMT.Solver, len(p.SMT.Checks))
	}
	cost := fmt.Sprintf("$%.4f", p.Usage.CostUSD)
	if p.Usage.Unpriced {
		cost += " (some calls unpriced)"
	}
	fmt.Fprintf(&b, "LLM: %d calls, %d tokens in, %d out, %s\n", p.Usage.Calls, p.Usage.InputTokens, p.Usage.OutputTokens, cost)
	files := []string{f.JSON, f.Report, f.Mermaid, f.Gantt}
	fmt.Fprintf(&b, "wrote %s\n", strings.Join(files, ", "))
	return b.String()
}
