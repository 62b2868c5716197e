package mcp

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestServerNamesMakeAnUnambiguousPrefix(t *testing.T) {
	for _, name := range []string{"docs", "GitHub", "my-server", "a_b", "x1", "7seas", strings.Repeat("a", MaxNameLength)} {
		if err := CheckName(name); err != nil {
			t.Errorf("%q refused: %v", name, err)
		}
	}
	for name, problem := range map[string]string{
		"":                                   "a server needs a name",
		strings.Repeat("a", MaxNameLength+1): "at most 32",
		"a b":                                "use letters, digits, - and _",
		"a.b":                                "use letters, digits, - and _",
		"-a":                                 "starting with a letter or a digit",
		"_a":                                 "starting with a letter or a digit",
		"a__b":                               "double underscore",
		"a_":                                 "nor end with _",
		"é":                                  "use letters, digits",
	} {
		err := CheckName(name)
		var ierr *InvalidError
		if !errors.As(err, &ierr) || ierr.Field != "name" || !strings.Contains(ierr.Problem, problem) {
			t.Errorf("%q: want a name error about %q, got %v", name, problem, err)
		}
	}
}

func TestServerChecks(t *testing.T) {
	ok := []Server{
		{Name: "web", URL: "https://example.com/mcp"},
		{Name: "web", URL: "http://127.0.0.1:8080/mcp", Headers: map[string]string{"Authorization": "Bearer x", "X-Api-Key": "k"}},
		{Name: "fs", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"}, Env: map[string]string{"TOKEN": "t"}},
	}
	for _, s := range ok {
		if err := s.Check(); err != nil {
			t.Errorf("%+v refused: %v", s.Listing(), err)
		}
	}
	bad := []struct {
		srv          Server
		field, words string
	}{
		{Server{Name: "web"}, "url", "give the URL"},
		{Server{Name: "web", URL: "https://a/mcp", Command: "x"}, "url", "not both"},
		{Server{Name: "web", URL: "ftp://example.com/mcp"}, "url", `starts with http:// or https://, not "ftp:"`},
		{Server{Name: "web", URL: "example.com/mcp"}, "url", "give the whole URL, starting with http://"},
		{Server{Name: "web", URL: "http://"}, "url", "no host"},
		{Server{Name: "web", URL: "http://[::1"}, "url", "not a URL"},
		{Server{Name: "web", URL: "https://a/mcp", Env: map[string]string{"A": "b"}}, "env", "a server at a URL takes headers"},
		{Server{Name: "web", URL: "https://a/mcp", Headers: map[string]string{"Bad Name": "v"}}, "header", "is not a header name"},
		{Server{Name: "web", URL: "https://a/mcp", Headers: map[string]string{"content-type": "text/plain"}}, "header", "set by the MCP transport"},
		{Server{Name: "web", URL: "https://a/mcp", Headers: map[string]string{"X-Token": "abc\r\nX-Evil: 1"}}, "header", "holds a line break"},
		{Server{Name: "fs", Command: " npx"}, "command", "surrounding spaces"},
		{Server{Name: "fs", Command: "npx", Headers: map[string]string{"A": "b"}}, "header", "headers are for a server at a URL"},
		{Server{Name: "fs", Command: "npx", Env: map[string]string{"1A": "b"}}, "env", "is not an environment variable name"},
		{Server{Name: "fs", Command: "npx", Env: map[string]string{"A": "b\x00"}}, "env", "NUL"},
		{Server{Name: "fs", Command: "npx", Args: []string{"a\x00"}}, "command", "NUL"},
	}
	for _, c := range bad {
		err := c.srv.Check()
		var ierr *InvalidError
		if !errors.As(err, &ierr) || ierr.Field != c.field || !strings.Contains(ierr.Problem, c.words) {
			t.Errorf("%+v: want a %s error about %q, got %v", c.srv, c.field, c.words, err)
		}
	}
}

func TestAMalformedURLsErrorShowsNoPassword(t *testing.T) {
	err := Server{Name: "web", URL: "http://user:hunter2-secret@[::1/mcp"}.Check()
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("got %v", err)
	}
}

func TestParseCommandSplitsWordsAsAShellWould(t *testing.T) {
	for line, want := range map[string][]string{
		`npx -y @modelcontextprotocol/server-filesystem /tmp`: {"npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"},
		`  uvx   mcp-server-git  `:                            {"uvx", "mcp-server-git"},
		`server --dir "/my files" --name 'it''s'`:             {"server", "--dir", "/my files", "--name", "its"},
		`server "say \"hi\" \\ now" a\ b ''`:                  {"server", `say "hi" \ now`, "a b", ""},
		`sh -c 'echo $HOME; exit 1'`:                          {"sh", "-c", "echo $HOME; exit 1"},
	} {
		cmd, args, err := ParseCommand(line)
		if err != nil || !slices.Equal(append([]string{cmd}, args...), want) {
			t.Errorf("%s: got %q %q, %v; want %q", line, cmd, args, err, want)
		}
	}
	for line, words := range map[string]string{
		``:              "empty",
		`   `:           "empty",
		`server "open`:  `a " quote is not closed`,
		`server 'open`:  `a ' quote is not closed`,
		`server trail\`: "lone backslash",
	} {
		_, _, err := ParseCommand(line)
		var ierr *InvalidError
		if !errors.As(err, &ierr) || ierr.Field != "command" || !strings.Contains(ierr.Problem, words) {
			t.Errorf("%q: want a command error about %q, got %v", line, words, err)
		}
	}
}

func TestAListingShowsNoSecret(t *testing.T) {
	l := Server{
		Name: "web", URL: "https://bob:pa55word-x@example.com/mcp?api_key=k3y-k3y-k3y&lang=en",
		Headers: map[string]string{"X-Api-Key": "h3ader-secret", "Authorization": "Bearer t0ken-t0ken"},
	}.Listing()
	if l.URL != "https://bob:xxxxx@example.com/mcp?api_key=xxxxx&lang=xxxxx" || !slices.Equal(l.Headers, []string{"Authorization", "X-Api-Key"}) || l.Transport != TransportHTTP {
		t.Errorf("listing %+v", l)
	}
	s := Server{Name: "fs", Command: "srv", Args: []string{"--verbose"}, Env: map[string]string{"GITHUB_TOKEN": "ghp_secret"}}.Listing()
	if s.Transport != TransportStdio || s.Command != "srv" || !slices.Equal(s.Env, []string{"GITHUB_TOKEN"}) {
		t.Errorf("listing %+v", s)
	}
}
