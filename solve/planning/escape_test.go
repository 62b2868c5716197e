package planning

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/llmkernels/kernels/internal/clip"
)

// Hostile is text a user or a model may put in a goal, a title, an id or
// a rubric, aimed at each report format.
var Hostile = []string{
	`say "hi" and 'bye'`,
	`<script>alert(1)</script>`,
	`<img src=x onerror=alert(1)>`,
	`]]></text><script>x</script><text x="1">`,
	`a & b &amp; c &#60;`,
	`x"] --> evil["y`,
	`close ] ) } ]] )) |> <|`,
	`a | b || c \| d \\| e`,
	"back`tick ``` fence ````",
	`# heading #quot; #35; ## two`,
	`a; b; n9 --> n0;`,
	"line1\nline2\r\n## injected\n| a | b |\n- item",
	`%%{init: {"theme":"dark","securityLevel":"loose"}}%% %% comment`,
	`a --> b -.-> c ==> d`,
	`*bold* _em_ ~strike~ [link](http://x) ![img](http://x)`,
	strings.Repeat("long ", 300) + strings.Repeat("x", 700),
	"日本語のタイトル ünïcödé σ → ✓ 🚀",
	"ctl \x00\x01\x1b[31m \u2028 \u202e bidi \ufeff",
	"bad utf8 \xff\xfe end",
}

// shown is what of s a report must show: its visible characters, in
// order, whatever spacing the writer chose.
func shown(s string) string {
	return strings.Join(strings.Fields(strings.Map(oneLine, s)), "")
}

// hostilePlan is the fixture, repaired, with h in every text the user or
// the model writes: the goal, titles, quotes, rubrics, reasons, and a
// task's and a constraint's id.
func hostilePlan(t *testing.T, h string) *Plan {
	t.Helper()
	p := fixture()
	p.Goal = h
	p.OpenQuestions = []string{h}
	task, cons := "b"+h, "c3"+h
	for i := range p.Tasks {
		p.Tasks[i].Title = h
		p.Tasks[i].Quantities = map[string]Estimate{"q": est(1, 2, 3)}
		if p.Tasks[i].ID == "b" {
			p.Tasks[i].ID = task
		}
		for j, d := range p.Tasks[i].DependsOn {
			if d == "b" {
				p.Tasks[i].DependsOn[j] = task
			}
		}
	}
	for i := range p.Constraints {
		c := &p.Constraints[i]
		c.Title, c.Quote, c.RemovalConsequence, c.OpenQuestions = h, h, h, []string{h}
		if c.ID == "c3" {
			c.ID, c.Payload.Rubric = cons, h
		}
	}
	p.Stated[0].Quote = h
	p.NotStated = []NotConstraint{{Quote: h, Reason: h}}
	p.Quantities = []Quantity{{Name: "q", Unit: h, Aggregate: "sum", Description: h}}
	for i := range p.Surveys {
		for j := range p.Surveys[i].Approaches {
			ap := &p.Surveys[i].Approaches[j]
			ap.Title, ap.JudgmentRequired = h, []string{h}
			for k := range ap.ConstraintEffects {
				ap.ConstraintEffects[k].ConstraintID, ap.ConstraintEffects[k].Reason = cons, h
			}
		}
		p.Surveys[i].NothingBetter = h
	}
	p.SurveyRounds[0].Feedback = h
	p.Analysis = analyse(t, p)
	var err error
	if p.Repair, err = repairPlan(context.Background(), p.Tasks, p.Quantities, p.Constraints, p.Surveys, p.Analysis, 0); err != nil {
		t.Fatal(err)
	}
	return p
}

