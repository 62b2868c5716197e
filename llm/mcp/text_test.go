package mcp

import (
	"strings"
	"testing"
	"unicode"
)

// The vectors of internal/termtext's tests: the rule here is its rule.
func TestInertWritesEveryControlAsAVisibleEscape(t *testing.T) {
	hostile := "a\x1b]0;pwned\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07b\rc\u009b31m\x7fd\u202eg\xffe"
	if got, want := inert(hostile+"\n\tf", false), `a\x1b]0;pwned\a\x1b[2J\x1b]52;c;ZXZpbA==\ab\rc\u009b31m\x7fd\u202eg`+"\uFFFD"+`e\n\tf`; got != want {
		t.Errorf("line: %q\nwant  %q", got, want)
	}
	if got, want := inert("one\r\n\ttwo\n"+hostile, true), "one\n\ttwo\n"+`a\x1b]0;pwned\a\x1b[2J\x1b]52;c;ZXZpbA==\ab\rc\u009b31m\x7fd\u202eg`+"\uFFFD"+"e"; got != want {
		t.Errorf("block: %q\nwant   %q", got, want)
	}
	if got := inert("a\r", true); got != `a\r` {
		t.Errorf("a \\r at the end is not a line ending: %q", got)
	}
	for _, s := range []string{"", "plain", "日本語 σ — “quoted” 🙂", "U+FFFD written as such: \uFFFD"} {
		if inert(s, false) != s || inert(s, true) != s {
			t.Errorf("changed %q", s)
		}
	}
	for _, r := range []rune{0x200e, 0x2066, 0x2069, 0x80, 0x9f} {
		if s := inert(string(r), true); strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }) {
			t.Errorf("%U kept: %q", r, s)
		}
	}
}

func TestTheRedactorHidesEverySecretOfAServer(t *testing.T) {
	red := newRedactor(Server{
		Name: "web", URL: "https://bob:pa55-word@example.com/mcp?key=k3y%2Fk3y&lang=en",
		Headers: map[string]string{"Authorization": "Bearer t0ken-t0ken", "X-Short": "abc"},
		Env:     map[string]string{"TOKEN": "env-s3cret"},
	})
	in := "got Bearer t0ken-t0ken, then t0ken-t0ken alone, env-s3cret, pa55-word, k3y/k3y and k3y%2Fk3y; abc and en stay"
	want := "got [redacted], then [redacted] alone, [redacted], [redacted], [redacted] and [redacted]; abc and en stay"
	if got := red.apply(in); got != want {
		t.Errorf("%q\nwant %q", got, want)
	}
	if got := red.line("x\x1bBearer t0ken-t0ken"); got != `x\x1b[redacted]` {
		t.Errorf("line: %q", got)
	}
	// A user name without a password is a token (https://TOKEN@host/).
	tok := newRedactor(Server{Name: "gh", URL: "https://ghp_t0ken99@example.com/mcp"})
	if got := tok.apply(`Post "https://ghp_t0ken99@example.com/mcp": refused`); got != `Post "https://[redacted]@example.com/mcp": refused` {
		t.Errorf("a token as the URL's user name: %q", got)
	}
}
