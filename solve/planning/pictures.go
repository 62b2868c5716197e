package planning

import (
	"fmt"
	"math"
	"strings"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/solve/dag"
)

// The pictures: the Gantt chart (SVG) and the DAG (Mermaid).

// wrap breaks text into lines of at most width runes, at spaces where it
// can (a longer word is cut).
func wrap(text string, width int) []string {
	var lines []string
	var cur []rune
	for _, word := range strings.Fields(text) {
		w := []rune(word)
		for len(w) > width {
			if len(cur) > 0 {
				lines, cur = append(lines, string(cur)), nil
			}
			lines, w = append(lines, string(w[:width])), w[width:]
		}
		switch {
		case len(cur) == 0:
			cur = w
		case len(cur)+1+len(w) <= width:
			cur = append(append(cur, ' '), w...)
		default:
			lines, cur = append(lines, string(cur)), w
		}
	}
	if len(cur) > 0 || len(lines) == 0 {
		lines = append(lines, string(cur))
	}
	return lines
}

// A picture's labels are capped so that a title of any length keeps the
// chart readable: clipped to MermaidLabelChars characters in the DAG,
// SVGLabelChars in the Gantt chart, then wrapped on at most LabelLines
// lines, with clip.Ellipsis where text was cut. The Markdown report's
// tables show every title whole.
const (
	MermaidLabelChars = 120
	SVGLabelChars     = 200
	LabelLines        = 8
)

