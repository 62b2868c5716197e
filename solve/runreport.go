package solve

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/planning"
	"github.com/llmkernels/kernels/solve/store"
)

// The run report (solve run --report, solve report): the run's tree with
// states, σ and money, its critical path, and the events that changed it,
// as Markdown, a Mermaid flowchart and an SVG Gantt chart, in the shape of
// solve plan's (planning's Mermaid and Gantt draw the executed tree: each
// live node is a task whose duration is the wall time its own calls took,
// after its parent and the siblings it depended on).

// RunReport is a run's report.
type RunReport struct {
	Goal   string     `json:"goal"`
	Status *RunStatus `json:"status"`
	// CriticalPath is the chain of nodes (ids) whose calls took longest
	// end to end, and its length in seconds.
	CriticalPath        []string `json:"critical_path"`
	CriticalPathSeconds float64  `json:"critical_path_seconds"`
	// tasks and analysis draw the pictures.
	tasks    []planning.Task
	analysis *planning.Analysis
}

// minHours is the duration given a node whose calls took no measurable
// time (the schedule needs every task to take some).
const minHours = 1e-6

// endTask is the synthetic task that waits for every node: the run's end.
const endTask = "end"

// Report builds the report of the run whose root id starts with root.
func (k *Kernel) Report(ctx context.Context, root string) (*RunReport, error) {
	st, err := k.Status(ctx, root)
	if err != nil {
		return nil, err
	}
	deps, err := k.st.Dependencies(ctx, st.Result.RootID)
	if err != nil {
		return nil, err
	}
	r := &RunReport{Status: st}
	short := map[string]string{}
	var live []NodeStatus
	for _, n := range st.Nodes {
		if n.Parent == "" {
			r.Goal = n.Goal
		}
		if !n.Invalidated {
			live = append(live, n)
			short[n.ID] = store.Short(n.ID)
		}
	}
	dependsOn := map[string][]string{}
	for _, d := range deps {
		if short[d.Node] != "" && short[d.DependsOn] != "" {
			dependsOn[d.Node] = append(dependsOn[d.Node], short[d.DependsOn])
		}
	}
	waited := map[string]bool{}
	for _, n := range live {
		ds := dependsOn[n.ID]
		if short[n.Parent] != "" {
			ds = append(ds, short[n.Parent])
		}
		for _, d := range ds {
			waited[d] = true
		}
		sigma := 1.0
		if n.SigmaV != nil {
			sigma = *n.SigmaV
		}
		title := fmt.Sprintf("%s · %s", clip.Line(n.Summary, 40), n.State)
		if n.SigmaV != nil {
			title += fmt.Sprintf(" · σ %.2f", sigma)
		}
		hours := math.Max(n.SpentSeconds/3600, minHours)
		r.tasks = append(r.tasks, planning.Task{ID: short[n.ID], Title: title, Type: "node", DependsOn: ds, Method: planning.KnownMethod, Confidence: sigma,
			CostUSD: planning.Estimate{Low: n.SpentUSD, Mid: n.SpentUSD, High: n.SpentUSD}, Hours: planning.Estimate{Low: hours, Mid: hours, High: hours}, NodeID: n.ID})
	}
	var ends []string
	for _, t := range r.tasks {
		if !waited[t.ID] {
			ends = append(ends, t.ID)
		}
	}
	r.tasks = append(r.tasks, planning.Task{ID: endTask, Title: "the run's end: " + st.Result.Outcome, Type: "end", DependsOn: ends, Method: planning.KnownMethod,
		Confidence: 1, Hours: planning.Estimate{Low: minHours, Mid: minHours, High: minHours}})
	if r.analysis, err = planning.Analyze(r.tasks, nil, nil); err != nil {
		return nil, fmt.Errorf("run %s: the schedule of its tree: %w", st.Result.RootID, err)
	}
	if len(r.analysis.CriticalPaths) > 0 {
		for _, id := range r.analysis.CriticalPaths[0] {
			if id != endTask {
				r.CriticalPath = append(r.CriticalPath, id)
			}
		}
	}
	r.CriticalPathSeconds = r.analysis.Time.Mid * 3600
	return r, nil
}

// nodeTasks are the tasks of the run's nodes, without the run's end: the
// Gantt chart draws a row for each, and the end is no node (its finish
// is the chart's finish line).
func (r *RunReport) nodeTasks() []planning.Task {
	var out []planning.Task
	for _, t := range r.tasks {
		if t.ID != endTask {
			out = append(out, t)
		}
	}
	return out
}

