// Package jsx compiles the JSX of an LLM-written Hermitcrab shell into the
// JavaScript that the host page evaluates with
// new Function('React', 'ReactDOM', 'module', 'exports', code) and renders as
// module.exports.default.
//
// Compile does §10.1 of the G1 architecture (prepareJSX, then the JSX
// transform) in the other order. First esbuild's Transform parses the source
// as an ES module with JSX and turns the JSX into React.createElement and
// React.Fragment calls (target ES2020, not minified); its syntax errors are
// positions in the source as the LLM wrote it, so they go back to the LLM as
// they are. Then the preparation works on esbuild's output, plain JavaScript
// with no JSX text and no comments, so "Don't", "import" or "export default"
// inside JSX text, a string or a template literal cannot mislead it:
//
//   - Imports are removed. Names imported from react become
//     const { useState, … } = React; names imported from react-dom or
//     react-dom/client are read from ReactDOM (the page's ReactDOM has both);
//     an import of anything else is dropped with a warning.
//   - The default export (export default function X, export default X,
//     export default <expression>, export { X as default }, or
//     module.exports = X) becomes module.exports.default = …; other export
//     keywords are removed. A named default function or class stays a
//     declaration and module.exports.default = X; is appended.
//   - Without a default export, the component is the top-level function,
//     arrow or class with a capitalised name that no other such component
//     uses (the last one if several qualify), and
//     module.exports.default = Name; is appended.
//   - The component, when it is a function or arrow without parameters, gets
//     a props parameter (unless its body declares props itself).
//
// A Markdown code fence around the whole source (```jsx … ```) is blanked
// first, keeping line numbers.
package jsx

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/evanw/esbuild/pkg/api"
)

// Result is a compiled shell.
type Result struct {
	// Code is the JavaScript for new Function('React', 'ReactDOM', 'module', 'exports', code);
	// it sets module.exports.default to the component.
	Code string `json:"code"`
	// Component is the name of the component, "" when it is anonymous.
	Component string `json:"component"`
	// Warnings are esbuild's warnings (positioned in the source) and the
	// imports that were dropped.
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
	out := api.Transform(src, api.TransformOptions{
		Loader:         api.LoaderJSX,
		Target:         api.ES2020,
		JSX:            api.JSXTransform,
		JSXFactory:     "React.createElement",
		JSXFragment:    "React.Fragment",
		JSXSideEffects: true, // no /* @__PURE__ */ annotations: nothing tree-shakes this code
		Sourcefile:     "shell.jsx",
	})
	if len(out.Errors) > 0 {
		return Result{}, &Error{Problems: problems(out.Errors)}
	}
	code, component, dropped, err := prepare(string(out.Code))
	if err != nil {
		return Result{}, err
	}
	return Result{Code: code, Component: component, Warnings: append(problems(out.Warnings), dropped...)}, nil
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
