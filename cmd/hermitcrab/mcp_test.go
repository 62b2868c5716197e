package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServerMode, in the environment, makes the test binary an MCP server
// over stdio (TestMain).
const mcpServerMode = "HERMITCRAB_CLI_MCP_SERVER"

func mcpServer() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "cli-test", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "echo", Description: "Echo.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo"}}}, nil
		})
	return srv
}

func serveMCPIfAsked() {
	if os.Getenv(mcpServerMode) != "serve" {
		return
	}
	if err := mcpServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func exitCode(err error) int {
	var e *exec.ExitError
	if errors.As(err, &e) {
		return e.ExitCode()
	}
	return 0
}

// TestMCPAddListRemove pins the person's side: a malformed server exits 2,
// one that does not answer exits 1, neither is stored; a stdio server and
// one at a URL with a token are added, listed without their secrets in a
// file only the person reads, and removed.
func TestMCPAddListRemove(t *testing.T) {
	data := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"mcp", "add", "docs", "ftp://example.com/mcp"}, 2, "http:// or https://"},
		{[]string{"mcp", "add", "docs"}, 2, "--command"},
		{[]string{"mcp", "add", "bad__name", "http://127.0.0.1:1/mcp"}, 2, "double underscore"},
		{[]string{"mcp", "add", "docs", "http://127.0.0.1:1/mcp", "--env", "A=b"}, 2, "headers"},
		{[]string{"mcp", "add", "docs", "http://127.0.0.1:1/mcp", "--header", "X-A: v\x01"}, 2, "holds a control character"},
		{[]string{"mcp", "add", "docs", "--command", "true", "--env", "=x"}, 2, `--env: the name before "=" is empty`},
		{[]string{"mcp", "add", "docs", "--command", filepath.Join(data, "no-such-program")}, 1, "cannot be reached"},
		{[]string{"mcp", "add", "docs", "http://127.0.0.1:1/mcp"}, 1, "cannot be reached"},
		{[]string{"mcp", "remove", "docs"}, 1, "no mcp server is named"},
		{[]string{"--provider", "script", "--mcp-connector", "mcp", "list"}, 2, "--provider anthropic"},
		{[]string{"--mcp-call-timeout", "0s", "mcp", "list"}, 2, "--mcp-call-timeout"},
	} {
		_, errOut, err := hc(t, data, "", c.args...)
		if exitCode(err) != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, want %d; stderr %q", c.args, exitCode(err), c.code, errOut)
		}
	}
	if out, _ := mustHC(t, data, "", "mcp", "list"); !strings.Contains(out, "no mcp servers added") {
		t.Fatalf("a refused server was stored: %q", out)
	}

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, errOut := mustHC(t, data, "", "mcp", "add", "local", "--command", exe, "--env", mcpServerMode+"=serve")
	if !strings.Contains(out, "added mcp server local (stdio): 1 tools") || !strings.Contains(out, "local__echo") || strings.Contains(errOut, "warning") {
		t.Errorf("add over stdio said %q, %q", out, errOut)
	}
	// An argument that looks like a secret is warned about, not repeated:
	// mcp list shows arguments.
	out, errOut = mustHC(t, data, "", "mcp", "add", "argsecret", "--command", exe+" --api-token=hunter2", "--env", mcpServerMode+"=serve")
	if !strings.Contains(out, "added mcp server argsecret") || !strings.Contains(errOut, "warning: argument 1 of --command looks like a secret") || strings.Contains(errOut, "hunter2") {
		t.Errorf("an argument like a secret: %q, %q", out, errOut)
	}
	mustHC(t, data, "", "mcp", "remove", "argsecret")
	const token = "s3cret-token-42"
	srv := mcpServer()
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	defer func() { hs.CloseClientConnections(); hs.Close() }()
	if _, errOut, err := hc(t, data, "wrong-token\n", "mcp", "add", "web", hs.URL, "--token-stdin"); exitCode(err) != 1 || strings.Contains(errOut, "wrong-token") {
		t.Errorf("a refused token: exit %d, stderr %q", exitCode(err), errOut)
	}
	out, _ = mustHC(t, data, token+"\n", "mcp", "add", "web", hs.URL, "--token-stdin")
	if !strings.Contains(out, "added mcp server web (http): 1 tools") || strings.Contains(out, token) {
		t.Errorf("add over HTTP said %q", out)
	}
	list, _ := mustHC(t, data, "", "mcp", "list")
	js, _ := mustHC(t, data, "", "mcp", "list", "--json")
	for _, shown := range []string{list, js} {
		if strings.Contains(shown, token) || strings.Contains(shown, "=serve") || !strings.Contains(shown, "Authorization") || !strings.Contains(shown, mcpServerMode) {
			t.Errorf("the listing shows a secret or hides a name:\n%s", shown)
		}
	}
	info, err := os.Stat(filepath.Join(data, "mcp_servers.json"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the servers' file: %v %v", info, err)
	}
	caps, _ := mustHC(t, data, "", "blocks", "show", "capabilities")
	if !strings.Contains(caps, "local__echo") || !strings.Contains(caps, "web__echo") {
		t.Errorf("capabilities does not name the servers' tools:\n%s", caps)
	}
	if out, _ := mustHC(t, data, "", "mcp", "remove", "LOCAL"); out != "removed mcp server local\n" {
		t.Errorf("remove said %q", out)
	}
	if list, _ := mustHC(t, data, "", "mcp", "list"); strings.Contains(list, "local") || !strings.Contains(list, "web") {
		t.Errorf("after remove: %q", list)
	}
}

