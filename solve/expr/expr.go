// Package expr parses and evaluates the payload of a logic constraint: a
// boolean expression over named plan metrics, such as
// "total_cost <= 500" or "critical_path_hours <= 24 && p99_latency_ms < 500".
//
// Grammar (usual precedence, loosest first):
//
//	or   = and { ("||" | "or") and }
//	and  = not { ("&&" | "and") not }
//	not  = ("!" | "not") not | cmp
//	cmp  = sum [ ("<=" | "<" | ">=" | ">" | "==" | "!=") sum ]
//	sum  = prod { ("+" | "-") prod }
//	prod = unary { ("*" | "/") unary }
//	unary = "-" unary | number | metric | "(" or ")"
//
// Metrics are snake_case names. The whole expression must be a comparison
// or a boolean combination of comparisons. Comparisons allow a relative
// tolerance of 1e-9, so float rounding in sums does not flip a verdict.
package expr

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Expr is a parsed, type-checked expression.
type Expr struct {
	src  string
	root *node
	vars []string
}

type node struct {
	op    string // "num", "var", "neg", "+", "-", "*", "/", "<=", "<", ">=", ">", "==", "!=", "&&", "||", "!"
	num   float64
	name  string
	left  *node
	right *node
}

func (n *node) boolean() bool {
	switch n.op {
	case "<=", "<", ">=", ">", "==", "!=", "&&", "||", "!":
		return true
	}
	return false
}

// Parse parses and type-checks src.
func Parse(src string) (*Expr, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", src, err)
	}
	p := &parser{src: src, toks: toks}
	root, err := p.or()
	if err == nil && p.pos < len(p.toks) {
		err = p.errorf("unexpected %q after a complete expression", p.toks[p.pos].text)
	}
	if err == nil && !root.boolean() {
		err = errors.New("the expression is a number, not a condition: compare it with a limit, e.g. total_cost <= 500")
	}
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", src, err)
	}
	e := &Expr{src: src, root: root}
	seen := map[string]bool{}
	walk(root, func(n *node) {
		if n.op == "var" && !seen[n.name] {
			seen[n.name] = true
			e.vars = append(e.vars, n.name)
		}
	})
	slices.Sort(e.vars)
	return e, nil
}

func walk(n *node, f func(*node)) {
	if n == nil {
		return
	}
	f(n)
	walk(n.left, f)
	walk(n.right, f)
}

// String returns the source text.
func (e *Expr) String() string { return e.src }

// Vars returns the metric names used, sorted.
func (e *Expr) Vars() []string { return slices.Clone(e.vars) }

// UnknownMetricError is returned when a metric has no value.
type UnknownMetricError struct{ Name string }

func (e *UnknownMetricError) Error() string { return fmt.Sprintf("unknown metric %q", e.Name) }

// Eval reports whether the expression holds with the given metric values.
func (e *Expr) Eval(vars map[string]float64) (bool, error) {
	v, err := eval(e.root, vars)
	return v.b, err
}

// Slack measures how far the expression is from flipping: for a <= b or
// a < b it is b − a, for a >= b or a > b it is a − b, && takes the least
// and || the greatest slack, ! negates, == is −|a − b| and != is |a − b|.
// It is negative when a comparison fails by that amount.
func (e *Expr) Slack(vars map[string]float64) (float64, error) {
	v, err := eval(e.root, vars)
	return v.slack, err
}

type value struct {
	num   float64
	b     bool
	slack float64
}

// tolerance is relative to the figures compared, and 0 when one of them is
// not finite: an infinite tolerance would let +Inf <= 500 hold.
func tolerance(a, b float64) float64 {
	t := 1e-9 * math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
	if math.IsInf(t, 0) || math.IsNaN(t) {
		return 0
	}
	return t
}

