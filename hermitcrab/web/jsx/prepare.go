package jsx

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// globals are the modules the page provides, by the parameter that holds them.
var globals = map[string]string{"react": "React", "react-dom": "ReactDOM", "react-dom/client": "ReactDOM"}

// code is esbuild's output with its tokens and the edits the preparation makes.
type code struct {
	src   string
	toks  []token
	edits []edit
}

// edit replaces src[start:end] with text.
type edit struct {
	start, end int
	text       string
}

// decl is a top-level declaration of a capitalised name: a function, an
// arrow or function expression assigned with const/let/var, or a class.
type decl struct {
	name       string
	nameTok    int // index of the name token
	first, end int // token range of the declaration, end exclusive
	params     int // index of the '(' of an empty-or-not parameter list; -1 for a class or x => …
}

// defaultExport is what the source exports as default.
type defaultExport struct {
	found  bool
	name   string // the exported identifier; "" for an expression or an anonymous function or class
	params int    // index of the '(' of an anonymous function's parameters, or -1
	append bool   // a named declaration stayed in place: append module.exports.default = name;
}

// prepare rewrites esbuild's output for new Function: see the package doc.
// It returns the code, the component's name and a warning for each import
// it dropped.
func prepare(src string) (string, string, []Problem, error) {
	c := &code{src: src, toks: lex(src)}
	var dropped []Problem
	var decls []decl
	def := defaultExport{params: -1}
	for i := 0; i < len(c.toks); i++ {
		if c.toks[i].depth != 0 || !c.statementStart(i) {
			continue
		}
		switch c.text(i) {
		case "import":
			if c.is(i+1, "(") || c.is(i+1, ".") {
				continue
			}
			end, warning := c.importDecl(i)
			if warning != "" {
				dropped = append(dropped, Problem{Text: warning})
			}
			i = end
		case "export":
			i = c.exportDecl(i, &def)
		case "module":
			if !def.found {
				i = c.moduleExports(i, &def)
			}
		}
	}
	for i := range c.toks {
		if c.declarationStart(i) {
			if d, ok := c.declaration(i); ok {
				decls = append(decls, d)
			}
		}
	}

	component := def.name
	params := def.params
	switch {
	case def.found && def.name != "":
		for _, d := range decls {
			if d.name == def.name {
				params = d.params
			}
		}
	case !def.found:
		d, ok := chooseComponent(c, decls)
		if !ok {
			return "", "", nil, errorf("no component found: the shell needs a React function component, " +
				"e.g. function App(props) { return <div>…</div> } export default App;")
		}
		component, params, def.append = d.name, d.params, true
	}
	c.ensureProps(params)

	var b strings.Builder
	b.WriteString(c.apply())
	if def.append {
		if !strings.HasSuffix(src, "\n") {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "module.exports.default = %s;\n", component)
	}
	return b.String(), component, dropped, nil
}

func (c *code) text(i int) string { return c.src[c.toks[i].start:c.toks[i].end] }

// is tells whether token i exists and reads want (a string's quotes included).
func (c *code) is(i int, want string) bool { return i >= 0 && i < len(c.toks) && c.text(i) == want }

// isIdent tells whether token i is an identifier.
func (c *code) isIdent(i int) bool { return i >= 0 && i < len(c.toks) && c.toks[i].kind == identTok }

// statementStart tells whether token i can begin a statement: it is first,
// or follows a semicolon or a closing brace.
func (c *code) statementStart(i int) bool { return i == 0 || c.is(i-1, ";") || c.is(i-1, "}") }

// declarationStart tells whether top-level token i can begin a declaration:
// at a statement's start or after "export" or "export default".
func (c *code) declarationStart(i int) bool {
	return c.toks[i].depth == 0 && (c.statementStart(i) || c.is(i-1, "export") ||
		c.is(i-1, "default") && c.is(i-2, "export"))
}

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

// replace replaces tokens first..last (inclusive) with text.
func (c *code) replace(first, last int, text string) {
	c.edits = append(c.edits, edit{c.toks[first].start, c.toks[last].end, text})
}

