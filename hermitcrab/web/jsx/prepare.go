package jsx

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// globals are the modules the page's require gives, by the parameter that
// holds them; any other module is an empty object.
var globals = map[string]string{"react": "React", "react-dom": "ReactDOM", "react-dom/client": "ReactDOM"}

// code is esbuild's CommonJS output with its tokens.
type code struct {
	src  string
	toks []token
}

// anonymousDefault is the name esbuild gives an anonymous default export
// (the source file's name, "shell.jsx", then "_default").
const anonymousDefault = "shell_default"

// exported is how the code hands over its component, as esbuild left it.
type exported struct {
	found bool
	name  string // the component's name, "" when anonymous
}

// decl is a top-level declaration of a capitalised name: a function, an
// arrow or function expression assigned with const/let/var, or a class.
type decl struct {
	name       string
	nameTok    int // index of the name token
	first, end int // token range of the declaration, end exclusive
}

// prepare reads esbuild's CommonJS output for what esbuild cannot settle:
// whether the source hands over a component at all (a default export, an
// assignment to module.exports, or a top-level return), which component to
// take when it does not, and which modules it requires. It returns the
// code to run, with module.exports.default = Name; appended when a
// component had to be chosen, the component's name, and a warning for each
// module the page does not have.
func prepare(src string) (string, string, []Problem, error) {
	c := &code{src: src, toks: lex(src)}
	var warnings []Problem
	for _, m := range c.requires() {
		if _, ok := globals[m]; !ok {
			warnings = append(warnings, Problem{Text: fmt.Sprintf("import from %q: a shell has only React and ReactDOM, so it is an empty object here "+
				"(React's hooks as React.useState or const { useState } = React); define anything else in the shell itself", m)})
		}
	}
	if e := c.export(); e.found {
		return src, e.name, warnings, nil
	}
	var decls []decl
	for i := range c.toks {
		if c.toks[i].depth == 0 && c.statementStart(i) {
			if d, ok := c.declaration(i); ok {
				decls = append(decls, d)
			}
		}
	}
	d, ok := chooseComponent(c, decls)
	if !ok {
		return "", "", nil, errorf("no component found: the shell needs a React function component, " +
			"e.g. function App(props) { return <div>…</div> } export default App;")
	}
	var b strings.Builder
	b.WriteString(src)
	if !strings.HasSuffix(src, "\n") {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "module.exports.default = %s;\n", d.name)
	return b.String(), d.name, warnings, nil
}

func (c *code) text(i int) string { return c.src[c.toks[i].start:c.toks[i].end] }

// is tells whether token i exists and reads want (a string's quotes included).
func (c *code) is(i int, want string) bool { return i >= 0 && i < len(c.toks) && c.text(i) == want }

// isIdent tells whether token i is an identifier.
func (c *code) isIdent(i int) bool { return i >= 0 && i < len(c.toks) && c.toks[i].kind == identTok }

// statementStart tells whether token i can begin a statement: it is first,
// or follows a semicolon or a closing brace.
func (c *code) statementStart(i int) bool { return i == 0 || c.is(i-1, ";") || c.is(i-1, "}") }

// match is the index of the bracket that closes the one at i, or the last
// token when it is not closed.
func (c *code) match(i int) int {
	closer := map[string]string{"(": ")", "[": "]", "{": "}"}[c.text(i)]
	for j := i + 1; j < len(c.toks); j++ {
		if c.toks[j].depth == c.toks[i].depth && c.text(j) == closer {
			return j
		}
	}
	return len(c.toks) - 1
}

// statementEnd is the index of the semicolon ending the top-level statement
// that contains token i, or the last token (esbuild ends each with one).
func (c *code) statementEnd(i int) int {
	for j := i; j < len(c.toks); j++ {
		if c.toks[j].depth == 0 && c.text(j) == ";" {
			return j
		}
	}
	return len(c.toks) - 1
}

// requires lists the modules the code requires: esbuild's rewrite of each
// import, and any require the source wrote itself.
func (c *code) requires() []string {
	var mods []string
	for i := range c.toks {
		if c.is(i, "require") && !c.is(i-1, ".") && c.is(i+1, "(") && i+3 < len(c.toks) && c.toks[i+2].kind == stringTok && c.is(i+3, ")") {
			mods = append(mods, unquote(c.text(i+2)))
		}
	}
	return mods
}