func eval(n *node, vars map[string]float64) (value, error) {
	switch n.op {
	case "num":
		return value{num: n.num}, nil
	case "var":
		v, ok := vars[n.name]
		if !ok {
			return value{}, &UnknownMetricError{Name: n.name}
		}
		return value{num: v}, nil
	case "neg":
		v, err := eval(n.left, vars)
		return value{num: -v.num}, err
	case "!":
		v, err := eval(n.left, vars)
		return value{b: !v.b, slack: -v.slack}, err
	}
	l, err := eval(n.left, vars)
	if err != nil {
		return value{}, err
	}
	r, err := eval(n.right, vars)
	if err != nil {
		return value{}, err
	}
	a, b := l.num, r.num
	tol := tolerance(a, b)
	switch n.op {
	case "+":
		return value{num: a + b}, nil
	case "-":
		return value{num: a - b}, nil
	case "*":
		return value{num: a * b}, nil
	case "/":
		if b == 0 {
			return value{}, fmt.Errorf("division by zero in %s", show(n))
		}
		return value{num: a / b}, nil
	case "<=":
		return value{b: a <= b+tol, slack: b - a}, nil
	case "<":
		return value{b: a < b-tol, slack: b - a}, nil
	case ">=":
		return value{b: a >= b-tol, slack: a - b}, nil
	case ">":
		return value{b: a > b+tol, slack: a - b}, nil
	case "==":
		return value{b: math.Abs(a-b) <= tol, slack: -math.Abs(a - b)}, nil
	case "!=":
		return value{b: math.Abs(a-b) > tol, slack: math.Abs(a - b)}, nil
	case "&&":
		return value{b: l.b && r.b, slack: math.Min(l.slack, r.slack)}, nil
	case "||":
		return value{b: l.b || r.b, slack: math.Max(l.slack, r.slack)}, nil
	}
	panic("expr: unknown operator " + n.op)
}

// show renders a subtree in canonical form, for error messages.
func show(n *node) string {
	switch n.op {
	case "num":
		return strconv.FormatFloat(n.num, 'g', -1, 64)
	case "var":
		return n.name
	case "neg":
		return "-" + show(n.left)
	case "!":
		return "!" + show(n.left)
	}
	return "(" + show(n.left) + " " + n.op + " " + show(n.right) + ")"
}

// Polarity bits: how the slack can move when a metric grows.
const (
	up   = 1
	down = 2
)

// Antitone reports whether growing any metric can only lower the slack
// (and so can only turn the expression from true to false), as for
// "total_cost <= 500". Searches may then prune with optimistic bounds.
func (e *Expr) Antitone() bool {
	pol := polarity(e.root)
	for _, v := range e.vars {
		if pol[v] != down {
			return false
		}
	}
	return true
}

func polarity(n *node) map[string]int {
	switch n.op {
	case "num":
		return map[string]int{}
	case "var":
		return map[string]int{n.name: up}
	case "neg", "!":
		return flip(polarity(n.left))
	case "+", "&&", "||":
		return merge(polarity(n.left), polarity(n.right))
	case "-":
		return merge(polarity(n.left), flip(polarity(n.right)))
	case "<=", "<":
		return merge(polarity(n.right), flip(polarity(n.left)))
	case ">=", ">":
		return merge(polarity(n.left), flip(polarity(n.right)))
	case "*", "/":
		l, r := polarity(n.left), polarity(n.right)
		if len(r) == 0 {
			return scale(l, constant(n.right))
		}
		if n.op == "*" && len(l) == 0 {
			return scale(r, constant(n.left))
		}
	}
	return mixed(n) // ==, !=, and products or quotients of metrics
}

func constant(n *node) float64 {
	v, err := eval(n, nil)
	if err != nil {
		return math.NaN()
	}
	return v.num
}

func scale(p map[string]int, c float64) map[string]int {
	switch {
	case c > 0:
		return p
	case c < 0:
		return flip(p)
	}
	for k := range p {
		p[k] = up | down
	}
	return p
}

func mixed(n *node) map[string]int {
	out := map[string]int{}
	walk(n, func(m *node) {
		if m.op == "var" {
			out[m.name] = up | down
		}
	})
	return out
}

func flip(p map[string]int) map[string]int {
	for k, v := range p {
		p[k] = (v&up)<<1 | (v&down)>>1
	}
	return p
}

func merge(a, b map[string]int) map[string]int {
	for k, v := range b {
		a[k] |= v
	}
	return a
}

// UpperLimit returns L when the expression is exactly "metric <= L" or
// "metric < L" (or "L >= metric", "L > metric") for the given metric.
func (e *Expr) UpperLimit(metric string) (float64, bool) {
	n := e.root
	l, r := n.left, n.right
	switch n.op {
	case "<=", "<":
	case ">=", ">":
		l, r = r, l
	default:
		return 0, false
	}
	if l.op != "var" || l.name != metric || len(polarity(r)) != 0 {
		return 0, false
	}
	c := constant(r)
	return c, !math.IsNaN(c)
}

