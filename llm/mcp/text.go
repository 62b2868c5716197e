package mcp

import (
	"net/url"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/internal/termtext"
)

// inert makes text a server sent (results, descriptions, tool names,
// error messages) harmless to whoever shows it later: internal/termtext's
// rule, Block when multiline, else Line.
func inert(s string, multiline bool) string {
	if multiline {
		return termtext.Block(s)
	}
	return termtext.Line(s)
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
		} else if name := u.User.Username(); name != "" {
			// A user name without a password is a token (https://TOKEN@host/,
			// as GitHub and Stripe take theirs).
			add(name)
			add(url.QueryEscape(name))
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
