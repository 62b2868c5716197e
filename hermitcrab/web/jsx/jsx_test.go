package jsx_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/llmkernels/kernels/hermitcrab/web/jsx"
)

// requireFunctionBody fails unless code parses as the body of
// new Function('React', 'ReactDOM', 'module', 'exports', 'require', 'props', code):
// no import or export is left, and the preparation broke no syntax.
func requireFunctionBody(t *testing.T, code string) {
	t.Helper()
	wrapped := "(function (React, ReactDOM, module, exports, require, props) {\n" + code + "\n});\n"
	out := api.Transform(wrapped, api.TransformOptions{Loader: api.LoaderJS})
	for _, m := range out.Errors {
		t.Errorf("compiled code is not a valid function body: line %d: %s\n%s", m.Location.Line-1, m.Text, code)
	}
}

func compile(t *testing.T, source string) jsx.Result {
	t.Helper()
	res, err := jsx.Compile(source)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	requireFunctionBody(t, res.Code)
	return res
}

// How a compiled shell hands over its component.
const (
	byExport   = "default: () =>"           // esbuild's default export
	byChoice   = "module.exports.default =" // chosen by the kernel and appended
	byReturn   = "return "                  // a top-level return
	byAssigned = "module.exports = "        // the source's own CommonJS
)

func TestCompileRealisticShells(t *testing.T) {
	cases := []struct {
		file, component, how string
		contains             []string
	}{
		{"hooks_export_default_function.jsx", "App", byExport, []string{
			"const { useState, useEffect, useRef } = React;", "function Bubble({ role, text }) {",
			`"I'm awake. Don't worry if I'm slow: "`, "props.callLLM(next)"}},
		{"arrow_no_export.jsx", "Shell", byChoice, []string{
			"React.createElement(React.Fragment, null", "export default Nope\nimport Nothing from 'nowhere'`;", // template text stays as written
			"import your own blocks here, then export default them"}},
		{"import_and_export_name.jsx", "App", byExport, []string{`require("react")`, `require("react-dom")`, "(0, import_react.useState)", "import_react.default.createElement("}},
		{"export_default_arrow_fragment.jsx", "", byExport, []string{"React.createElement(React.Fragment, null, React.createElement(\"p\""}},
		{"class_component.jsx", "Shell", byExport, []string{"class Shell extends React.Component {", "this.props.version"}},
		{"fenced.jsx", "App", byChoice, []string{"function App() {"}},
		{"shell200.jsx", "App", byChoice, []string{"function Chat({ callLLM, conversation, onStatus }) {", "function StatusBar({ text, started }) {"}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			res := compile(t, string(src))
			if res.Component != tc.component {
				t.Errorf("component = %q, want %q", res.Component, tc.component)
			}
			if !strings.Contains(res.Code, tc.how) || strings.Contains(res.Code, "```") {
				t.Errorf("the component is not handed over by %q:\n%s", tc.how, res.Code)
			}
			for _, s := range append(tc.contains, ".createElement(") {
				if !strings.Contains(res.Code, s) {
					t.Errorf("code lacks %q:\n%s", s, res.Code)
				}
			}
			if len(res.Warnings) != 0 {
				t.Errorf("warnings: %v", res.Warnings)
			}
		})
	}
}

func TestCompileHandsOverTheComponentEveryWayTheLLMWritesIt(t *testing.T) {
	cases := []struct{ name, src, component, how string }{
		{"anonymous default function", "export default function () { return <p>{props.model}</p> }\n[1].forEach(console.log);\n", "", byExport},
		{"export as default", "const App = () => <div>{props.version}</div>;\nexport { App as default };\n", "App", byExport},
		{"module.exports = X", "function App() { return <div/> }\nmodule.exports = App;\n", "App", byAssigned},
		{"module.exports.default = X", "function App() { return <div/> }\nmodule.exports.default = App;\n", "App", byChoice},
		{"named exports only: the root is chosen", "export const Panel = ({ children }) => <section>{children}</section>;\nexport function App() { return <Panel>hi</Panel> }\n", "App", byChoice},
		{"default async function", "export default async function App() { return null }\n", "App", byExport},
		{"default expression", "function App() { return <div/> }\nexport default React.memo(App);\n", "", byExport},
		{"a bare return, as if inside a wrapper", "return function Shell(props) { return <p>{props.model}</p> }\n", "Shell", byReturn},
		{"a bare return of a name", "function Shell() { return <p/> }\nreturn Shell;\n", "Shell", byReturn},
		{"a bare return beside an import", "import { useState } from 'react';\nreturn function Shell() { const [n] = useState(1); return <p>{n}</p> }\n", "Shell", byExport},
		{"the source declares props itself", "const props = { a: 1 };\nfunction App() { return <p>{props.a}</p> }\n", "App", byChoice},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := compile(t, tc.src)
			if res.Component != tc.component || !strings.Contains(res.Code, tc.how) {
				t.Errorf("component %q (want %q), handed over by %q?\n%s", res.Component, tc.component, tc.how, res.Code)
			}
			if n := strings.Count(res.Code, byChoice); n > 1 {
				t.Errorf("module.exports.default assigned %d times:\n%s", n, res.Code)
			}
		})
	}
}

