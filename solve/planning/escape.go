package planning

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"unicode"
)

// Escaping for the reports. Goals, titles, rubrics and ids come from the
// user and from the model, so every one is text to show, never markup:
// each writer escapes it for where it lands (Markdown inline text or a
// code span, a Mermaid label, SVG character data).

// oneLine turns line breaks and other control or invisible characters
// into spaces: a report's cells, labels and headings are one line each.
func oneLine(r rune) rune {
	if unicode.IsSpace(r) || !unicode.IsGraphic(r) {
		return ' '
	}
	return r
}

// MarkdownText makes s inline Markdown text that shows s as written: one
// line, and every character Markdown or HTML reads as markup (a table's
// |, emphasis, links, code, tags, entities, headings, GitHub's $…$ math)
// backslash-escaped, so a table cell stays one cell and no element comes
// from the text. It may start a line of the report (a paragraph, a list
// item's body): its leading spaces are dropped (four make a code block)
// and a leading block marker (-, +, =, a number's . or ), as well as the
// #, >, * and _ escaped everywhere) is escaped, so it never becomes a
// list, a quote, a heading or a rule.
//
// An _ inside a word (total_cost) is left as it is: Markdown never reads
// it as emphasis, and ids and quantity names stay readable.
func MarkdownText(s string) string {
	var b strings.Builder
	rs := []rune(strings.TrimLeft(strings.Map(oneLine, s), " "))
	word := func(i int) bool { return i >= 0 && i < len(rs) && (unicode.IsLetter(rs[i]) || unicode.IsDigit(rs[i])) }
	digits := 0 // the leading digits of an ordered list's marker
	for digits < len(rs) && '0' <= rs[digits] && rs[digits] <= '9' {
		digits++
	}
	for i, r := range rs {
		markup := strings.ContainsRune("\\`*_[]<>|#~&$", r) && !(r == '_' && word(i-1) && word(i+1))
		marker := i == 0 && strings.ContainsRune("-+=", r) || i == digits && digits > 0 && (r == '.' || r == ')')
		if markup || marker {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// MarkdownLink is a Markdown link showing text (MarkdownText) to target, a
// relative file path: every byte of target but letters, digits, -._~ and
// / percent-encoded, so a space, a parenthesis, a < or a : in a file name
// neither breaks the link nor makes it another one (javascript:…).
func MarkdownLink(text, target string) string {
	var u strings.Builder
	for _, c := range []byte(target) {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			u.WriteByte(c)
		} else {
			fmt.Fprintf(&u, "%%%02X", c)
		}
	}
	return "[" + MarkdownText(text) + "](" + u.String() + ")"
}

// MarkdownCode makes s a Markdown code span that can sit in a table cell:
// one line, fenced by more backticks than any run inside it, and each |
// preceded by an odd number of backslashes (GFM splits cells before it
// reads code spans; a \ before a | already escaped is lost, never the
// table).
func MarkdownCode(s string) string {
	var b strings.Builder
	run, longest, slashes := 0, 0, 0
	for _, r := range s {
		r = oneLine(r)
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
		if r == '|' && slashes%2 == 0 {
			b.WriteByte('\\')
		}
		if r == '\\' {
			slashes++
		} else {
			slashes = 0
		}
		b.WriteRune(r)
	}
	body := b.String()
	if strings.HasPrefix(body, "`") || strings.HasSuffix(body, "`") {
		body = " " + body + " "
	}
	fence := strings.Repeat("`", longest+1)
	return fence + body + fence
}

// mermaidText makes s the text of a quoted Mermaid label: letters, digits
// and a few plain marks as they are, every other ASCII character as
// Mermaid's entity code (#quot;, #35; …), so nothing closes the label,
// starts a directive (%%{), a Markdown string (`), HTML (<) or math ($$),
// or ends the fence the report puts the chart in.
func mermaidText(s string) string {
	var b strings.Builder
	for _, r := range s {
		r = oneLine(r)
		switch {
		case r == '"':
			b.WriteString("#quot;")
		case r >= 0x80 || r == ' ' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune(".,:-_+/=*'!?@", r):
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "#%d;", r)
		}
	}
	return b.String()
}

// xmlText is s as XML character data on one line: markup characters
// escaped, control characters spaces and invalid UTF-8 U+FFFD, so the
// chart always parses.
func xmlText(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(strings.Map(oneLine, s))) // a bytes.Buffer does not fail
	return b.String()
}