// The Gantt chart parses as XML whatever the titles say, holds only the
// elements and attributes the writer draws, and shows every title.
func TestGanttStaysWellFormedWithHostileText(t *testing.T) {
	elements := map[string]bool{"svg": true, "rect": true, "text": true, "line": true, "title": true}
	attrs := map[string]bool{}
	for _, a := range strings.Fields("xmlns width height viewBox font-family font-size font-weight fill x y x1 y1 x2 y2 stroke stroke-dasharray stroke-width opacity rx text-anchor") {
		attrs[a] = true
	}
	for _, h := range Hostile {
		p := hostilePlan(t, h)
		svg := Gantt(p)
		d := xml.NewDecoder(strings.NewReader(svg))
		var text strings.Builder
		depth := 0
		for {
			tok, err := d.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("title %q: the SVG does not parse: %v", h, err)
			}
			switch x := tok.(type) {
			case xml.StartElement:
				depth++
				if !elements[x.Name.Local] {
					t.Errorf("title %q: element <%s> in the SVG", h, x.Name.Local)
				}
				for _, a := range x.Attr {
					if !attrs[a.Name.Local] || a.Name.Space != "" && a.Name.Local != "xmlns" {
						t.Errorf("title %q: attribute %s:%s on <%s>", h, a.Name.Space, a.Name.Local, x.Name.Local)
					}
				}
			case xml.EndElement:
				depth--
			case xml.CharData:
				text.Write(x)
			case xml.ProcInst, xml.Directive, xml.Comment:
				t.Errorf("title %q: %T in the SVG", h, x)
			}
		}
		if depth != 0 {
			t.Errorf("title %q: %d elements left open", h, depth)
		}
		if got := strings.Join(strings.Fields(text.String()), ""); !strings.Contains(got, shown(h)) || !strings.Contains(got, shown("b"+h)) {
			t.Errorf("title %q: the chart does not show it", h)
		}
	}
}

var (
	mermaidLine  = regexp.MustCompile(`^(%%\{init: \{"flowchart": \{"nodeSpacing": 18, "rankSpacing": 36\}\}\}%%|flowchart (LR|TB)|  n\d+\["(.*)"\]|  n\d+ --> n\d+|  classDef critical fill:#fde2e1,stroke:#c0392b,stroke-width:2px|  class n\d+(,n\d+)* critical|  linkStyle \d+(,\d+)* stroke:#c0392b,stroke-width:3px)$`)
	mermaidLabel = regexp.MustCompile(`^([A-Za-z0-9 .,:_+/=*'!?@-]|[^\x00-\x7f]|#quot;|#\d+;|<br/>)*$`)
	mermaidCode  = regexp.MustCompile(`#quot;|#\d+;`)
)

// mermaidDecode is what Mermaid shows for a label: its entity codes
// decoded, its line breaks gone.
func mermaidDecode(label string) string {
	label = strings.ReplaceAll(label, "<br/>", " ")
	return mermaidCode.ReplaceAllStringFunc(label, func(c string) string {
		if c == "#quot;" {
			return `"`
		}
		n, _ := strconv.Atoi(c[1 : len(c)-1])
		return string(rune(n))
	})
}

// shownCapped reports whether a label's lines show text as written, or
// its first characters up to the cap (MermaidLabelChars, SVGLabelChars)
// and an ellipsis: at most LabelLines lines, at most chars characters.
func shownCapped(lines []string, text string, chars int) bool {
	got := shown(mermaidDecode(strings.Join(lines, " ")))
	want := shown(text)
	if got == want {
		return len(lines) <= LabelLines
	}
	cut, ok := strings.CutSuffix(got, clip.Ellipsis)
	return ok && cut != "" && strings.HasPrefix(want, cut) && len(lines) <= LabelLines &&
		utf8.RuneCountInString(mermaidDecode(strings.Join(lines, ""))) <= chars+1
}

// Every Mermaid line is one the writer makes; a label holds only plain
// characters, entity codes and the writer's <br/>, and decodes to the
// task's id and title, capped.
func TestMermaidLabelsHoldHostileText(t *testing.T) {
	for _, h := range Hostile {
		p := hostilePlan(t, h)
		m := Mermaid(p.Tasks, p.Analysis)
		lines := strings.Split(strings.TrimSuffix(m, "\n"), "\n")
		labels := 0
		for _, l := range lines {
			sub := mermaidLine.FindStringSubmatch(l)
			if sub == nil {
				t.Errorf("title %q: a line the writer does not make: %q", h, l)
				continue
			}
			if sub[3] == "" {
				continue
			}
			labels++
			if !mermaidLabel.MatchString(sub[3]) {
				t.Errorf("title %q: label %q holds a character Mermaid reads", h, sub[3])
			}
			if labels > len(p.Tasks) {
				continue
			}
			tk := p.Tasks[labels-1]
			rows := strings.Split(sub[3], "<br/>")
			if !shownCapped(rows[:len(rows)-1], tk.ID+" · "+tk.Title, MermaidLabelChars) {
				t.Errorf("title %q: label %q does not show %q capped at %d", h, sub[3], tk.ID+" · "+tk.Title, MermaidLabelChars)
			}
		}
		if labels != len(p.Tasks) {
			t.Errorf("title %q: %d labels for %d tasks", h, labels, len(p.Tasks))
		}
	}
}