func TestCompileWarnsOfModulesThePageDoesNotHave(t *testing.T) {
	src := `import * as R from 'react';
import ReactDOM, { flushSync } from 'react-dom/client';
import { Camera } from 'lucide-react';
import './styles.css';
export default function App() { return <R.Fragment><Camera /></R.Fragment> }
`
	res := compile(t, src)
	if len(res.Warnings) != 2 || !strings.Contains(res.Warnings[0].Text, `"lucide-react"`) ||
		!strings.Contains(res.Warnings[1].Text, `"./styles.css"`) || !strings.Contains(res.Warnings[0].Text, "empty object") {
		t.Errorf("warnings = %+v, want one for lucide-react and one for ./styles.css", res.Warnings)
	}
}

func TestCompileChoosesRootComponentWhenNothingIsExported(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"root first", "function App() { return <Header/> }\nfunction Header() { return <h1>hi</h1> }\n", "App"},
		{"root last", "function Header() { return <h1>hi</h1> }\nconst Main = () => <Header/>;\n", "Main"},
		{"a top-level render call does not count as a use",
			"function App() { return <Header/> }\nfunction Header() { return <h1/> }\nReactDOM.createRoot(document.getElementById('root')).render(<App />);\n", "App"},
		{"constants are not components", "function Page() { return <p>{API_URL}</p> }\nconst API_URL = 'x';\nconst TABS = ['a'];\n", "Page"},
		{"recursion is not a use by another", "function Tree({ n }) { return n ? <Tree n={n - 1} /> : null }\n", "Tree"},
		{"an import does not hide the choice", "import { useState } from 'react';\nfunction Counter() { const [n] = useState(0); return <p>{n}</p> }\n", "Counter"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := compile(t, tc.src)
			if res.Component != tc.want {
				t.Errorf("component = %q, want %q:\n%s", res.Component, tc.want, res.Code)
			}
			if !strings.HasSuffix(res.Code, "module.exports.default = "+tc.want+";\n}\n") {
				t.Errorf("code does not end by exporting %s:\n%s", tc.want, res.Code)
			}
		})
	}
}

func TestCompileIsNotMisledByLiterals(t *testing.T) {
	src := "const re = /[\"'`]/g;\n" +
		"const half = (a, b) => a / b / 2;\n" +
		"const s = `${ { a: '}' }.a } export default Fake; ${`nested ${1}`}`;\n" +
		"const note = \"export default Wrong\";\n" +
		"// export default Comment\n" +
		"export default function App() { return <div title=\"import x from 'y'\">{s}{note}{re.source}{half(4, 2)}</div> }\n"
	res := compile(t, src)
	if res.Component != "App" {
		t.Errorf("component = %q, want App:\n%s", res.Component, res.Code)
	}
	for _, s := range []string{"export default Fake;", `"export default Wrong"`, `/["'` + "`" + `]/g`} {
		if !strings.Contains(res.Code, s) {
			t.Errorf("code lacks %q:\n%s", s, res.Code)
		}
	}
}