// label is s clipped to chars characters (clip.Line) and wrapped at width
// on at most LabelLines lines, the last ending in clip.Ellipsis when the
// text goes on.
func label(s string, chars, width int) []string {
	lines := wrap(clip.Line(s, chars), width)
	if len(lines) > LabelLines {
		lines = lines[:LabelLines]
		last := clip.Text(lines[LabelLines-1], width-1)
		if !strings.HasSuffix(last, clip.Ellipsis) {
			last += clip.Ellipsis
		}
		lines[LabelLines-1] = last
	}
	return lines
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

// Mermaid renders the DAG as a Mermaid flowchart, critical tasks and
// edges in red, drawn to stay readable at 10–50 tasks: dependencies that
// another path already implies are left out (the transitive reduction;
// the report's task table lists every one), labels wrap at 24 characters
// (the id, the title up to MermaidLabelChars, the mid cost and hours), spacing is tight,
// and the chart runs top to bottom or left to right, whichever is nearer
// a screen's shape. Label text is escaped with Mermaid's entity codes
// (mermaidText): a title cannot close its label or add to the chart.
func Mermaid(tasks []Task, a *Analysis) string {
	var b strings.Builder
	ids := make([]string, len(tasks))
	deps := make([][]string, len(tasks))
	for i, t := range tasks {
		ids[i], deps[i] = t.ID, t.DependsOn
	}
	var redundant []map[int]bool
	if g, vs := dag.Build(ids, deps); len(vs) == 0 {
		redundant = g.Redundant()
	}
	// Nodes are about 190 × 75 px with their spacing; a wave is a rank.
	waves, widest := float64(len(a.Waves)), float64(maxLen(a.Waves))
	dir := "LR"
	if lr, tb := aspectMiss(waves*190, widest*75), aspectMiss(widest*190, waves*75); tb < lr {
		dir = "TB"
	}
	fmt.Fprintf(&b, "%%%%{init: {\"flowchart\": {\"nodeSpacing\": 18, \"rankSpacing\": 36}}}%%%%\nflowchart %s\n", dir)
	node := map[string]string{}
	index := map[string]int{}
	critical := map[string]bool{}
	for _, r := range a.Schedule {
		critical[r.TaskID] = r.Critical
	}
	var crit []string
	for i, t := range tasks {
		node[t.ID], index[t.ID] = fmt.Sprintf("n%d", i), i
		lines := label(strings.TrimSuffix(t.ID+" · "+t.Title, " · "), MermaidLabelChars, 24)
		lines = append(lines, fmt.Sprintf("$%s · %sh", num(t.CostUSD.Mid), num(t.Hours.Mid)))
		for j, l := range lines {
			lines[j] = mermaidText(l)
		}
		label := strings.Join(lines, "<br/>")
		fmt.Fprintf(&b, "  %s[\"%s\"]\n", node[t.ID], label)
		if critical[t.ID] {
			crit = append(crit, node[t.ID])
		}
	}
	edges := criticalEdges(a)
	var red []string
	k := 0
	for i, t := range tasks {
		for _, d := range t.DependsOn {
			crit := edges[[2]string{d, t.ID}]
			if redundant != nil && redundant[i][index[d]] && !crit {
				continue
			}
			fmt.Fprintf(&b, "  %s --> %s\n", node[d], node[t.ID])
			if crit {
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

// aspectMiss is how far a w × h picture is from a 16:10 screen (0 is a
// perfect fit), on a log scale so too wide and too tall weigh alike.
func aspectMiss(w, h float64) float64 {
	return math.Abs(math.Log((w / math.Max(h, 1)) / 1.6))
}

func maxLen(waves [][]string) int {
	n := 0
	for _, w := range waves {
		n = max(n, len(w))
	}
	return n
}

// ganttPanel is one schedule drawn in the Gantt chart.
type ganttPanel struct {
	title string
	tasks []Task
	a     *Analysis
	low   dag.Schedule
	high  dag.Schedule
	swap  map[string]Choice // after repair: the swapped tasks
}

func newPanel(title string, tasks []Task, quantities []Quantity, a *Analysis) ganttPanel {
	gp := ganttPanel{title: title, tasks: tasks, a: a, swap: map[string]Choice{}}
	if m, err := newModel(tasks, quantities); err == nil {
		gp.low, gp.high = m.g.Schedule(m.scenario(0).hours), m.g.Schedule(m.scenario(2).hours)
	}
	return gp
}

// Gantt renders the plan's schedule as an SVG chart. Each task is a row
// with its full title wrapped; each panel (the plan, and the plan after
// repair beside it when there was one) draws per task a bar from ES to EF
// at mid estimates (critical tasks red), its total float pale, a whisker
// over its finish from the low to the high estimates, and its mid cost.
// Vertical lines mark the project's finish at low, mid and high estimates
// and the time limit; each panel's header gives every logic constraint's
// verdict with its figures, so a plan that is TIGHT on time shows its
// high finish past the limit. Every text is XML character data (xmlText):
// a title cannot add an element or an attribute.
func Gantt(p *Plan) string {
	if p.Analysis == nil {
		return ""
	}
	g := newGantt(p, ganttPanels(p))
	g.w(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", g.width, g.height, g.width, g.height)
	g.w(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	for k, l := range g.goal {
		g.text(10, 20+float64(k)*17, ` font-size="14" font-weight="bold"`, l)
	}
	for k, gp := range g.panels {
		g.panel(p, k, gp)
	}
	y := g.top
	for k, rw := range g.rows {
		if k%2 == 1 {
			g.w(`<rect x="0" y="%.1f" width="%.0f" height="%.1f" fill="#000" opacity="0.025"/>`+"\n", y, g.width, rw.h)
		}
		for j, l := range rw.label {
			g.text(10, y+5+ganttLine/2+4+ganttLine*float64(j), "", l)
		}
		y += rw.h
	}
	g.text(10, g.height-14, ` fill="#555" font-size="11"`, g.legend())
	g.b.WriteString("</svg>\n")
	return g.b.String()
}

// The Gantt chart's fixed measures, in pixels: the label column, the gap
// between panels, the cost column, the header's top and a text line.
const ganttLeft, ganttGap, ganttCostW, ganttTop0, ganttLine = 300.0, 30.0, 70.0, 40.0, 15.0

// ganttPanels is the plan's panel, and beside it the plan after repair
// when there was one (the swapped tasks marked).
func ganttPanels(p *Plan) []ganttPanel {
	panels := []ganttPanel{newPanel("Plan", p.Tasks, p.Quantities, p.Analysis)}
	if p.Repair.Status == RepairRepaired && p.Repair.Revised != nil {
		after := newPanel("After repair", applyChoices(p.Tasks, p.Surveys, p.Repair.Choices), p.Quantities, p.Repair.Revised)
		for _, c := range p.Repair.Choices {
			if c.ApproachID != OriginalApproach {
				after.swap[c.TaskID] = c
			}
		}
		panels = append(panels, after)
		panels[0].title = "Before repair"
	}
	return panels
}

// gantt is a Gantt chart being drawn: its layout, computed once before
// anything is drawn, and the SVG so far.
type gantt struct {
	panels  []ganttPanel
	headers [][]string // per panel: its title, then one line per logic constraint
	rows    []ganttRow
	goal    []string // the goal's lines
	panelW  float64
	span    float64 // hours the time axis covers
	scale   float64 // pixels per hour
	unit    timeUnit
	// top and bottom of the rows, the chart's size, and shift: how far
	// the goal's extra lines push everything down.
	top, bottom, width, height, shift float64
	b                                 strings.Builder
}

// ganttRow is one task's row: its title wrapped on the left; after
// repair, the chosen approach under the bar.
type ganttRow struct {
	id    string
	label []string
	swaps []string
	h     float64
}

// newGantt lays the chart out: the time axis's span and unit, the
// headers, the rows and the goal's lines decide every position.
func newGantt(p *Plan, panels []ganttPanel) *gantt {
	g := &gantt{panels: panels, panelW: 640.0}
	if len(panels) == 2 {
		g.panelW = 560
	}
	g.width = ganttLeft + float64(len(panels))*(g.panelW+ganttCostW+ganttGap) + 10
	for _, gp := range panels {
		g.span = math.Max(g.span, math.Max(gp.a.Time.High, gp.a.Time.Mid))
		for _, r := range gp.a.Schedule {
			g.span = math.Max(g.span, r.LF)
		}
		if gp.a.Time.Limit != nil {
			g.span = math.Max(g.span, *gp.a.Time.Limit)
		}
	}
	if g.span <= 0 {
		g.span = 1
	}
	g.scale = g.panelW / g.span
	g.unit = timeUnitOf(g.span)
	headLines := 0
	for _, gp := range panels {
		h := g.header(gp)
		g.headers = append(g.headers, h)
		headLines = max(headLines, len(h))
	}
	g.top = ganttTop0 + float64(headLines)*ganttLine + 34
	g.rows = g.taskRows(p)
	g.bottom = g.top
	for _, r := range g.rows {
		g.bottom += r.h
	}
	g.height = g.bottom + 96
	g.goal = label(p.Goal, SVGLabelChars, int((g.width-20)/7.8))
	g.shift = float64(len(g.goal)-1) * 17
	g.top, g.bottom, g.height = g.top+g.shift, g.bottom+g.shift, g.height+g.shift
	return g
}

// header is a panel's title and one line per logic constraint.
func (g *gantt) header(gp ganttPanel) []string {
	dollars := func(v float64) string { return "$" + num(v) }
	h := []string{fmt.Sprintf("%s: critical path %s · cost %s", gp.title, lowMidHigh(gp.a.Time, g.unit.format), lowMidHigh(gp.a.Cost, dollars))}
	for _, v := range gp.a.Verdicts {
		if v.Type == Logic {
			h = append(h, wrap(fmt.Sprintf("%s %s: %s — %s", v.ConstraintID, v.Verdict, v.Expr, v.Detail), int(g.panelW/6.6))...)
		}
	}
	return h
}

// taskRows is one row per task, tall enough for its wrapped title and,
// after repair, the approach chosen for it.
func (g *gantt) taskRows(p *Plan) []ganttRow {
	var rows []ganttRow
	for _, t := range p.Tasks {
		r := ganttRow{id: t.ID, label: label(t.ID+" "+t.Title, SVGLabelChars, 44)}
		if len(g.panels) == 2 {
			if c, ok := g.panels[1].swap[t.ID]; ok {
				if ap, ok := findApproach(p.Surveys, c); ok {
					r.swaps = label(fmt.Sprintf("→ %s: %s (for %s)", c.ApproachID, ap.Title, strings.Join(c.NeededFor, ", ")), SVGLabelChars, int(g.panelW/6.6))
				}
			}
		}
		r.h = 10 + ganttLine*float64(max(len(r.label), 1+len(r.swaps)))
		rows = append(rows, r)
	}
	return rows
}

func (g *gantt) w(format string, args ...any) { fmt.Fprintf(&g.b, format, args...) }

func (g *gantt) text(x, y float64, attrs, s string) {
	g.w(`<text x="%.1f" y="%.1f"%s>%s</text>`+"\n", x, y, attrs, xmlText(s))
}

// panel draws panel k: its header, the time axis and grid, the finish
// and limit lines, and each task's bar.
func (g *gantt) panel(p *Plan, k int, gp ganttPanel) {
	x := ganttLeft + float64(k)*(g.panelW+ganttCostW+ganttGap)
	dur := g.unit.format
	for j, l := range g.headers[k] {
		attrs := ""
		if j == 0 {
			attrs = ` font-weight="bold"`
		} else if strings.Contains(l, " UNSAT: ") {
			attrs = ` fill="#c0392b"`
		} else if strings.Contains(l, " TIGHT: ") {
			attrs = ` fill="#b9770e"`
		}
		g.text(x, ganttTop0+g.shift+float64(j)*ganttLine, attrs, l)
	}
	// Axis and grid.
	step := niceStep(g.span*g.unit.perHour) / g.unit.perHour
	for n := 0; float64(n)*step <= g.span*(1+1e-9); n++ {
		h := float64(n) * step
		px := x + h*g.scale
		g.w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ececec"/>`+"\n", px, g.top-6, px, g.bottom)
		g.text(px, g.top-10, ` text-anchor="middle" fill="#555"`, dur(h))
	}
	g.text(x+g.panelW+ganttCostW-4, g.top-10, ` text-anchor="end" fill="#555"`, "mid cost")
	g.finishes(x, gp)
	sched := map[string]int{}
	for i, r := range gp.a.Schedule {
		sched[r.TaskID] = i
	}
	cost := map[string]float64{}
	for _, t := range gp.tasks {
		cost[t.ID] = t.CostUSD.Mid
	}
	y := g.top
	for _, rw := range g.rows {
		if i, ok := sched[rw.id]; ok {
			g.bar(p, k, gp, x, y, rw, i, cost)
		}
		y += rw.h
	}
}

// finishes draws the project's finish at low, mid and high (one line
// where they agree), and the limit. A label that would run into the one
// before it goes on the next line down.
func (g *gantt) finishes(x float64, gp ganttPanel) {
	dur := g.unit.format
	finishes := []finishLine{{gp.a.Time.Low, "low", "#7f8c8d", "2,3"}, {gp.a.Time.Mid, "mid", "#2c3e50", ""}, {gp.a.Time.High, "high", "#7f8c8d", "2,3"}}
	if gp.a.Time.Low == gp.a.Time.Mid && gp.a.Time.Mid == gp.a.Time.High {
		finishes = []finishLine{{gp.a.Time.Mid, "finish", "#2c3e50", ""}}
	}
	lastEnd, row := math.Inf(-1), 0
	for _, f := range finishes {
		px := x + f.v*g.scale
		label := f.name + " " + dur(f.v)
		if px < lastEnd+6 {
			row++
		} else {
			row = 0
		}
		lastEnd = px + 2 + 6.2*float64(len([]rune(label)))
		g.w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="%s"/>`+"\n", px, g.top-4, px, g.bottom, f.color, f.dash)
		g.text(px+2, g.bottom+13+13*float64(row), ` fill="`+f.color+`" font-size="11"`, label)
	}
	if gp.a.Time.Limit != nil {
		px := x + *gp.a.Time.Limit*g.scale
		g.w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#7d3c98" stroke-width="2" stroke-dasharray="6,4"/>`+"\n", px, g.top-6, px, g.bottom+44)
		g.text(px-4, g.bottom+56, ` text-anchor="end" fill="#7d3c98"`, "limit "+dur(*gp.a.Time.Limit))
	}
}

// bar draws one task's row in panel k at height y: its float, its bar
// (outlined when the repair swapped it), its finish's whisker, its mid
// cost and, after repair, the approach chosen for it.
func (g *gantt) bar(p *Plan, k int, gp ganttPanel, x, y float64, rw ganttRow, i int, cost map[string]float64) {
	dur := g.unit.format
	r := gp.a.Schedule[i]
	color := "#2e86c1"
	if r.Critical {
		color = "#c0392b"
	}
	mid := y + 5 + ganttLine/2
	if r.TotalFloat > 0 {
		g.w(`<rect x="%.1f" y="%.1f" width="%.1f" height="10" fill="%s" opacity="0.18"/>`+"\n", x+r.EF*g.scale, mid-5, r.TotalFloat*g.scale, color)
	}
	stroke := ""
	if _, swapped := gp.swap[rw.id]; swapped {
		stroke = ` stroke="#1e8449" stroke-width="2"`
	}
	g.w(`<rect x="%.1f" y="%.1f" width="%.1f" height="12" fill="%s" rx="2"%s><title>%s: ES %s, EF %s, LS %s, LF %s, total float %s (mid); finish %s–%s (low–high)</title></rect>`+"\n",
		x+r.ES*g.scale, mid-6, math.Max(1, r.Hours*g.scale), color, stroke, xmlText(rw.id), dur(r.ES), dur(r.EF), dur(r.LS), dur(r.LF), dur(r.TotalFloat), g.unit.number(at(gp.low.EF, i)), dur(at(gp.high.EF, i)))
	if lo, hi := at(gp.low.EF, i), at(gp.high.EF, i); hi > lo {
		g.w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", x+lo*g.scale, mid, x+hi*g.scale, mid)
		for _, v := range []float64{lo, hi} {
			g.w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", x+v*g.scale, mid-4, x+v*g.scale, mid+4)
		}
	}
	label := "$" + num(cost[rw.id])
	attrs := ` text-anchor="end"`
	if c, ok := gp.swap[rw.id]; ok {
		label = fmt.Sprintf("$%s (was $%s)", num(cost[rw.id]), num(taskOf(p.Tasks, c.TaskID).CostUSD.Mid))
		attrs += ` fill="#1e8449"`
	}
	g.text(x+g.panelW+ganttCostW-4, mid+4, attrs, label)
	if k == 1 {
		for j, l := range rw.swaps {
			g.text(x+4, mid+4+ganttLine*float64(j+1), ` fill="#1e8449" font-size="11"`, l)
		}
	}
}

// legend names only what the chart draws.
func (g *gantt) legend() string {
	var drawsFloat, drawsWhisker, drawsLimit, drawsSwap bool
	for _, gp := range g.panels {
		drawsLimit = drawsLimit || gp.a.Time.Limit != nil
		drawsSwap = drawsSwap || len(gp.swap) > 0
		for i, r := range gp.a.Schedule {
			drawsFloat = drawsFloat || r.TotalFloat > 0
			drawsWhisker = drawsWhisker || at(gp.high.EF, i) > at(gp.low.EF, i)
		}
	}
	legend := "Bars: start to finish at mid estimates (red: critical"
	if drawsSwap {
		legend += "; green outline: swapped by the repair"
	}
	legend += ")."
	if drawsFloat {
		legend += " Pale: total float."
	}
	if drawsWhisker {
		legend += " Whisker: the task's finish from low to high estimates."
	}
	if drawsLimit {
		legend += " Dashed purple: the time limit."
	}
	return legend
}

// finishLine is a vertical line at the project's finish.
type finishLine struct {
	v                 float64 // hours
	name, color, dash string
}

// timeUnit is the unit a chart's times are written in: the one that suits
// its span (a run of seconds is not drawn in fractions of an hour).
type timeUnit struct {
	perHour float64 // units in an hour
	suffix  string
}

// timeUnitOf is the unit for a chart spanning span hours: ms under 2
// seconds, s under 2 minutes, min under 2 hours, else h.
func timeUnitOf(span float64) timeUnit {
	switch s := span * 3600; {
	case s < 2:
		return timeUnit{3_600_000, "ms"}
	case s < 120:
		return timeUnit{3600, "s"}
	case s < 7200:
		return timeUnit{60, "min"}
	}
	return timeUnit{1, "h"}
}

// number is hours in the unit, without it.
func (u timeUnit) number(hours float64) string { return num(hours * u.perHour) }

// format is hours in the unit, with it: "6s", "1.5min", "12h".
func (u timeUnit) format(hours float64) string { return u.number(hours) + u.suffix }

// lowMidHigh is an estimate as "MID mid (low LOW, high HIGH)", or its one
// value when the three agree.
func lowMidHigh(e Rollup, f func(float64) string) string {
	if e.Low == e.Mid && e.Mid == e.High {
		return f(e.Mid)
	}
	return fmt.Sprintf("%s mid (low %s, high %s)", f(e.Mid), f(e.Low), f(e.High))
}

func at(vs []float64, i int) float64 {
	if i < len(vs) {
		return vs[i]
	}
	return 0
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