// cells splits a GFM table row into its cells as GitHub does: a | ends a
// cell unless a backslash escapes it (a backslash escapes the character
// after it, whatever it is).
func cells(row string) []string {
	var out []string
	var cur strings.Builder
	rs := []rune(strings.TrimSpace(row))
	for i := 1; i < len(rs); i++ { // past the leading |
		switch {
		case rs[i] == '\\' && i+1 < len(rs):
			cur.WriteRune(rs[i])
			cur.WriteRune(rs[i+1])
			i++
		case rs[i] == '|':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteRune(rs[i])
		}
	}
	return out
}

// shape is a Markdown document's block structure: each line's kind, and a
// table row's number of cells.
func shape(doc string) []string {
	var out []string
	fenced := false
	for _, l := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			fenced = !fenced
			out = append(out, "fence")
		case fenced:
			out = append(out, "code")
		case strings.HasPrefix(l, "|"):
			out = append(out, "row "+strconv.Itoa(len(cells(l))))
		case strings.HasPrefix(l, "#"):
			out = append(out, strings.SplitN(l, " ", 2)[0])
		case strings.HasPrefix(l, "- "):
			out = append(out, "item")
		case l == "":
			out = append(out, "blank")
		default:
			out = append(out, "text")
		}
	}
	return out
}

// rawHTML finds a < Markdown would read as a tag: one outside code, not
// escaped by a backslash.
func rawHTML(doc string) string {
	fenced := false
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
		}
		if fenced {
			continue
		}
		l = stripCode(l)
		for i := 0; i < len(l); i++ {
			if l[i] == '\\' {
				i++
				continue
			}
			if l[i] == '<' {
				return l
			}
		}
	}
	return ""
}

// stripCode removes a line's code spans: a run of n backticks to the next
// run of exactly n.
func stripCode(l string) string {
	var out strings.Builder
	for i := 0; i < len(l); {
		if l[i] == '\\' && i+1 < len(l) {
			out.WriteString(l[i : i+2])
			i += 2
			continue
		}
		if l[i] != '`' {
			out.WriteByte(l[i])
			i++
			continue
		}
		n := 0
		for i+n < len(l) && l[i+n] == '`' {
			n++
		}
		fence := strings.Repeat("`", n)
		end := -1
		for j := i + n; j < len(l); {
			k := strings.Index(l[j:], fence)
			if k < 0 {
				break
			}
			k += j
			m := 0
			for k+m < len(l) && l[k+m] == '`' {
				m++
			}
			if m == n {
				end = k
				break
			}
			j = k + m
		}
		if end < 0 {
			out.WriteString(fence)
			i += n
			continue
		}
		i = end + n
	}
	return out.String()
}

// mdUnescape is what Markdown shows for escaped text.
func mdUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// The plan's report keeps its shape whatever the texts say: the same
// headings, list items, table rows with the same number of cells, as the
// report of the same plan with plain texts; no tag outside code; and the
// goal shown as written.
func TestReportKeepsItsShapeWithHostileText(t *testing.T) {
	plain := shape(Report(hostilePlan(t, "plain"), "plan.svg"))
	for _, h := range Hostile {
		doc := Report(hostilePlan(t, h), "plan.svg")
		got := shape(doc)
		if strings.Join(got, "\n") != strings.Join(plain, "\n") {
			lines := strings.Split(doc, "\n")
			for i := range min(len(got), len(plain)) {
				if got[i] != plain[i] {
					t.Errorf("title %q: line %d is %s, with plain text %s: %q", h, i+1, got[i], plain[i], lines[i])
					break
				}
			}
			if len(got) != len(plain) {
				t.Errorf("title %q: %d lines, with plain text %d", h, len(got), len(plain))
			}
		}
		if l := rawHTML(doc); l != "" {
			t.Errorf("title %q: a tag outside code: %q", h, l)
		}
		first := strings.SplitN(doc, "\n", 2)[0]
		if want := "# Plan: " + strings.Map(oneLine, h); mdUnescape(first) != want {
			t.Errorf("title %q: heading %q shows %q", h, first, mdUnescape(first))
		}
	}
}

// A code span in a table cell stays in its cell and shows its text.
func TestMarkdownCodeStaysInItsCell(t *testing.T) {
	for _, s := range append([]string{"total_cost <= 400", "a|b", `a\|b`, `a\\|b`, "`x`", "``"}, Hostile...) {
		row := "| " + MarkdownCode(s) + " | next |"
		if c := cells(row); len(c) != 2 || strings.TrimSpace(c[1]) != "next" {
			t.Errorf("%q: row %q splits into %q", s, row, c)
		}
		if stripCode(row) != "|  | next |" {
			t.Errorf("%q: the code span does not close where it should: %q", s, stripCode(row))
		}
	}
}