// A regular expression right after the ')' of an if, while or for head
// (a statement starts there, not a division) holding a brace or a quote,
// or the words return and export: the component is still found.
func TestCompileReadsARegexAfterAStatementsHead(t *testing.T) {
	for _, src := range []string{
		"function check(s) { if (s) /{/.test(s); return 1; }\nfunction App() { return <p>{check('a')}</p>; }",
		"const t = 1;\nif (t) /'/.test(\"'\");\nfunction App() { return <p>ok</p>; }",
		"let n = 0;\nwhile (n++ < 2) /return function Nope() {/.test('');\nfunction App() { return <p>{n}</p>; }",
		"for (const c of 'ab') /export default Nope; }/.exec(c);\nconst App = () => <p>ok</p>;",
		"const o = { if(x) { return x; } };\nconst half = o.if(4) / 2 / 1;\nfunction App() { return <p>{half}</p>; }",
	} {
		if res := compile(t, src); res.Component != "App" {
			t.Errorf("component = %q, want App:\n%s", res.Component, src)
		}
	}
}

func TestCompileRejectsEmptySource(t *testing.T) {
	for _, src := range []string{"", "  \n\t\n", "```jsx\n\n```\n"} {
		_, err := jsx.Compile(src)
		var e *jsx.Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), "the shell source is empty") {
			t.Errorf("Compile(%q) error = %v, want a *jsx.Error saying the source is empty", src, err)
		}
	}
}

func TestCompileRejectsSourceWithoutComponent(t *testing.T) {
	for _, src := range []string{"const x = 1;", "function helper() { return 1 }", "const API_URL = 'x';", "const { useState } = React;"} {
		_, err := jsx.Compile(src)
		var e *jsx.Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), "no component found") {
			t.Errorf("Compile(%q) error = %v, want a *jsx.Error saying no component was found", src, err)
		}
	}
}

func TestCompileErrorGivesLineAndColumnInTheSource(t *testing.T) {
	cases := []struct {
		name       string
		src        string
		line, col  int
		text       string
		noteLine   int
		noteColumn int
	}{
		{"unbalanced brace", "function App() {\n  const x = 1;\n  return (<div>{x)</div>);\n}\n", 3, 18, `Expected "}" but found ")"`, 0, 0},
		{"after a fence and an import line", "```jsx\nimport React from 'react';\n\nexport default function App() {\n  return <div>{x)</div>;\n}\n```\n", 5, 17, `Expected "}" but found ")"`, 0, 0},
		{"columns count characters, not bytes", "function App() {\n  return (\n    <div>\n      <span>hé x</div>\n  );\n}\n", 4, 19,
			`Unexpected closing "div" tag does not match opening "span" tag`, 4, 8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := jsx.Compile(tc.src)
			var e *jsx.Error
			if !errors.As(err, &e) {
				t.Fatalf("error = %v, want a *jsx.Error", err)
			}
			p := e.Problems[0]
			lines := strings.Split(tc.src, "\n")
			if p.Line != tc.line || p.Column != tc.col || p.Text != tc.text || p.LineText != lines[tc.line-1] {
				t.Errorf("problem = %+v, want line %d column %d %q on %q", p, tc.line, tc.col, tc.text, lines[tc.line-1])
			}
			if tc.noteLine != 0 && (len(p.Notes) == 0 || p.Notes[0].Line != tc.noteLine || p.Notes[0].Column != tc.noteColumn) {
				t.Errorf("notes = %+v, want one at line %d column %d", p.Notes, tc.noteLine, tc.noteColumn)
			}
			want := fmt.Sprintf("line %d, column %d: %s\n    %s\n    %s^", tc.line, tc.col, tc.text, lines[tc.line-1], strings.Repeat(" ", tc.col-1))
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("message =\n%s\nwant it to start with\n%s", err, want)
			}
		})
	}
}

func TestProblemCaretKeepsTabs(t *testing.T) {
	p := jsx.Problem{Line: 1, Column: 3, Text: "bad", LineText: "\tab"}
	if got, want := p.String(), "line 1, column 3: bad\n    \tab\n    \t ^"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestCompileKeepsEsbuildWarningsWithPositions(t *testing.T) {
	res := compile(t, "const o = { a: 1, a: 2 };\nexport default function App() { return <div>{o.a}</div> }\n")
	if len(res.Warnings) != 1 || res.Warnings[0].Line != 1 || !strings.Contains(res.Warnings[0].Text, `Duplicate key "a"`) {
		t.Errorf("warnings = %+v, want the duplicate key on line 1", res.Warnings)
	}
}

func BenchmarkCompile200LineShell(b *testing.B) {
	src, err := os.ReadFile(filepath.Join("testdata", "shell200.jsx"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jsx.Compile(string(src)); err != nil {
			b.Fatal(err)
		}
	}
}