// unquote strips the quotes of a string token; other text stays as it is.
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// export finds how the code hands over its component: a default export
// (esbuild writes __export(shell_exports, { …, default: () => Name })),
// an assignment to module.exports or module.exports.default, or a
// top-level return (the new Function the page runs returns it).
func (c *code) export() exported {
	for i := range c.toks {
		if c.toks[i].depth != 0 {
			continue
		}
		switch {
		case c.is(i, "__export") && c.is(i+1, "(") && c.statementStart(i):
			for j := i + 2; j < c.match(i+1); j++ {
				if c.toks[j].depth == 2 && c.is(j, "default") && c.is(j+1, ":") {
					name := ""
					if c.is(j+2, "(") && c.is(j+3, ")") && c.is(j+4, "=>") && c.isIdent(j+5) {
						name = c.text(j + 5)
					}
					if name == anonymousDefault {
						name = c.defaultValue()
					}
					return exported{found: true, name: name}
				}
			}
		case c.is(i, "module") && c.is(i+1, ".") && c.is(i+2, "exports") && c.statementStart(i):
			v := i + 4
			switch {
			case c.is(i+3, "=") && !c.is(v, "__toCommonJS"):
			case c.is(i+3, ".") && c.is(i+4, "default") && c.is(i+5, "="):
				v = i + 6
			default:
				continue
			}
			return exported{found: true, name: c.valueName(v)}
		case c.is(i, "return") && c.statementStart(i):
			v := i + 1
			if c.is(v, "async") {
				v++
			}
			if c.is(v, "function") || c.is(v, "class") {
				if c.isIdent(v+1) && !c.is(v+1, "extends") {
					return exported{found: true, name: c.text(v + 1)}
				}
				return exported{found: true}
			}
			return exported{found: true, name: c.valueName(v)}
		}
	}
	return exported{}
}

// defaultValue is the name esbuild's anonymous default stands for, as in
// var shell_default = App; (from export { App as default }), or "".
func (c *code) defaultValue() string {
	for i := range c.toks {
		if c.toks[i].depth == 0 && c.is(i, "var") && c.is(i+1, anonymousDefault) && c.is(i+2, "=") {
			return c.valueName(i + 3)
		}
	}
	return ""
}

// valueName is the name a statement's value at v hands over: an identifier
// followed by the statement's end, else "".
func (c *code) valueName(v int) string {
	if c.isIdent(v) && (c.is(v+1, ";") || v+1 == len(c.toks)) {
		return c.text(v)
	}
	return ""
}

// declaration reads a top-level declaration of a capitalised name at token i.
func (c *code) declaration(i int) (decl, bool) {
	v := i
	if c.is(v, "async") {
		v++
	}
	switch {
	case c.is(v, "function"):
		name := v + 1
		if c.is(name, "*") {
			name++
		}
		return c.newDecl(name, i, c.bodyEnd(v)+1)
	case c.is(i, "class"):
		return c.newDecl(i+1, i, c.bodyEnd(i)+1)
	case c.is(i, "const") || c.is(i, "let") || c.is(i, "var"):
		if !c.is(i+2, "=") {
			return decl{}, false
		}
		if c.is(i+3, "class") || c.function(i+3) {
			return c.newDecl(i+1, i, c.statementEnd(i)+1)
		}
	}
	return decl{}, false
}

// function tells whether the expression at v is a function or an arrow.
func (c *code) function(v int) bool {
	if c.is(v, "async") && (c.is(v+1, "function") || c.is(v+1, "(") || c.isIdent(v+1) && c.is(v+2, "=>")) {
		v++
	}
	switch {
	case c.is(v, "function"):
		return true
	case c.is(v, "("):
		return c.is(c.match(v)+1, "=>")
	}
	return c.isIdent(v) && c.is(v+1, "=>")
}

// bodyEnd is the index of the '}' that ends the function or class whose
// keyword is at v (the first '{' at its depth after it).
func (c *code) bodyEnd(v int) int {
	for j := v; j < len(c.toks); j++ {
		if c.toks[j].depth == c.toks[v].depth && c.is(j, "{") {
			return c.match(j)
		}
	}
	return len(c.toks) - 1
}

func (c *code) newDecl(name, first, end int) (decl, bool) {
	if !c.isIdent(name) || !componentName(c.text(name)) {
		return decl{}, false
	}
	return decl{name: c.text(name), nameTok: name, first: first, end: end}, true
}

// componentName tells whether name reads like a component: a capital first
// letter and a lower-case letter somewhere (App, ChatPanel; not API_URL).
func componentName(name string) bool {
	r, _ := utf8.DecodeRuneInString(name)
	return unicode.IsUpper(r) && strings.ContainsFunc(name, unicode.IsLower)
}

// chooseComponent picks the component when nothing is exported: a
// declaration that no other declaration uses (the root of the tree), the last
// such one, or the last declaration when each is used by another.
func chooseComponent(c *code, decls []decl) (decl, bool) {
	if len(decls) == 0 {
		return decl{}, false
	}
	for k := len(decls) - 1; k >= 0; k-- {
		if !usedByOther(c, decls, k) {
			return decls[k], true
		}
	}
	return decls[len(decls)-1], true
}

// usedByOther tells whether decls[k]'s name appears inside another declaration.
func usedByOther(c *code, decls []decl, k int) bool {
	name := decls[k].name
	for o, d := range decls {
		if o == k {
			continue
		}
		for j := d.first; j < d.end && j < len(c.toks); j++ {
			if j != d.nameTok && c.isIdent(j) && c.text(j) == name && !c.is(j-1, ".") {
				return true
			}
		}
	}
	return false
}