// TestSkillsListShowsEachLineAndWhatIsLeftOut pins skills list.
func TestSkillsListShowsEachLineAndWhatIsLeftOut(t *testing.T) {
	data := t.TempDir()
	if out, _ := mustHC(t, data, "", "skills", "list"); !strings.Contains(out, "no skills in") {
		t.Errorf("without skills: %q", out)
	}
	for name, text := range map[string]string{"charts": "---\ndescription: Draw charts.\n---\nbody\n", "broken": "no front matter\n"} {
		if err := os.MkdirAll(filepath.Join(data, "skills", name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "skills", name, "SKILL.md"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := mustHC(t, data, "", "skills", "list")
	if !strings.Contains(out, "- charts: Draw charts. (23 bytes in every prompt)") || !strings.Contains(out, "left out: skills/broken/SKILL.md") {
		t.Errorf("skills list: %q", out)
	}
}

// TestSkillsAddAndRemove pins the person's side of installing a skill:
// add prints the line every prompt carries and list shows it; a folder
// list would leave out, or a link out of it, exits 2 with the reason and
// installs nothing; a second add needs --replace; remove uninstalls.
func TestSkillsAddAndRemove(t *testing.T) {
	data := t.TempDir()
	src := filepath.Join(t.TempDir(), "charts")
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(src, "SKILL.md"), "---\ndescription: Draw charts.\n---\nbody\n")
	out, _ := mustHC(t, data, "", "skills", "add", src)
	if want := "added skill charts; every prompt carries:\n- charts: Draw charts. (23 bytes in every prompt)\n"; out != want {
		t.Errorf("add said %q, want %q", out, want)
	}
	if list, _ := mustHC(t, data, "", "skills", "list"); !strings.Contains(list, "- charts: Draw charts.") {
		t.Errorf("list after add: %q", list)
	}
	if _, errOut, err := hc(t, data, "", "skills", "add", src); exitCode(err) != 2 || !strings.Contains(errOut, `a skill named "charts" is installed already: --replace replaces it, 'hermitcrab skills remove charts' removes it`) {
		t.Errorf("a second add: exit %d, %q", exitCode(err), errOut)
	}
	badName := filepath.Join(t.TempDir(), "Charts")
	write(filepath.Join(badName, "SKILL.md"), "---\ndescription: Draw charts.\n---\nbody\n")
	if _, errOut, err := hc(t, data, "", "skills", "add", badName); exitCode(err) != 2 || !strings.Contains(errOut, "(--name gives the skill another name than its folder's)") {
		t.Errorf("add of a folder whose name is no skill's: exit %d, %q", exitCode(err), errOut)
	}
	if out, _ := mustHC(t, data, "", "skills", "add", src, "--replace", "--name", "plots"); !strings.Contains(out, "added skill plots") {
		t.Errorf("add --name: %q", out)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	write(filepath.Join(bad, "SKILL.md"), "no front matter\n")
	if _, errOut, err := hc(t, data, "", "skills", "add", bad); exitCode(err) != 2 || !strings.Contains(errOut, "skills/bad/SKILL.md: it must start with a front matter") {
		t.Errorf("a malformed skill: exit %d, %q", exitCode(err), errOut)
	}
	leak := filepath.Join(t.TempDir(), "leak")
	write(filepath.Join(leak, "SKILL.md"), "---\ndescription: d\n---\n")
	if err := os.Symlink(filepath.Join(data, "mcp_servers.json"), filepath.Join(leak, "servers.json")); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := hc(t, data, "", "skills", "add", leak); exitCode(err) != 2 || !strings.Contains(errOut, "leads out of the folder") {
		t.Errorf("a link out: exit %d, %q", exitCode(err), errOut)
	}
	if out, _ := mustHC(t, data, "", "skills", "remove", "charts"); out != "removed skill charts\n" {
		t.Errorf("remove said %q", out)
	}
	if _, errOut, err := hc(t, data, "", "skills", "remove", "charts"); exitCode(err) != 2 || !strings.Contains(errOut, `no skill is named "charts"`) {
		t.Errorf("remove again: exit %d, %q", exitCode(err), errOut)
	}
	entries, _ := os.ReadDir(filepath.Join(data, "skills"))
	if len(entries) != 1 || entries[0].Name() != "plots" {
		t.Errorf("the skills directory holds %v", entries)
	}
}
