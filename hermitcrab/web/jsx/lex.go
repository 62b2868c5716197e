package jsx

// The preparation reads esbuild's output, which is plain JavaScript: this
// tokenizer knows strings, template literals (with ${…} nesting), regular
// expressions, comments and brackets, which is all it takes to tell a
// top-level import, export or declaration from the same words in text.

type kind uint8

const (
	identTok kind = iota
	punctTok
	stringTok
	templateTok // a whole template literal, or one piece of it around ${…}
	regexTok
	numberTok
)

// token is one token of the code: its kind, its byte span, and its depth, the
// number of brackets and template substitutions it sits in (a bracket's depth
// is that of the level it opens or closes). head marks the ')' that closes
// the head of an if, while, for or with, after which a statement (so a
// regular expression) may start: if (s) /{/.test(s);
type token struct {
	kind       kind
	start, end int
	depth      int
	head       bool
}

// headKeywords are the statements whose parenthesised head a statement follows.
var headKeywords = map[string]bool{"if": true, "while": true, "for": true, "with": true}

// regexBefore are the keywords after which a slash starts a regular expression.
var regexBefore = map[string]bool{
	"return": true, "typeof": true, "instanceof": true, "in": true, "of": true, "new": true,
	"delete": true, "void": true, "throw": true, "case": true, "do": true, "else": true,
	"yield": true, "await": true,
}

// lex splits src into tokens, leaving out whitespace and comments.
func lex(src string) []token {
	var toks []token
	var stack []byte  // open '(' '[' '{', and '`' for a template substitution
	heads := []bool{} // for each open '(': whether it opens a statement's head
	add := func(k kind, start, end, depth int) {
		toks = append(toks, token{kind: k, start: start, end: end, depth: depth})
	}
	// template scans a template literal piece from i (just after ` or the }
	// that ends a substitution) and adds it; a piece ending in ${ opens a level.
	template := func(start, i int) int {
		end, open := scanTemplate(src, i)
		add(templateTok, start, end, len(stack))
		if open {
			stack = append(stack, '`')
		}
		return end
	}
	for i := 0; i < len(src); {
		c := src[i]
		next := byte(0)
		if i+1 < len(src) {
			next = src[i+1]
		}
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '/' && next == '/':
			i = indexFrom(src, i+2, "\n")
		case c == '/' && next == '*':
			i = indexFrom(src, i+2, "*/") + 2
		case c == '"' || c == '\'':
			end := scanString(src, i)
			add(stringTok, i, end, len(stack))
			i = end
		case c == '`':
			i = template(i, i+1)
		case c == '}' && len(stack) > 0 && stack[len(stack)-1] == '`':
			stack = stack[:len(stack)-1]
			i = template(i, i+1)
		case isDigit(c) || c == '.' && isDigit(next):
			end := scanNumber(src, i)
			add(numberTok, i, end, len(stack))
			i = end
		case isIdentStart(c):
			end := scanIdent(src, i)
			add(identTok, i, end, len(stack))
			i = end
		case c == '/' && regexAllowed(src, toks):
			end := scanRegex(src, i)
			add(regexTok, i, end, len(stack))
			i = end
		case c == '(' || c == '[' || c == '{':
			if c == '(' {
				n := len(toks)
				heads = append(heads, n > 0 && toks[n-1].kind == identTok && headKeywords[src[toks[n-1].start:toks[n-1].end]] &&
					(n == 1 || src[toks[n-2].start:toks[n-2].end] != ".")) // obj.if(…) is a call
			}
			add(punctTok, i, i+1, len(stack))
			stack = append(stack, c)
			i++
		case c == ')' || c == ']' || c == '}':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			add(punctTok, i, i+1, len(stack))
			if c == ')' && len(heads) > 0 {
				toks[len(toks)-1].head = heads[len(heads)-1]
				heads = heads[:len(heads)-1]
			}
			i++
		case c == '=' && next == '>':
			add(punctTok, i, i+2, len(stack))
			i += 2
		case c == '.' && next == '.' && i+2 < len(src) && src[i+2] == '.':
			add(punctTok, i, i+3, len(stack))
			i += 3
		default:
			add(punctTok, i, i+1, len(stack))
			i++
		}
	}
	return toks
}

// indexFrom is the index of sub in src at or after i, or len(src).
func indexFrom(src string, i int, sub string) int {
	for j := i; j+len(sub) <= len(src); j++ {
		if src[j:j+len(sub)] == sub {
			return j
		}
	}
	return len(src)
}

// scanString returns the end of the string literal that starts at i.
func scanString(src string, i int) int {
	q := src[i]
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case q:
			return j + 1
		case '\n':
			return j
		}
	}
	return len(src)
}

// scanTemplate scans template text from i to the closing backquote or to a
// "${"; it returns the end and whether a substitution opens there.
func scanTemplate(src string, i int) (end int, open bool) {
	for j := i; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '`':
			return j + 1, false
		case '$':
			if j+1 < len(src) && src[j+1] == '{' {
				return j + 2, true
			}
		}
	}
	return len(src), false
}

// scanRegex returns the end of the regular expression literal (with its
// flags) that starts at i.
func scanRegex(src string, i int) int {
	inClass := false
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '[':
			inClass = true
		case ']':
			inClass = false
		case '\n':
			return j
		case '/':
			if !inClass {
				return scanIdent(src, j+1)
			}
		}
	}
	return len(src)
}

// scanNumber returns the end of the number that starts at i.
func scanNumber(src string, i int) int {
	j := i
	for j < len(src) {
		c := src[j]
		switch {
		case isDigit(c) || isLetter(c) || c == '_' || c == '.':
			j++
		case (c == '+' || c == '-') && (src[j-1] == 'e' || src[j-1] == 'E') &&
			!(len(src) > i+1 && src[i] == '0' && (src[i+1] == 'x' || src[i+1] == 'X')):
			j++
		default:
			return j
		}
	}
	return j
}

// scanIdent returns the end of the identifier (or regex flags) that starts
// at i; \u escapes and any non-ASCII byte count as identifier characters.
func scanIdent(src string, i int) int {
	j := i
	for j < len(src) {
		c := src[j]
		switch {
		case isLetter(c) || isDigit(c) || c == '_' || c == '$' || c >= 0x80:
			j++
		case c == '\\' && j+1 < len(src) && src[j+1] == 'u':
			j += 2
			if j < len(src) && src[j] == '{' {
				j = indexFrom(src, j, "}") + 1
			} else {
				j = min(j+4, len(src))
			}
		default:
			return j
		}
	}
	return j
}

// regexAllowed tells whether a slash after toks starts a regular expression
// rather than a division: it does after an operator, an opening bracket, a
// block's closing brace, the ')' closing an if, while, for or with head, a
// template piece that opens a substitution, or a keyword such as return.
func regexAllowed(src string, toks []token) bool {
	if len(toks) == 0 {
		return true
	}
	t := toks[len(toks)-1]
	text := src[t.start:t.end]
	switch t.kind {
	case numberTok, stringTok, regexTok:
		return false
	case templateTok:
		return text[len(text)-1] == '{'
	case identTok:
		return regexBefore[text]
	}
	return (text != ")" || t.head) && text != "]"
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isLetter(c byte) bool     { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isIdentStart(c byte) bool { return isLetter(c) || c == '_' || c == '$' || c == '\\' || c >= 0x80 }