// SMT renders the expression as an SMT-LIB2 term over Real constants named
// by name(metric).
func (e *Expr) SMT(name func(string) string) string { return smt(e.root, name) }

func smt(n *node, name func(string) string) string {
	switch n.op {
	case "num":
		return Decimal(n.num)
	case "var":
		return name(n.name)
	case "neg":
		return "(- " + smt(n.left, name) + ")"
	case "!":
		return "(not " + smt(n.left, name) + ")"
	case "&&":
		return "(and " + smt(n.left, name) + " " + smt(n.right, name) + ")"
	case "||":
		return "(or " + smt(n.left, name) + " " + smt(n.right, name) + ")"
	case "==":
		return "(= " + smt(n.left, name) + " " + smt(n.right, name) + ")"
	case "!=":
		return "(not (= " + smt(n.left, name) + " " + smt(n.right, name) + "))"
	}
	return "(" + n.op + " " + smt(n.left, name) + " " + smt(n.right, name) + ")"
}

// Decimal writes v as an SMT-LIB2 Real literal (negative values as (- x)).
func Decimal(v float64) string {
	s := strconv.FormatFloat(math.Abs(v), 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	if v < 0 {
		return "(- " + s + ")"
	}
	return s
}

// Lexing and parsing.

type token struct {
	kind string // "num", "ident", "op", "(", ")"
	text string
	num  float64
	col  int
}

func lex(src string) ([]token, error) {
	var toks []token
	rs := []rune(src)
	for i := 0; i < len(rs); {
		c := rs[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '(' || c == ')':
			toks = append(toks, token{kind: string(c), text: string(c), col: i + 1})
			i++
		case unicode.IsDigit(c) || (c == '.' && i+1 < len(rs) && unicode.IsDigit(rs[i+1])):
			j := i
			for j < len(rs) && (unicode.IsDigit(rs[j]) || rs[j] == '.' || rs[j] == '_' ||
				((rs[j] == 'e' || rs[j] == 'E') && j+1 < len(rs) && (unicode.IsDigit(rs[j+1]) || rs[j+1] == '-' || rs[j+1] == '+')) ||
				((rs[j] == '-' || rs[j] == '+') && (rs[j-1] == 'e' || rs[j-1] == 'E'))) {
				j++
			}
			text := string(rs[i:j])
			v, err := strconv.ParseFloat(strings.ReplaceAll(text, "_", ""), 64)
			if err != nil {
				return nil, fmt.Errorf("column %d: %q is not a number", i+1, text)
			}
			if j < len(rs) && (unicode.IsLetter(rs[j]) || rs[j] == '%' || rs[j] == '$') {
				return nil, fmt.Errorf("column %d: %q is glued to a unit; write plain numbers in the metric's unit (e.g. 500, not 500ms or 24h)", i+1, string(rs[i:j+1]))
			}
			toks = append(toks, token{kind: "num", text: text, num: v, col: i + 1})
			i = j
		case unicode.IsLetter(c) || c == '_':
			j := i
			for j < len(rs) && (unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j]) || rs[j] == '_') {
				j++
			}
			text := string(rs[i:j])
			switch text {
			case "and":
				toks = append(toks, token{kind: "op", text: "&&", col: i + 1})
			case "or":
				toks = append(toks, token{kind: "op", text: "||", col: i + 1})
			case "not":
				toks = append(toks, token{kind: "op", text: "!", col: i + 1})
			default:
				toks = append(toks, token{kind: "ident", text: text, col: i + 1})
			}
			i = j
		default:
			op := ""
			for _, cand := range []string{"<=", ">=", "==", "!=", "&&", "||", "≤", "≥", "<", ">", "!", "+", "-", "*", "/"} {
				if strings.HasPrefix(string(rs[i:]), cand) {
					op = cand
					break
				}
			}
			if op == "" {
				hint := ""
				if c == '=' {
					hint = "; compare with == (or <=, >=)"
				}
				if c == '$' || c == '%' {
					hint = "; write plain numbers in the metric's unit"
				}
				return nil, fmt.Errorf("column %d: unexpected character %q%s", i+1, c, hint)
			}
			text := map[string]string{"≤": "<=", "≥": ">="}[op]
			if text == "" {
				text = op
			}
			toks = append(toks, token{kind: "op", text: text, col: i + 1})
			i += len([]rune(op))
		}
	}
	return toks, nil
}