// WriteReport writes the report as FILE (.json added if missing: the
// report's data), BASE.md, BASE.mmd and BASE.svg, each atomically.
func WriteReport(r *RunReport, out string) (planning.Files, error) {
	f := planning.OutputFiles(out)
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return f, err
	}
	for _, w := range []struct {
		path string
		data []byte
	}{{f.JSON, append(data, '\n')}, {f.Report, []byte(r.Markdown(filepath.Base(f.Gantt), filepath.Base(f.Mermaid)))},
		{f.Mermaid, []byte(planning.Mermaid(r.tasks, r.analysis))}, {f.Gantt, []byte(planning.Gantt(&planning.Plan{Goal: r.Goal, Tasks: r.nodeTasks(), Analysis: r.analysis}))}} {
		if err := atomicfile.Write(w.path, w.data, 0o644); err != nil {
			return f, err
		}
	}
	return f, nil
}

// Markdown renders the report.
func (r *RunReport) Markdown(ganttFile, mermaidFile string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	cell := planning.MarkdownText
	res := r.Status.Result
	w("# Run: %s\n\n", cell(r.Goal))
	w("Root node `%s` · **%s**", res.RootID, res.Outcome)
	if res.Outcome == loop.OutcomeAchieved {
		w(" · σ_system %.2f · assembly `%s`", res.SigmaSystem, res.ArtifactID)
	}
	w(" · spent $%.4f of $%.2f", res.SpentUSD, res.AllocatedUSD)
	w("%s%s", UnknownNote(res.SpentUSD, res.UnknownUSD), res.CostLabel())
	if res.ReservedUSD > 0 {
		w(" ($%.4f held by calls in flight)", res.ReservedUSD)
	}
	w(" · %d LLM calls · %d live nodes · %d open requests\n\n", res.LLMCalls, res.Nodes, res.OpenRequests)
	if res.Summary != "" {
		w("%s\n\n", cell(res.Summary))
	}
	w("## Tree\n\nSpent: the node's own paid calls (with the part of unknown outcome, when a call was cut off in flight). Allocated: what it was given. Delegated: what it handed to its children. Reserve: what it has left. Time: its calls' wall time of what it was given.\n\n")
	w("| node | goal | state | σ_v | σ_path | spent | allocated | delegated | reserve | time | attempts | created | resolved |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range r.Status.Nodes {
		sv, sp := "—", "—"
		if n.SigmaV != nil {
			sv, sp = fmt.Sprintf("%.2f", *n.SigmaV), fmt.Sprintf("%.2f", *n.SigmaPath)
		}
		goal := strings.Repeat("· ", n.Depth) + n.Summary
		if n.Goal != n.Summary {
			goal += " — " + clip.Line(n.Goal, 120)
		}
		spent := fmt.Sprintf("$%.4f", n.SpentUSD)
		if n.UnknownUSD > 0 {
			spent += fmt.Sprintf(" ($%.4f unknown outcome)", n.UnknownUSD)
		}
		w("| `%s` | %s | %s | %s | %s | %s | $%.4f | $%.4f | $%.4f | %.1fs / %.0fs | %d/%d | %s | %s |\n", store.Short(n.ID), cell(goal), cell(n.State), sv, sp,
			spent, n.AllocatedUSD, n.DelegatedUSD, n.ReserveUSD, n.SpentSeconds, n.AllocatedSeconds, n.Attempts, n.MaxAttempts, n.Created, orDash(n.Resolved))
	}
	w("\n## Critical path\n\n")
	if len(r.CriticalPath) == 0 {
		w("No node has run yet.\n")
	} else {
		w("%s: %.1fs of calls end to end (a node starts after its parent and the siblings it depends on). !%s\n",
			strings.Join(r.CriticalPath, " → "), r.CriticalPathSeconds, planning.MarkdownLink("Gantt chart", ganttFile))
	}
	w("\n## Events\n\n")
	if len(r.Status.Events) == 0 {
		w("None: no node was reopened, gated or in conflict.\n")
	}
	for _, e := range r.Status.Events {
		w("- %s · `%s` %s: %s\n", e.Time, store.Short(e.NodeID), cell(e.Goal), cell(e.Detail))
	}
	if note := loop.ResolverNote(b.String()); note != "" {
		w("\n%s\n", cell(note))
	}
	w("\n## Tree as a flowchart\n\n(also in %s; the critical path in red)\n\n```mermaid\n%s```\n", cell(mermaidFile), planning.Mermaid(r.tasks, r.analysis))
	return b.String()
}

// UnknownNote is what a run's or a node's spend says of the calls whose
// outcome is unknown ("" when there are none): the part billed for
// certain apart from the part counted at the hold of calls cut off in
// flight (a kill, a deadline, Ctrl-C), which the provider may or may not
// have billed.
func UnknownNote(spent, unknown float64) string {
	if unknown <= 0 {
		return ""
	}
	return fmt.Sprintf(" ($%.4f billed for certain, $%.4f of unknown outcome: calls cut off in flight, counted at their hold)", spent-unknown, unknown)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
