package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServerMode, in the environment, makes the test binary an MCP server
// over stdio (TestMain).
const mcpServerMode = "LUMEN_CLI_MCP_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(mcpServerMode) == "serve" {
		srv := sdk.NewServer(&sdk.Implementation{Name: "lumen-cli-test", Version: "1"}, nil)
		text := func(s string) *sdk.CallToolResult {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
		}
		srv.AddTool(&sdk.Tool{Name: "echo", Description: "Echo.", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return text("echo \x1b[31mred\u202e"), nil
			})
		srv.AddTool(&sdk.Tool{Name: "slow", Description: "Sleeps.", InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				select {
				case <-ctx.Done():
				case <-time.After(8 * time.Second):
				}
				return text("slept"), nil
			})
		srv.AddTool(&sdk.Tool{Name: "big", Description: "Talks.", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return text(strings.Repeat("blah ", 1000)), nil
			})
		srv.AddTool(&sdk.Tool{Name: "photo", Description: "Photographs.", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "the view:"}, &sdk.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")}}}, nil
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
		if err := cmd.Run(); cmd.ProcessState == nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
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
		// No token on stdin (here, its end at once) is refused, not stored
		// as an empty "Bearer ".
		{[]string{"mcp", "add", "docs", "http://127.0.0.1:1/mcp", "--token-stdin"}, 2, "standard input held no token"},
	} {
		_, errOut, code := run(c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, want %d; stderr %q", c.args, code, c.code, errOut)
		}
	}
	blank := exec.Command(bin, "mcp", "add", "docs", "http://127.0.0.1:1/mcp", "--token-stdin", "--dir", dir)
	blank.Stdin = strings.NewReader("  \n")
	if b, _ := blank.CombinedOutput(); blank.ProcessState.ExitCode() != 2 || !strings.Contains(string(b), "standard input held no token") {
		t.Errorf("a blank token line: exit %d\n%s", blank.ProcessState.ExitCode(), b)
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
	if code != 0 || !strings.Contains(out, "added mcp server local (stdio): 4 tools") || !strings.Contains(out, "local__echo") {
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

// TestMCPToolsInTheActionLoop pins the loops' side: THINK is offered the
// server's tools beside the skills, with their descriptions and schemas;
// ACT calls the one chosen and every call is a memory. What the server
// answers is inert; a call slower than --skill-timeout or longer than
// --skill-output-cap is a failed outcome, and the chat goes on.
func TestMCPToolsInTheActionLoop(t *testing.T) {
	bin, dir := lumenInstance(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "mcp", "add", "local", "--command", exe, "--env", mcpServerMode+"=serve", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("add: %v\n%s", err, out)
	}
	text := func(s string) map[string]any {
		return map[string]any{"content": []map[string]any{{"type": "text", "text": s}}}
	}
	var entries []any
	for _, tool := range []string{"echo", "slow", "big", "photo"} {
		think := fmt.Sprintf(`{"situation": "asked", "candidates": [{"action": "use %[1]s", "skill": "local__%[1]s", "input": {"text": "hi"}, "predicted_outcome": "an answer", "counterfactual": "none"}]}`, tool)
		entries = append(entries,
			// The tool is offered with its description and schema.
			map[string]any{"match": map[string]any{"system_contains": `local__` + tool + `: ` + map[string]string{"echo": "Echo.", "slow": "Sleeps.", "big": "Talks.", "photo": "Photographs."}[tool], "last_user_contains": "please " + tool}, "response": text(think)},
			map[string]any{"match": map[string]any{"system_contains": "step: decide"}, "response": text(`{"alignments": [{"candidate": 1, "values": [], "goals": [], "direct": true}], "preference": [1], "rationale": "asked"}`)},
			map[string]any{"match": map[string]any{"system_contains": "step: record"}, "response": text(`{"outcome": "done", "delta": 0, "delta_explanation": "as predicted", "changes": []}`)},
			map[string]any{"match": map[string]any{"system_contains": "step: trigger"}, "response": text(`{"tension_values": [], "tension_why": "", "self_examination_quote": ""}`)})
	}
	data, _ := json.Marshal(map[string]any{"responses": entries})
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "chat", "--provider", "script", "--script", script, "--skill-timeout", "1s", "--skill-output-cap", "1000", "--dir", dir)
	cmd.Stdin = strings.NewReader("please echo\nplease slow\nplease big\nplease photo\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "memory", "--all", "--json", "--dir", dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	var mems []struct {
		Description string `json:"description"`
	}
	if err := json.Unmarshal(out, &mems); err != nil {
		t.Fatal(err)
	}
	acts := map[string]string{}
	for _, m := range mems {
		if rest, ok := strings.CutPrefix(m.Description, "ACT: called MCP tool local__"); ok {
			tool, _, _ := strings.Cut(rest, " ")
			acts[tool] = m.Description
		}
	}
	if a := acts["echo"]; !strings.Contains(a, `succeeded; output: echo \x1b[31mred\u202e`) {
		t.Errorf("echo: the answer is not there, or not inert: %q", a)
	}
	if a := acts["slow"]; !strings.Contains(a, "failed: mcp server \"local\" did not answer within 1s") {
		t.Errorf("slow: %q", a)
	}
	if a := acts["big"]; !strings.Contains(a, "failed: the MCP tool answered 5000 bytes, more than --skill-output-cap (1000)") {
		t.Errorf("big: %q", a)
	}
	// lumen reads answers as text: an image is named in a line.
	if a := acts["photo"]; !strings.Contains(a, "the view:") || !strings.Contains(a, "[image of type image/png left out: this kernel reads tool results as text]") {
		t.Errorf("photo: %q", a)
	}
	if strings.ContainsAny(string(out), "\x1b\u202e") {
		t.Errorf("a control character reached the memory raw")
	}

	// The explore loop may investigate with a tool as with a skill.
	explore := `{"considered": [{"question": "What echoes?", "what_would_change": "little"}], "question": "What echoes?", "why": "curiosity", "skill": "local__echo", "input": {"text": "hi"}}`
	data, _ = json.Marshal(map[string]any{"responses": []any{map[string]any{"match": map[string]any{"system_contains": "step: explore"}, "response": text(explore)}}})
	if err := os.WriteFile(script, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "run", "--cycles", "2", "--interval", "0", "--provider", "script", "--script", script, "--dir", dir).CombinedOutput(); err != nil ||
		!strings.Contains(string(out), `EXPLORE: called MCP tool local__echo in`) || !strings.Contains(string(out), `echo \x1b[31mred`) {
		t.Errorf("run: %v\n%s", err, out)
	}
}

// TestMCPServerDownLeavesTheLoopWithItsSkills: a server that cannot be
// reached when THINK asks, or a servers file edited into a wrong shape,
// is named among what is not usable, its tools are not offered, and the
// loop goes on with the skills.
func TestMCPServerDownLeavesTheLoopWithItsSkills(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		change func(dir string, data []byte) []byte
		note   string
	}{
		{"down", func(dir string, data []byte) []byte {
			// The server's program goes away after it was added.
			gone, _ := json.Marshal(filepath.Join(dir, "gone"))
			quoted, _ := json.Marshal(exe)
			return bytes.Replace(data, quoted, gone, 1)
		}, `mcp server "local" cannot be reached`},
		{"file", func(string, []byte) []byte { return []byte(`{"servers": [{"nmae": "x"}]}`) }, "the MCP servers are not offered: read mcp servers from"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin, dir := lumenInstance(t)
			if out, err := exec.Command(bin, "mcp", "add", "local", "--command", exe, "--env", mcpServerMode+"=serve", "--dir", dir).CombinedOutput(); err != nil {
				t.Fatalf("add: %v\n%s", err, out)
			}
			file := filepath.Join(dir, "mcp_servers.json")
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, c.change(dir, data), 0o600); err != nil {
				t.Fatal(err)
			}
			text := func(s string) map[string]any {
				return map[string]any{"content": []map[string]any{{"type": "text", "text": s}}}
			}
			script, _ := json.Marshal(map[string]any{"responses": []any{
				map[string]any{"match": map[string]any{"system_contains": c.note}, "response": text(`{"situation": "hello", "candidates": [{"action": "answer", "skill": "chat", "input": {"message": "still here"}, "predicted_outcome": "shown", "counterfactual": "none"}]}`)},
				map[string]any{"match": map[string]any{"system_contains": "step: decide"}, "response": text(`{"alignments": [{"candidate": 1, "values": [], "goals": [], "direct": true}], "preference": [1], "rationale": "asked"}`)},
				map[string]any{"match": map[string]any{"system_contains": "step: record"}, "response": text(`{"outcome": "done", "delta": 0, "delta_explanation": "as predicted", "changes": []}`)},
				map[string]any{"match": map[string]any{"system_contains": "step: trigger"}, "response": text(`{"tension_values": [], "tension_why": "", "self_examination_quote": ""}`)},
			}})
			path := filepath.Join(t.TempDir(), "script.json")
			if err := os.WriteFile(path, script, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "chat", "--provider", "script", "--script", path, "--dir", dir)
			cmd.Stdin = strings.NewReader("hello\n")
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "still here") {
				t.Fatalf("chat: %v\n%s", err, out)
			}
		})
	}
}
