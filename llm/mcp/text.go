package mcp

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// inert makes text a server sent (results, descriptions, tool names,
// error messages) harmless to whoever shows it later: every control
// character (C0 but line breaks and tabs when multiline, DEL, C1) and
// every bidirectional control is written as a visible Go escape (\x1b,
// \u009b, \u202e), a \r before a \n is dropped, and bytes that are not
// UTF-8 become U+FFFD. It is the rule of the module's internal/termtext
// (Block, or Line when !multiline), written again here because package llm
// and its subpackages import nothing of the module's internal/.
func inert(s string, multiline bool) string {
	control := func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }
	kept := func(r rune) bool { return multiline && (r == '\n' || r == '\t') }
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return control(r) && !kept(r) }) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], string(utf8.RuneError)):
			b.WriteRune(utf8.RuneError) // a byte that is not UTF-8
		case kept(r):
			b.WriteRune(r)
		case r == '\r' && multiline && strings.HasPrefix(s[i+1:], "\n"):
		case control(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// redactor replaces a server's secrets in text it did not write (an error
// from the transport, a server's error message, its stderr) with
// "[redacted]": a server may echo the Authorization header it refused.
type redactor []string

// minSecret is the shortest value treated as a secret: shorter ones (a
// query's "1", "en") would blank out ordinary words and cannot be tokens.
const minSecret = 6

func newRedactor(s Server) redactor {
	var secrets []string
	add := func(v string) {
		if len(v) < minSecret {
			return
		}
		secrets = append(secrets, v)
		// "Bearer TOKEN": the token alone may come back too.
		for _, f := range strings.Fields(v) {
			if len(f) >= minSecret && f != v {
				secrets = append(secrets, f)
			}
		}
	}
	for _, v := range s.Headers {
		add(v)
	}
	for _, v := range s.Env {
		add(v)
	}
	if u, err := url.Parse(s.URL); err == nil {
		if p, ok := u.User.Password(); ok {
			add(p)
			add(url.QueryEscape(p))
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
				add(url.QueryEscape(v))
			}
		}
	}
	// The longest first, so a secret holding another is replaced whole.
	slices.SortFunc(secrets, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(secrets)
}

func (r redactor) apply(s string) string {
	for _, secret := range r {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	return s
}

// line is foreign text for one line of an error or a note: redacted, then
// inert.
func (r redactor) line(s string) string { return inert(r.apply(s), false) }