// rewrite replaces tokens first..last-1 and the space after them with text.
func (c *code) rewrite(first, last int, text string) {
	c.edits = append(c.edits, edit{c.toks[first].start, c.toks[last].start, text})
}

func (c *code) apply() string {
	sort.SliceStable(c.edits, func(a, b int) bool { return c.edits[a].start < c.edits[b].start })
	var b strings.Builder
	at := 0
	for _, e := range c.edits {
		b.WriteString(c.src[at:e.start])
		b.WriteString(e.text)
		at = e.end
	}
	b.WriteString(c.src[at:])
	return b.String()
}

// importDecl replaces the import at token i with const bindings read from
// React or ReactDOM, or with nothing. It returns the index of the import's
// last token and a warning when the import was dropped.
func (c *code) importDecl(i int) (int, string) {
	end := c.statementEnd(i)
	var bindings []string
	var specs []string
	module := ""
	for j := i + 1; j <= end; j++ {
		switch {
		case c.toks[j].kind == stringTok:
			module = unquote(c.text(j))
		case c.is(j, "*") && c.is(j+1, "as"):
			bindings = append(bindings, c.text(j+2))
			j += 2
		case c.is(j, "{"):
			close := c.match(j)
			for k := j + 1; k < close; k++ {
				if c.is(k, ",") {
					continue
				}
				imported, local := unquote(c.text(k)), c.text(k)
				if c.is(k+1, "as") {
					local = c.text(k + 2)
					k += 2
				}
				switch {
				case imported == "default":
					bindings = append(bindings, local)
				case imported == local:
					specs = append(specs, local)
				default:
					specs = append(specs, imported+": "+local)
				}
			}
			j = close
		case c.isIdent(j) && !c.is(j, "from") && !c.is(j, "with") && !c.is(j, "assert"):
			bindings = append(bindings, c.text(j)) // the default import
		}
	}
	global, ok := globals[module]
	if !ok {
		c.replace(i, end, "")
		return end, fmt.Sprintf("import from %q removed: a shell has only React and ReactDOM "+
			"(React's hooks as React.useState or const { useState } = React); define anything else in the shell itself", module)
	}
	var out []string
	for _, b := range bindings {
		if b != global {
			out = append(out, fmt.Sprintf("const %s = %s;", b, global))
		}
	}
	if len(specs) > 0 {
		out = append(out, fmt.Sprintf("const { %s } = %s;", strings.Join(specs, ", "), global))
	}
	c.replace(i, end, strings.Join(out, " "))
	return end, ""
}

// unquote strips the quotes of a string token; other text stays as it is.
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// exportDecl rewrites the export at token i and records a default export in
// def. It returns the index of the last token it read.
func (c *code) exportDecl(i int, def *defaultExport) int {
	switch {
	case c.is(i+1, "default"):
		v := i + 2
		fn := v
		if c.is(v, "async") {
			fn = v + 1
		}
		name := fn + 1
		if c.is(name, "*") {
			name++
		}
		switch {
		case c.is(fn, "function") || c.is(v, "class"):
			if c.is(v, "class") {
				name = v + 1
			}
			if c.isIdent(name) && !c.is(name, "extends") {
				// A named declaration stays one (hoisted, usable by name); the
				// assignment is appended.
				c.rewrite(i, v, "")
				*def = defaultExport{found: true, name: c.text(name), params: -1, append: true}
				return v
			}
			c.rewrite(i, v, "module.exports.default = ")
			body := c.bodyEnd(v)
			c.edits = append(c.edits, edit{c.toks[body].end, c.toks[body].end, ";"})
			params, _ := c.function(v)
			*def = defaultExport{found: true, params: params}
		default:
			c.rewrite(i, v, "module.exports.default = ")
			c.expressionExport(v, def)
		}
		return v
	case c.is(i+1, "{"):
		end := c.statementEnd(i)
		close := c.match(i + 1)
		text := ""
		if !c.is(close+1, "from") {
			for k := i + 2; k < close; k++ {
				if c.is(k+1, "as") && c.is(k+2, "default") {
					text = fmt.Sprintf("module.exports.default = %s;", c.text(k))
					*def = defaultExport{found: true, name: c.text(k), params: -1}
				}
			}
		}
		c.replace(i, end, text)
		return end
	case c.is(i+1, "*"):
		end := c.statementEnd(i)
		c.replace(i, end, "")
		return end
	default: // export const/let/var/function/class/async
		c.rewrite(i, i+1, "")
		return i
	}
}

