package mcp

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Server is one MCP server a person added: a name, and either the URL of
// a streamable-HTTP endpoint or a command speaking MCP on its stdin and
// stdout. Header and Env values are secrets (tokens, API keys): they are
// stored in the registry file (mode 0600) and sent to the server, and
// appear in no listing, error or event.
type Server struct {
	Name    string            `json:"name"`
	URL     string            `json:"url,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Headers map[string]string `json:"headers,omitempty"` // sent with every HTTP request to the URL's origin
	Env     map[string]string `json:"env,omitempty"`     // added to the command's environment
}

// Transports a Server speaks.
const (
	TransportHTTP  = "http"
	TransportStdio = "stdio"
)

// Transport is TransportHTTP for a server with a URL, else TransportStdio.
func (s Server) Transport() string {
	if s.URL != "" {
		return TransportHTTP
	}
	return TransportStdio
}

// MaxNameLength is the longest server name: with the two underscores of
// NAME__tool it leaves 30 of the 64 characters a tool name may have to
// the server's own tool name.
const MaxNameLength = 32

// maxToolName is the longest tool name offered to a model. The Anthropic
// API's rule is ^[a-zA-Z0-9_-]{1,128}$ today; OpenAI's function names stop
// at 64 characters of the same set, and a server's tools must work with
// either provider.
const maxToolName = 64

var (
	namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	headerToken = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$") // RFC 9110 token
	envName     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// transportHeaders are set by the MCP transport itself; a value given for
// one would break the protocol.
var transportHeaders = []string{"Accept", "Content-Length", "Content-Type", "Host", "Last-Event-Id", "Mcp-Protocol-Version", "Mcp-Session-Id"}

// Check reports the first thing wrong with s as an *InvalidError, or nil.
// It does no I/O: whether the server answers is Probe's question.
func (s Server) Check() error {
	bad := func(field, format string, args ...any) error {
		return &InvalidError{Server: s.Name, Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	if err := CheckName(s.Name); err != nil {
		return err
	}
	switch {
	case s.URL == "" && s.Command == "":
		return bad("url", "give the URL of its streamable-HTTP endpoint, or the command that runs it over stdio")
	case s.URL != "" && s.Command != "":
		return bad("url", "give a URL or a command, not both")
	case s.URL != "":
		if err := checkURL(s.URL); err != nil {
			return bad("url", "%s", err)
		}
		if len(s.Args) > 0 || len(s.Env) > 0 {
			return bad("env", "arguments and environment variables are for a command; a server at a URL takes headers")
		}
	default:
		if strings.TrimSpace(s.Command) != s.Command || strings.ContainsRune(s.Command, 0) {
			return bad("command", "the command %q has surrounding spaces or a NUL byte; give the program, then its arguments separately", s.Command)
		}
		if len(s.Headers) > 0 {
			return bad("header", "headers are for a server at a URL; give a command its secrets as environment variables")
		}
	}
	for _, k := range sortedKeys(s.Headers) {
		switch v := s.Headers[k]; {
		case !headerToken.MatchString(k):
			return bad("header", "%q is not a header name (letters, digits and !#$%%&'*+.^_`|~-)", k)
		case slices.ContainsFunc(transportHeaders, func(h string) bool { return strings.EqualFold(h, k) }):
			return bad("header", "%s is set by the MCP transport itself; leave it out", k)
		case strings.ContainsAny(v, "\r\n\x00"):
			return bad("header", "the value of %s holds a line break or a NUL byte", k) // never the value itself
		}
	}
	for _, k := range sortedKeys(s.Env) {
		if !envName.MatchString(k) {
			return bad("env", "%q is not an environment variable name (letters, digits and _, not starting with a digit)", k)
		}
		if strings.ContainsRune(s.Env[k], 0) {
			return bad("env", "the value of %s holds a NUL byte", k)
		}
	}
	for _, a := range s.Args {
		if strings.ContainsRune(a, 0) {
			return bad("command", "an argument holds a NUL byte")
		}
	}
	return nil
}

// CheckName reports whether name can prefix its server's tools as
// NAME__tool: letters, digits, - and _, at most MaxNameLength, starting
// with a letter or a digit, with no double underscore and no trailing
// underscore (so the first "__" of a tool's name always ends the server's).
func CheckName(name string) error {
	bad := func(format string, args ...any) error {
		return &InvalidError{Server: name, Field: "name", Problem: fmt.Sprintf(format, args...)}
	}
	switch {
	case name == "":
		return &InvalidError{Field: "name", Problem: "a server needs a name; its tools are offered as NAME__tool"}
	case len(name) > MaxNameLength:
		return bad("%d characters; at most %d, so its tools' names (NAME__tool) stay within 64", len(name), MaxNameLength)
	case !namePattern.MatchString(name):
		return bad("use letters, digits, - and _, starting with a letter or a digit")
	case strings.Contains(name, "__") || strings.HasSuffix(name, "_"):
		return bad("a double underscore separates the server's name from its tools' names (NAME__tool), so the name can neither hold one nor end with _")
	}
	return nil
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: %v", redactURLError(err))
	}
	if u.Scheme == "" {
		return fmt.Errorf("give the whole URL, starting with http:// or https://")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("an MCP server's URL starts with http:// or https://, not %q", u.Scheme+":")
	}
	if u.Host == "" {
		return fmt.Errorf("the URL has no host")
	}
	return nil
}

// redactURLError is url.Parse's error without the URL it quotes, which may
// carry a password or a token.
func redactURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// ParseCommand splits a command line into the program and its arguments
// as a POSIX shell would split words: blanks separate, 'single quotes'
// keep everything, "double quotes" keep everything but \" and \\, and a
// backslash outside quotes keeps the next character. Nothing else of a
// shell happens (no variables, globs or pipes).
func ParseCommand(line string) (command string, args []string, err error) {
	var (
		words   []string
		cur     strings.Builder
		inWord  bool
		quote   rune
		escaped bool
	)
	for _, r := range line {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '\\':
			escaped, inWord = true, true
		case unicode.IsSpace(r):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	switch {
	case quote != 0:
		return "", nil, &InvalidError{Field: "command", Problem: fmt.Sprintf("a %c quote is not closed", quote)}
	case escaped:
		return "", nil, &InvalidError{Field: "command", Problem: "the command ends with a lone backslash"}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return "", nil, &InvalidError{Field: "command", Problem: "the command is empty"}
	}
	return words[0], words[1:], nil
}

// Listing is what may be shown of a server: everything but its secrets.
type Listing struct {
	Name      string   `json:"name"`
	Transport string   `json:"transport"`
	URL       string   `json:"url,omitempty"` // password and query values replaced by "xxxxx"
	Command   string   `json:"command,omitempty"`
	Args      []string `json:"args,omitempty"`
	Headers   []string `json:"headers,omitempty"` // names only
	Env       []string `json:"env,omitempty"`     // names only
}

// Listing is s without its secrets.
func (s Server) Listing() Listing {
	return Listing{
		Name: s.Name, Transport: s.Transport(), URL: redactedURL(s.URL),
		Command: s.Command, Args: s.Args,
		Headers: sortedKeys(s.Headers), Env: sortedKeys(s.Env),
	}
}

// redactedURL hides the URL's password and the values of its query (where
// some servers take their token).
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	if q := u.Query(); len(q) > 0 {
		for k := range q {
			q[k] = []string{"xxxxx"}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

func sortedKeys(m map[string]string) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
