// Package jsx compiles the JSX of an LLM-written Hermitcrab shell into the
// JavaScript that the host page runs as the body of
// new Function('React', 'ReactDOM', 'module', 'exports', 'require', 'props', code)
// and renders as its component.
//
// esbuild does nearly all of §10.1's preparation: its Transform parses the
// source as JSX (its syntax errors are positions in the source as the LLM
// wrote it, so they go back to the LLM as they are) and, with the CommonJS
// output format, rewrites every import into a require and every export
// onto module.exports. What esbuild cannot do is done on its output, plain
// JavaScript with no JSX text and no comments (prepare.go): a source that
// hands over no component gets one, a bare top-level return is kept (or
// made export default beside imports), and props is a parameter of the
// page's function. A Markdown code fence around the whole source is blanked
// first, keeping line numbers. See docs/hermitcrab.md#the-shells-jsx.
package jsx

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/evanw/esbuild/pkg/api"
)

// Result is a compiled shell.
type Result struct {
	// Code is the JavaScript for
	// new Function('React', 'ReactDOM', 'module', 'exports', 'require', 'props', code);
	// the component is module.exports.default, module.exports itself, or
	// what the function returns.
	Code string `json:"code"`
	// Component is the name of the component, "" when it is anonymous.
	Component string `json:"component"`
	// Warnings are esbuild's warnings (positioned in the source) and the
	// imports of modules the page does not have.
	Warnings []Problem `json:"warnings,omitempty"`
}

// Problem is one message about the source. Line and Column are 1-based,
// Column counted in characters; both are 0 when the problem has no position.
type Problem struct {
	Line     int       `json:"line,omitempty"`
	Column   int       `json:"column,omitempty"`
	Text     string    `json:"text"`
	LineText string    `json:"line_text,omitempty"`
	Notes    []Problem `json:"notes,omitempty"`
}

// String gives the problem as "line L, column C: text" followed by the
// source line and a caret under the column, then its notes.
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d, column %d: ", p.Line, p.Column)
	}
	b.WriteString(p.Text)
	if p.LineText != "" {
		b.WriteString("\n    ")
		b.WriteString(p.LineText)
		b.WriteString("\n    ")
		b.WriteString(caretIndent(p.LineText, p.Column))
		b.WriteString("^")
	}
	for _, n := range p.Notes {
		b.WriteString("\n  note: ")
		if n.Line > 0 {
			fmt.Fprintf(&b, "line %d, column %d: ", n.Line, n.Column)
		}
		b.WriteString(n.Text)
	}
	return b.String()
}

// caretIndent is the whitespace that puts a caret under 1-based column col of
// line, keeping tabs so the caret lines up however tabs are shown.
func caretIndent(line string, col int) string {
	var b strings.Builder
	for i, r := range []rune(line) {
		if i >= col-1 {
			break
		}
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// Error is what is wrong with a shell source: its problems, in source order.
type Error struct {
	Problems []Problem `json:"problems"`
}

func (e *Error) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return strings.Join(parts, "\n")
}

// errorf is an *Error with one problem that has no position.
func errorf(format string, args ...any) *Error {
	return &Error{Problems: []Problem{{Text: fmt.Sprintf(format, args...)}}}
}

// Compile turns a shell's JSX source into the code the page evaluates. Every
// error it returns is an *Error about the source, meant for the LLM that
// wrote it: a syntax error gives line and column in that source.
func Compile(source string) (Result, error) {
	src := blankFences(source)
	if strings.TrimSpace(src) == "" {
		return Result{}, errorf("the shell source is empty: send the JSX of a React component, " +
			"e.g. function App(props) { return <div>…</div> } export default App;")
	}
	out := transform(src)
	if lines, ok := topLevelReturns(out.Errors); ok {
		out = transform(returnAsExport(src, lines))
	}
	if len(out.Errors) > 0 {
		return Result{}, &Error{Problems: problems(out.Errors)}
	}
	code, component, unknown, err := prepare(string(out.Code))
	if err != nil {
		return Result{}, err
	}
	return Result{Code: "{\n" + code + "}\n", Component: component, Warnings: append(problems(out.Warnings), unknown...)}, nil
}

func transform(src string) api.TransformResult {
	return api.Transform(src, api.TransformOptions{
		Loader:         api.LoaderJSX,
		Target:         api.ES2020,
		Format:         api.FormatCommonJS,
		JSX:            api.JSXTransform,
		JSXFactory:     "React.createElement",
		JSXFragment:    "React.Fragment",
		JSXSideEffects: true, // no /* @__PURE__ */ annotations: nothing tree-shakes this code
		Sourcefile:     "shell.jsx",
	})
}

// topLevelReturn is esbuild's error for a top-level return in a source that
// also imports or exports.
const topLevelReturn = "Top-level return cannot be used inside an ECMAScript module"

// topLevelReturns tells whether every error is a top-level return in a
// module, and where each is.
func topLevelReturns(errs []api.Message) ([]api.Location, bool) {
	var at []api.Location
	for _, e := range errs {
		if e.Text != topLevelReturn || e.Location == nil {
			return nil, false
		}
		at = append(at, *e.Location)
	}
	return at, len(at) > 0
}

// returnAsExport turns the top-level returns at these places into export
// default. (Only the rest of the same line moves, by eight columns.)
func returnAsExport(src string, at []api.Location) string {
	lines := strings.Split(src, "\n")
	for i := len(at) - 1; i >= 0; i-- {
		l := at[i]
		if l.Line < 1 || l.Line > len(lines) || l.Column < 0 || l.Column > len(lines[l.Line-1]) {
			continue
		}
		if line := lines[l.Line-1]; strings.HasPrefix(line[l.Column:], "return") {
			lines[l.Line-1] = line[:l.Column] + "export default" + line[l.Column+len("return"):]
		}
	}
	return strings.Join(lines, "\n")
}

// blankFences empties a Markdown fence line (```jsx) that opens the source
// and the ``` line that closes it, keeping every other line where it was.
func blankFences(src string) string {
	lines := strings.Split(src, "\n")
	first, last := -1, -1
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 || !strings.HasPrefix(strings.TrimSpace(lines[first]), "```") {
		return src
	}
	lines[first] = ""
	if first != last && strings.TrimSpace(lines[last]) == "```" {
		lines[last] = ""
	}
	return strings.Join(lines, "\n")
}

// problems converts esbuild messages, whose columns are 0-based byte
// offsets, to problems with 1-based character columns.
func problems(msgs []api.Message) []Problem {
	var ps []Problem
	for _, m := range msgs {
		p := problem(m.Text, m.Location)
		for _, n := range m.Notes {
			p.Notes = append(p.Notes, problem(n.Text, n.Location))
		}
		ps = append(ps, p)
	}
	return ps
}

func problem(text string, loc *api.Location) Problem {
	p := Problem{Text: text}
	if loc == nil {
		return p
	}
	col := min(max(loc.Column, 0), len(loc.LineText))
	p.Line = loc.Line
	p.Column = utf8.RuneCountInString(loc.LineText[:col]) + 1
	p.LineText = loc.LineText
	return p
}