// moduleExports reads a CommonJS export at token i: module.exports = X
// becomes module.exports.default = X; module.exports.default = X is kept.
func (c *code) moduleExports(i int, def *defaultExport) int {
	if !c.is(i+1, ".") || !c.is(i+2, "exports") {
		return i
	}
	switch {
	case c.is(i+3, "="):
		c.replace(i, i+2, "module.exports.default")
		c.expressionExport(i+4, def)
		return i + 3
	case c.is(i+3, ".") && c.is(i+4, "default") && c.is(i+5, "="):
		c.expressionExport(i+6, def)
		return i + 5
	}
	return i
}

// expressionExport records the default export whose expression starts at v.
func (c *code) expressionExport(v int, def *defaultExport) {
	*def = defaultExport{found: true, params: -1}
	if c.isIdent(v) && c.is(v+1, ";") {
		def.name = c.text(v)
		return
	}
	def.params, _ = c.function(v)
}

// function tells whether the expression at v is a function or an arrow; for
// one, params is the index of its parameter list's '(' (-1 for x => …).
func (c *code) function(v int) (params int, ok bool) {
	if c.is(v, "async") && (c.is(v+1, "function") || c.is(v+1, "(") || c.isIdent(v+1) && c.is(v+2, "=>")) {
		v++
	}
	switch {
	case c.is(v, "function"):
		p := v + 1
		for p < len(c.toks) && !c.is(p, "(") {
			p++
		}
		return p, p < len(c.toks)
	case c.is(v, "("):
		if c.is(c.match(v)+1, "=>") {
			return v, true
		}
	case c.isIdent(v) && c.is(v+1, "=>"):
		return -1, true
	}
	return -1, false
}

// bodyEnd is the index of the '}' that ends the function or class whose
// keyword is at v (the first top-level-of-statement '{' after it).
func (c *code) bodyEnd(v int) int {
	for j := v; j < len(c.toks); j++ {
		if c.toks[j].depth == c.toks[v].depth && c.is(j, "{") {
			return c.match(j)
		}
	}
	return len(c.toks) - 1
}

// declaration reads a top-level declaration of a capitalised name at token i.
func (c *code) declaration(i int) (decl, bool) {
	if c.toks[i].depth != 0 {
		return decl{}, false
	}
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
		params, _ := c.function(v)
		return c.newDecl(name, i, c.bodyEnd(v)+1, params)
	case c.is(i, "class"):
		return c.newDecl(i+1, i, c.bodyEnd(i)+1, -1)
	case c.is(i, "const") || c.is(i, "let") || c.is(i, "var"):
		if !c.is(i+2, "=") {
			return decl{}, false
		}
		end := c.statementEnd(i) + 1
		if c.is(i+3, "class") {
			return c.newDecl(i+1, i, end, -1)
		}
		if params, ok := c.function(i + 3); ok {
			return c.newDecl(i+1, i, end, params)
		}
	}
	return decl{}, false
}

func (c *code) newDecl(name, first, end, params int) (decl, bool) {
	if !c.isIdent(name) || !componentName(c.text(name)) {
		return decl{}, false
	}
	return decl{name: c.text(name), nameTok: name, first: first, end: end, params: params}, true
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

// ensureProps adds a props parameter to the empty parameter list at params,
// unless the function body declares props itself.
func (c *code) ensureProps(params int) {
	if params < 0 || !c.is(params+1, ")") {
		return
	}
	bodyStart := params + 2
	if c.is(bodyStart, "=>") {
		bodyStart++
	}
	bodyEnd := bodyStart
	if c.is(bodyStart, "{") {
		bodyEnd = c.match(bodyStart)
	}
	for j := bodyStart; j < bodyEnd; j++ {
		if (c.is(j, "const") || c.is(j, "let") || c.is(j, "var")) && c.is(j+1, "props") {
			return
		}
	}
	at := c.toks[params].end
	c.edits = append(c.edits, edit{at, at, "props"})
}