// A text that starts a line stays text: its leading block marker, $ (math
// on GitHub) and indentation are escaped or dropped.
func TestMarkdownTextStartingALineStaysText(t *testing.T) {
	for in, want := range map[string]string{
		"- item":       `\- item`,
		"+ item":       `\+ item`,
		"* item":       `\* item`,
		"> quote":      `\> quote`,
		"# h":          `\# h`,
		"1. first":     `1\. first`,
		"12) twelfth":  `12\) twelfth`,
		"---":          `\---`,
		"===":          `\===`,
		"    code":     "code",
		"$x$ and $5":   `\$x\$ and \$5`,
		"a-b 1.5 c+d":  "a-b 1.5 c+d",
		"total_cost 2": "total_cost 2",
	} {
		if got := MarkdownText(in); got != want {
			t.Errorf("MarkdownText(%q) = %q, want %q", in, got, want)
		}
	}
}

// A link's target is percent-encoded: it neither breaks nor turns into
// another link.
func TestMarkdownLinkEncodesItsTarget(t *testing.T) {
	got := MarkdownLink("my plan (v2).svg", "my plan (v2)<b>javascript:x#y.svg")
	want := `[my plan (v2).svg](my%20plan%20%28v2%29%3Cb%3Ejavascript%3Ax%23y.svg)`
	if got != want {
		t.Errorf("MarkdownLink = %q, want %q", got, want)
	}
	if got := MarkdownLink("plan.svg", "out/plan-1_a~.svg"); got != "[plan.svg](out/plan-1_a~.svg)" {
		t.Errorf("a plain target changed: %q", got)
	}
}

// A picture's label is capped in characters and lines, with an ellipsis.
func TestLabelsAreCapped(t *testing.T) {
	for _, s := range []string{strings.Repeat("word ", 100), strings.Repeat("abcdefghijklm ", 30), strings.Repeat("x", 500)} {
		for _, c := range []struct{ chars, width int }{{MermaidLabelChars, 24}, {SVGLabelChars, 44}, {SVGLabelChars, 20}} {
			lines := label(s, c.chars, c.width)
			n := 0
			for _, l := range lines {
				n += utf8.RuneCountInString(l)
				if utf8.RuneCountInString(l) > c.width {
					t.Errorf("%q at %d: line %q is wider", s[:20], c.width, l)
				}
			}
			if len(lines) > LabelLines || n > c.chars+1 || !strings.HasSuffix(lines[len(lines)-1], clip.Ellipsis) {
				t.Errorf("%q at %d/%d: %d lines, %d characters: %q", s[:20], c.chars, c.width, len(lines), n, lines)
			}
		}
	}
	if got := label("short title", MermaidLabelChars, 24); len(got) != 1 || got[0] != "short title" {
		t.Errorf("a short label changed: %q", got)
	}
}

// One hostile goal and title through every writer: the report's goal
// heading and the task's lines stay text (no list, link, math or tag), the
// Gantt link is encoded, the Mermaid label holds no markup and the SVG
// parses.
func TestAHostileTitleStaysTextInEveryWriter(t *testing.T) {
	h := "- [x](javascript:alert(1)) $x$ <b>\n# h"
	p := hostilePlan(t, h)
	doc := Report(p, "my plan (1).svg")
	var text []string // the report outside code spans
	for _, l := range strings.Split(doc, "\n") {
		text = append(text, stripCode(l))
	}
	for _, bad := range []string{"x](javascript", "$x$", "<b>", "\n# h", "\n- [x]", "](my plan"} {
		if strings.Contains(strings.Join(text, "\n"), bad) {
			t.Errorf("the report holds %q", bad)
		}
	}
	for _, want := range []string{`# Plan: \- \[x\](javascript:alert(1)) \$x\$ \<b\> \# h`, "[my plan (1).svg](my%20plan%20%281%29.svg)"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Join(shape(doc), "\n") != strings.Join(shape(Report(hostilePlan(t, "plain"), "my plan (1).svg")), "\n") {
		t.Errorf("the report's shape changed:\n%s", doc)
	}
	m := Mermaid(p.Tasks, p.Analysis)
	for _, bad := range []string{"$x", "<b>", "javascript:alert(1)", "\n# h"} {
		if strings.Contains(m, bad) {
			t.Errorf("the DAG holds %q", bad)
		}
	}
	svg := Gantt(p)
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil || strings.Contains(svg, "<b>") {
		t.Errorf("the SVG: %v", err)
	}
}