type parser struct {
	src  string
	toks []token
	pos  int
}

func (p *parser) errorf(format string, args ...any) error {
	col := len([]rune(p.src)) + 1
	if p.pos < len(p.toks) {
		col = p.toks[p.pos].col
	}
	return fmt.Errorf("column %d: %s", col, fmt.Sprintf(format, args...))
}

func (p *parser) peekOp(ops ...string) string {
	if p.pos < len(p.toks) && p.toks[p.pos].kind == "op" && slices.Contains(ops, p.toks[p.pos].text) {
		return p.toks[p.pos].text
	}
	return ""
}

func (p *parser) binary(next func() (*node, error), wantBool bool, ops ...string) (*node, error) {
	left, err := next()
	if err != nil {
		return nil, err
	}
	for {
		op := p.peekOp(ops...)
		if op == "" {
			return left, nil
		}
		p.pos++
		right, err := next()
		if err != nil {
			return nil, err
		}
		if left.boolean() != wantBool || right.boolean() != wantBool {
			if wantBool {
				return nil, p.errorf("%q joins conditions, but %s is a number", op, show(pick(left, right, false)))
			}
			return nil, p.errorf("%q needs numbers, but %s is a condition", op, show(pick(left, right, true)))
		}
		left = &node{op: op, left: left, right: right}
	}
}

func pick(a, b *node, boolean bool) *node {
	if a.boolean() == boolean {
		return a
	}
	return b
}

func (p *parser) or() (*node, error)  { return p.binary(p.and, true, "||") }
func (p *parser) and() (*node, error) { return p.binary(p.not, true, "&&") }

func (p *parser) not() (*node, error) {
	if p.peekOp("!") != "" {
		p.pos++
		inner, err := p.not()
		if err != nil {
			return nil, err
		}
		if !inner.boolean() {
			return nil, p.errorf("! needs a condition, but %s is a number", show(inner))
		}
		return &node{op: "!", left: inner}, nil
	}
	return p.cmp()
}

func (p *parser) cmp() (*node, error) {
	left, err := p.sum()
	if err != nil {
		return nil, err
	}
	op := p.peekOp("<=", "<", ">=", ">", "==", "!=")
	if op == "" {
		return left, nil
	}
	p.pos++
	right, err := p.sum()
	if err != nil {
		return nil, err
	}
	if left.boolean() || right.boolean() {
		return nil, p.errorf("%q compares numbers, but one side is a condition", op)
	}
	if p.peekOp("<=", "<", ">=", ">", "==", "!=") != "" {
		return nil, p.errorf("chained comparison: write a <= x && x <= b")
	}
	return &node{op: op, left: left, right: right}, nil
}

func (p *parser) sum() (*node, error)  { return p.binary(p.prod, false, "+", "-") }
func (p *parser) prod() (*node, error) { return p.binary(p.unary, false, "*", "/") }

func (p *parser) unary() (*node, error) {
	if p.pos >= len(p.toks) {
		return nil, p.errorf("expected a number, metric name or \"(\" but the expression ends")
	}
	t := p.toks[p.pos]
	switch {
	case t.kind == "op" && t.text == "-":
		p.pos++
		inner, err := p.unary()
		if err != nil {
			return nil, err
		}
		if inner.boolean() {
			return nil, p.errorf("unary - needs a number")
		}
		return &node{op: "neg", left: inner}, nil
	case t.kind == "num":
		p.pos++
		return &node{op: "num", num: t.num}, nil
	case t.kind == "ident":
		p.pos++
		return &node{op: "var", name: t.text}, nil
	case t.kind == "(":
		p.pos++
		inner, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.pos >= len(p.toks) || p.toks[p.pos].kind != ")" {
			return nil, p.errorf("missing \")\"")
		}
		p.pos++
		return inner, nil
	}
	return nil, p.errorf("expected a number, metric name or \"(\" but found %q", t.text)
}
