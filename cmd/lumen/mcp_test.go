package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServerMode, in the environment, makes the test binary an MCP server
// over stdio (TestMain).
const mcpServerMode = "LUMEN_CLI_MCP_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(mcpServerMode) == "serve" {
		srv := sdk.NewServer(&sdk.Implementation{Name: "lumen-cli-test", Version: "1"}, nil)
		srv.AddTool(&sdk.Tool{Name: "echo", Description: "Echo.", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo"}}}, nil
			})
		if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestMCPAddListRemove pins the person's side: a malformed server exits 2,
// one that does not answer exits 1, neither is stored; a stdio server is
// added, listed without its secrets from a file only the person reads
// (and git ignores), and removed.
func TestMCPAddListRemove(t *testing.T) {
	bin, dir := lumenInstance(t)
	run := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--dir", dir)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		var e *exec.ExitError
		if errors.As(err, &e) {
			code = e.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"mcp", "add", "docs", "ftp://example.com/mcp"}, 2, "http:// or https://"},
		{[]string{"mcp", "add", "docs"}, 2, "--command"},
		{[]string{"mcp", "add", "bad__name", "http://127.0.0.1:1/mcp"}, 2, "double underscore"},
		{[]string{"mcp", "add", "docs", "http://127.0.0.1:1/mcp", "--header", "NoColon"}, 2, "Name: value"},
		{[]string{"mcp", "add", "docs", "--command", filepath.Join(dir, "no-such-program")}, 1, "cannot be reached"},
		{[]string{"mcp", "add", "docs", "http://127.0.0.1:1/mcp"}, 1, "cannot be reached"},
		{[]string{"mcp", "remove", "docs"}, 1, "no mcp server is named"},
	} {
		_, errOut, code := run(c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, want %d; stderr %q", c.args, code, c.code, errOut)
		}
	}
	if out, _, _ := run("mcp", "list"); !strings.Contains(out, "no mcp servers added") {
		t.Fatalf("a refused server was stored: %q", out)
	}

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cret-value-42"
	out, errOut, code := run("mcp", "add", "local", "--command", exe, "--env", mcpServerMode+"=serve", "--env", "API_KEY="+secret)
	if code != 0 || !strings.Contains(out, "added mcp server local (stdio): 1 tools") || !strings.Contains(out, "local__echo") {
		t.Fatalf("add over stdio: exit %d, %q %q", code, out, errOut)
	}
	if _, errOut, code := run("mcp", "add", "LOCAL", "--command", exe); code != 2 || !strings.Contains(errOut, "added already") {
		t.Errorf("a name taken: exit %d, %q", code, errOut)
	}
	out, _, _ = run("mcp", "list")
	if !strings.Contains(out, "local  stdio  "+exe) || !strings.Contains(out, "env: API_KEY, "+mcpServerMode) || strings.Contains(out, secret) {
		t.Errorf("list: %q", out)
	}
	out, _, _ = run("mcp", "list", "--json")
	var list struct {
		Servers []struct {
			Name string   `json:"name"`
			Env  []string `json:"env"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Servers) != 1 || list.Servers[0].Name != "local" || strings.Contains(out, secret) {
		t.Errorf("list --json: %v, %q", err, out)
	}
	file := filepath.Join(dir, "mcp_servers.json")
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the servers file: %v, %v", st, err)
	}
	if data, _ := os.ReadFile(file); !bytes.Contains(data, []byte(secret)) {
		t.Errorf("the secret was not kept: %s", data)
	}
	if ignore, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); !bytes.Contains(ignore, []byte("\nmcp_servers.json\n")) {
		t.Errorf(".gitignore does not keep the secrets out of git: %q", ignore)
	}
	if out, _, code := run("mcp", "remove", "local"); code != 0 || !strings.Contains(out, "removed mcp server local") {
		t.Errorf("remove: %d %q", code, out)
	}
	if out, _, _ := run("mcp", "list", "--json"); strings.TrimSpace(out) != `{"servers": []}` && !strings.Contains(out, `"servers": []`) {
		t.Errorf("after remove: %q", out)
	}
}
