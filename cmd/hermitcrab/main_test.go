package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/internal/pgtest"
	"github.com/llmkernels/kernels/llm/llmtest"
	"github.com/llmkernels/kernels/llm/script"
)

var binary string

// TestMain builds the real binary once; every test runs it as a user would.
func TestMain(m *testing.M) {
	serveMCPIfAsked() // this binary is the MCP server of mcp_test.go
	dir, err := os.MkdirTemp("", "hermitcrab-cli")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "hermitcrab")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		panic("building hermitcrab: " + err.Error() + "\n" + string(out))
	}
	code := pgtest.Run(m) // the beach tests start PostgreSQL; Run stops it
	os.RemoveAll(dir)
	os.Exit(code)
}

// hc runs the binary with a data directory and optional standard input.
func hc(t *testing.T, data, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"--data", data}, args...)...)
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "HERMITCRAB_DATA=")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

func mustHC(t *testing.T, data, stdin string, args ...string) (string, string) {
	t.Helper()
	out, errOut, err := hc(t, data, stdin, args...)
	if err != nil {
		t.Fatalf("hermitcrab %v: %v\nstderr: %s", args, err, errOut)
	}
	return out, errOut
}

// TestBlocksListShowsTheDefaultShellWithoutWriting pins that blocks list
// on a new data directory shows the shell a new instance starts with, says
// so, and creates nothing (it only reads).
func TestBlocksListShowsTheDefaultShellWithoutWriting(t *testing.T) {
	data := t.TempDir()
	out, errOut := mustHC(t, data, "", "blocks", "list")
	for _, name := range []string{"capabilities", "constitution", "cook", "history", "purpose", "relationships", "stash", "touchstone", "wake"} {
		if !strings.Contains(out, name+" ") {
			t.Errorf("block %s missing from:\n%s", name, out)
		}
	}
	if !strings.Contains(errOut, "nothing was written") {
		t.Errorf("stderr does not say the shell is not stored: %q", errOut)
	}
	if es, _ := os.ReadDir(data); len(es) != 0 {
		t.Fatalf("blocks list wrote %v into the data directory", es)
	}
}

func TestPromptPrintsTheCompiledPromptAndItsSize(t *testing.T) {
	out, _ := mustHC(t, t.TempDir(), "", "prompt", "--tier", "3")
	if !strings.HasPrefix(out, "[touchstone]") || !strings.Contains(out, "tier 3: ") || !strings.Contains(out, "tokens (from the wake block's instructions)") {
		t.Fatalf("got:\n%s", out)
	}
}

func TestBSPPrintsJSONAndPathErrorsExitNonZero(t *testing.T) {
	data := t.TempDir()
	out, _ := mustHC(t, data, "", "bsp", "wake", "0.9.6", "-2")
	var r struct {
		Mode  string
		Point struct{ Text string }
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Mode != "point" || r.Point.Text == "" {
		t.Fatalf("bsp output %s (%v)", out, err)
	}
	_, errOut, err := hc(t, data, "", "blocks", "show", "purpose", "0.7")
	if err == nil || !strings.Contains(errOut, `block "purpose": path 0.7: digit 7 not present`) {
		t.Fatalf("err %v stderr %q", err, errOut)
	}
}

func TestBootPrintsTheShellTheLLMBuilt(t *testing.T) {
	data := t.TempDir()
	out, errOut := mustHC(t, data, "", "boot", "--print", "--provider", "script", "--script", "testdata/boot.json")
	if !strings.Contains(out, "function Shell(props)") {
		t.Fatalf("stdout: %s", out)
	}
	// The boot's cost is metered at the deep tier's model and labelled
	// once as what it would charge.
	for _, want := range []string{"responses are scripted from testdata/boot.json", "→ block_read", "→ recompile",
		"shell 1 built (180 characters of JSX); cost $0.0210, 0% of input from cache (scripted: what claude-opus-4-6 would charge; nothing is charged)\n"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestChatPersistsAndShowsToolCalls(t *testing.T) {
	data := t.TempDir()
	out, errOut := mustHC(t, data, "please remember I like short answers\n", "chat", "--provider", "script", "--script", "testdata/chat.json")
	if strings.TrimSpace(out) != "Noted in my stash: short answers." || !strings.Contains(errOut, "→ block_write") {
		t.Fatalf("stdout %q stderr %s", out, errOut)
	}
	shown, _ := mustHC(t, data, "", "blocks", "show", "stash", "0.1")
	if !strings.Contains(shown, "The person likes short answers.") {
		t.Fatalf("stash 0.1: %s", shown)
	}
	history, _ := mustHC(t, data, "", "blocks", "show", "history", "0.1")
	if !strings.Contains(history, "Noted in my stash") {
		t.Fatalf("history 0.1: %s", history)
	}
}

func TestExportImportRoundTrip(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	mustHC(t, a, "", "bsp", "purpose") // seeds a
	file := filepath.Join(t.TempDir(), "shell.json")
	mustHC(t, a, "", "blocks", "export", "--out", file)
	out, _ := mustHC(t, b, "", "blocks", "import", file)
	if !strings.Contains(out, "imported 9 blocks") {
		t.Fatalf("import: %s", out)
	}
	listA, _ := mustHC(t, a, "", "blocks", "list")
	listB, _ := mustHC(t, b, "", "blocks", "list")
	if listA != listB {
		t.Fatalf("round trip changed the blocks:\n%s\n---\n%s", listA, listB)
	}
	again, _ := mustHC(t, b, "", "blocks", "import", file)
	if !strings.Contains(again, "kept 9 existing blocks (use --replace to overwrite)") {
		t.Fatalf("second import: %s", again)
	}
}

func TestImportALocalStorageDumpNeverImportsTheKey(t *testing.T) {
	data := t.TempDir()
	out, errOut := mustHC(t, data, "", "blocks", "import", "testdata/localstorage.json")
	if strings.Contains(out+errOut, "sk-ant-never-import-me") {
		t.Fatal("the API key was printed")
	}
	shown, _ := mustHC(t, data, "", "blocks", "show", "purpose")
	if !strings.Contains(shown, "Help the person build kernels.") {
		t.Fatalf("purpose from the dump: %s", shown)
	}
	exported, _ := mustHC(t, data, "", "blocks", "export")
	if strings.Contains(exported, "sk-ant-never-import-me") {
		t.Fatal("the API key was stored")
	}
}

func TestReadCommandsPrintOneJSONDocumentWithJSON(t *testing.T) {
	data := t.TempDir()
	out, _ := mustHC(t, data, "", "blocks", "list", "--json")
	var list []struct {
		Name    string `json:"name"`
		Pscale0 string `json:"pscale0"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 9 || list[0].Name != "capabilities" || list[0].Pscale0 == "" {
		t.Fatalf("blocks list --json: %v\n%s", err, out)
	}
	out, _ = mustHC(t, data, "", "prompt", "--tier", "3", "--json")
	var p struct {
		Tier       int    `json:"tier"`
		Text       string `json:"text"`
		Characters int    `json:"characters"`
		Tokens     int    `json:"tokens"`
		Sections   []struct {
			Instruction string `json:"instruction"`
		} `json:"sections"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.Tier != 3 || p.Characters != len([]rune(p.Text)) || p.Tokens == 0 || len(p.Sections) == 0 {
		t.Fatalf("prompt --json: %v\n%.300s", err, out)
	}
	for _, args := range [][]string{{"blocks", "export", "--json"}, {"blocks", "show", "wake", "--json"}, {"blocks", "show", "wake", "0.9", "--json"}, {"bsp", "--json", "wake", "0.9.6", "-2"}} {
		out, _ := mustHC(t, data, "", args...)
		if !json.Valid([]byte(out)) || strings.Contains(out, `\u003c`) {
			t.Errorf("%v: not one plain JSON document:\n%.300s", args, out)
		}
	}
	// An error prints nothing on stdout.
	out, _, err := hc(t, data, "", "blocks", "show", "nosuch", "--json")
	if err == nil || out != "" {
		t.Fatalf("stdout %q, err %v", out, err)
	}
}

func TestExitStatusesAndVersion(t *testing.T) {
	data := t.TempDir()
	cases := map[int][][]string{
		0: {{"blocks", "list"}, {"--version"}, {"blocks", "--help"}},
		1: {{"blocks", "show", "nosuch"}, {"boot", "--provider", "anthropic"}},
		2: {{"blocks", "show"}, {"blocks", "bogus"}, {"bogus"}, {"blocks", "list", "--bogus"}, {"prompt", "--tier", "x"}, {"serve", "extra"},
			// values only the command can see are wrong
			{"prompt", "--tier", "9"}, {"chat", "--tier", "0", "--provider", "script", "--script", "testdata/boot.json"},
			{"boot", "--provider", "bogus"}, {"boot", "--provider", "script"}, {"serve", "--provider", "bogus", "--addr", "127.0.0.1:0"},
			{"wake", "--provider", "gemini"}, {"wake", "--daemon", "--interval", "0", "--provider", "script", "--script", "testdata/boot.json"},
			{"blocks", "list", "--data", ""}, {"blocks", "list", "--max-block-bytes", "0"}, {"blocks", "list", "--max-wakes", "-1"},
			{"wake", "status", "--max-wake-cost", "NaN"}, {"wake", "status", "--max-wake-cost", "-1"},
			{"wake", "status", "--max-wake-cost", "Inf"}, {"wake", "status", "--max-wake-cost", "1e308"},
			{"beach", "passport", "list", "--limit", "-1"}, {"beach", "marks", "https://example.org", "--limit", "-5"}, {"beach", "inbox", "--after", "-1"},
			{"beach", "serve", "--window", "0"}, {"beach", "serve", "--agent-rate", "NaN"}, {"beach", "serve", "--addr-rate", "0"},
			{"beach", "serve", "--max-body", "-1"}, {"beach", "serve", "--addr-burst", "0"},
			// an address no listener can take, or a script not given
			{"serve", "--addr", ":99999", "--provider", "script", "--script", "testdata/boot.json"}, {"serve", "--addr", "8420", "--provider", "script", "--script", "testdata/boot.json"},
			{"beach", "serve", "--addr", ":99999"}, {"wake", "--daemon", "--addr", "127.0.0.1:65536", "--provider", "script", "--script", "testdata/boot.json"},
			{"serve", "--provider", "script", "--addr", "127.0.0.1:0"}},
	}
	for want, list := range cases {
		for _, args := range list {
			_, stderr, err := hc(t, data, "", args...)
			got := 0
			if e, ok := err.(*exec.ExitError); ok {
				got = e.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%v: exit %d, want %d (stderr %q)", args, got, want, stderr)
			}
			if want == 2 && !strings.Contains(stderr, "--help' for usage.") {
				t.Errorf("%v: stderr %q lacks the --help hint", args, stderr)
			}
		}
	}
	out, _ := mustHC(t, data, "", "--version")
	if !strings.HasPrefix(out, "hermitcrab ") || !strings.Contains(out, "go1.") {
		t.Fatalf("--version: %q", out)
	}
}

func TestKeySetIsUsedByChatAndKeyClearRemovesIt(t *testing.T) {
	data := t.TempDir()
	s, err := script.Parse([]byte(`{"responses":[{"content":[{"type":"thinking","thinking":"hi","signature":"s"},{"type":"text","text":"hello with the stored key"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	fake := llmtest.NewServer(s)
	defer fake.Close()
	out, errOut := mustHC(t, data, "sk-ant-stored-key\n", "key", "set")
	if !strings.Contains(out, "key stored") || strings.Contains(out+errOut, "sk-ant-stored-key") {
		t.Fatalf("key set: %q %q", out, errOut)
	}
	if info, err := os.Stat(filepath.Join(data, "api_key")); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the key file: %v %v", info, err)
	}
	out, _ = mustHC(t, data, "hello\n", "chat", "--base-url", fake.URL)
	got := fake.Received()
	if strings.TrimSpace(out) != "hello with the stored key" || len(got) != 1 || got[0].Header.Get("x-api-key") != "sk-ant-stored-key" {
		t.Fatalf("chat with the stored key: %q, %d requests", out, len(got))
	}
	if out, _ := mustHC(t, data, "", "key", "clear"); !strings.Contains(out, "stored key removed") {
		t.Fatalf("key clear: %q", out)
	}
	if _, err := os.Stat(filepath.Join(data, "api_key")); !os.IsNotExist(err) {
		t.Fatalf("the key file is still there: %v", err)
	}
	if out, _ := mustHC(t, data, "", "key", "clear"); !strings.Contains(out, "no key was stored") {
		t.Fatalf("key clear again: %q", out)
	}
	if _, _, err := hc(t, data, "", "key", "set"); err == nil {
		t.Fatal("key set with no key given succeeded")
	}
}

// TestToolsResetIsTheWayOutOfAToolSetThatFailsEveryCall pins the recovery
// from a set_tools whose definitions make every request too long: the
// failing call says what to do, tools list shows the size, and tools reset
// puts the boot tools back so the next call goes.
func TestToolsResetIsTheWayOutOfAToolSetThatFailsEveryCall(t *testing.T) {
	data := t.TempDir()
	huge := strings.Repeat("Reads a block. ", 20000)
	scriptFile := filepath.Join(t.TempDir(), "tools.json")
	js := `{"responses": [
  {"match": {"last_user_contains": "bigger tools"}, "response": {"content": [
    {"type": "thinking", "thinking": "Bigger tools.", "signature": "sig-1"},
    {"type": "tool_use", "id": "toolu_1", "name": "set_tools", "input": {"tools": [{"name": "block_read", "description": "` + huge + `"}, "block_write"]}}]}},
  {"match": {"tool_result_for": "set_tools"}, "response": {"content": [{"type": "thinking", "thinking": "Done.", "signature": "sig-2"}, {"type": "text", "text": "Tools set."}]}},
  {"match": {"last_user_contains": "hello again"}, "error": {"status": 400, "type": "invalid_request_error", "message": "prompt is too long: 250000 tokens > 200000 maximum"}},
  {"match": {"last_user_contains": "after the reset"}, "response": {"content": [{"type": "text", "text": "Back with the boot tools."}]}}
]}`
	if err := os.WriteFile(scriptFile, []byte(js), 0o600); err != nil {
		t.Fatal(err)
	}
	chat := func(line string) (string, string, error) {
		return hc(t, data, line+"\n", "chat", "--provider", "script", "--script", scriptFile, "--conversation", "t")
	}
	if out, errOut, err := chat("take bigger tools"); err != nil || !strings.Contains(out, "Tools set.") {
		t.Fatalf("set_tools: %v\n%s\n%s", err, out, errOut)
	}
	out, errOut, err := chat("hello again") // chat says the error and goes on
	if !strings.Contains(out+errOut, "prompt is too long") || !strings.Contains(out+errOut, "hermitcrab tools reset") {
		t.Fatalf("the call that is too long does not say the way out: %v\n%s\n%s", err, out, errOut)
	}
	if list, _ := mustHC(t, data, "", "tools", "list"); !strings.Contains(list, "block_read (a definition of 3000") {
		t.Fatalf("tools list: %s", list)
	}
	var doc struct {
		Tools []struct {
			Name       string          `json:"name"`
			Characters int             `json:"characters"`
			Definition json.RawMessage `json:"definition"`
		} `json:"tools"`
		DefinitionCharacters int `json:"definition_characters"`
	}
	out, _ = mustHC(t, data, "", "tools", "list", "--json")
	err = json.Unmarshal([]byte(out), &doc)
	var def bytes.Buffer // as sent: compact
	if err == nil && len(doc.Tools) > 0 {
		err = json.Compact(&def, doc.Tools[0].Definition)
	}
	if err != nil || len(doc.Tools) < 2 || doc.Tools[0].Name != "block_read" || doc.Tools[0].Characters != def.Len() ||
		doc.Tools[0].Characters < 300000 || doc.DefinitionCharacters != doc.Tools[0].Characters {
		t.Fatalf("tools list --json: %v\n%.400s", err, out)
	}
	for _, tool := range doc.Tools[1:] { // block_write and the tools always kept: by name
		if tool.Characters != 0 || tool.Definition != nil {
			t.Errorf("tools list --json: %s has a definition of %d characters", tool.Name, tool.Characters)
		}
	}
	if msg, _ := mustHC(t, data, "", "tools", "reset"); !strings.Contains(msg, "the boot tools are back") {
		t.Fatalf("tools reset: %s", msg)
	}
	if list, _ := mustHC(t, data, "", "tools", "list"); !strings.Contains(list, "definitions given with set_tools: 0 characters") || strings.Contains(list, "a definition") {
		t.Fatalf("tools list after the reset: %s", list)
	}
	if out, errOut, err := chat("after the reset"); err != nil || !strings.Contains(out, "Back with the boot tools.") {
		t.Fatalf("after the reset: %v\n%s\n%s", err, out, errOut)
	}
}

// TestBSPReadsFlagsAfterTheArguments pins that bsp reads flags wherever
// they come, as blocks show does, while a negative POINT stays a number:
// --data after NAME used to be read as an address, and the command opened
// the default store under $HOME instead.
func TestBSPReadsFlagsAfterTheArguments(t *testing.T) {
	data, home := t.TempDir(), t.TempDir()
	mustHC(t, data, "", "tools", "reset") // seeds the default shell: the wake block
	mustHC(t, data, "", "blocks", "import", "--replace", "testdata/localstorage.json")
	for _, args := range [][]string{
		{"bsp", "purpose", "--data", data},
		{"bsp", "purpose", "--data=" + data, "--json"},
		{"bsp", "wake", "0.9", "--json", "--data", data},
		{"bsp", "wake", "0.9.6", "-2", "--data", data, "--json"},
		{"bsp", "--json", "wake", "0.9.6", "--data", data, "-2"},
		{"bsp", "--data", data, "wake", "0.9.6", "--", "-2"},
		{"--data", data, "bsp", "wake", "0.9.6", "-2"},
		{"blocks", "show", "purpose", "--data", data},
	} {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME=", "HERMITCRAB_DATA=")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil || !json.Valid(out.Bytes()) || strings.Contains(errOut.String(), "no store") {
			t.Errorf("hermitcrab %v: %v\nstdout %.200s\nstderr %s", args, err, out.String(), errOut.String())
		}
		want := "Help the person build kernels."
		if args[1] == "wake" || args[2] == "wake" || args[3] == "wake" {
			want = `"mode": "`
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("hermitcrab %v: %.300s", args, out.String())
		}
	}
	if es, _ := os.ReadDir(home); len(es) != 0 {
		t.Errorf("a command opened the default data directory under $HOME: %v", es)
	}
	for _, args := range [][]string{{"bsp", "wake", "-x"}, {"bsp", "wake", "--tier", "3"}, {"bsp", "--json"}, {"bsp", "a", "b", "c", "d"}} {
		if _, stderr, err := hc(t, data, "", args...); err == nil || err.(*exec.ExitError).ExitCode() != 2 || !strings.Contains(stderr, "Run 'hermitcrab bsp --help'") {
			t.Errorf("hermitcrab %v: %v, stderr %q; want exit 2", args, err, stderr)
		}
	}
	if out, _ := mustHC(t, data, "", "bsp", "--help"); !strings.Contains(out, "Flags may come") {
		t.Errorf("bsp --help: %s", out)
	}
}

// What the model says, and what it writes into blocks, reaches the
// terminal inert: a reply that retitles the window and clears the screen
// shows its escapes as text (docs/configuration.md, text the user did not
// write).
func TestModelTextReachesTheTerminalInert(t *testing.T) {
	data := t.TempDir()
	const hostile = `\u001b]0;pwned\u0007\u001b[2J`
	scriptFile := filepath.Join(t.TempDir(), "hostile.json")
	js := `{"responses": [
  {"match": {"last_user_contains": "hello"}, "response": {"content": [
    {"type": "thinking", "thinking": "Write.", "signature": "sig-1"},
    {"type": "tool_use", "id": "toolu_1", "name": "block_write", "input": {"name": "stash", "path": "0", "content": "stash` + hostile + `"}}]}},
  {"match": {"tool_result_for": "block_write"}, "response": {"content": [{"type": "thinking", "thinking": "Done.", "signature": "sig-2"}, {"type": "text", "text": "line one\n` + hostile + `line two"}]}}
]}`
	if err := os.WriteFile(scriptFile, []byte(js), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut := mustHC(t, data, "hello\n", "chat", "--provider", "script", "--script", scriptFile)
	if want := "line one\n" + `\x1b]0;pwned\a\x1b[2J` + "line two\n"; out != want {
		t.Errorf("chat printed %q, want %q", out, want)
	}
	list, _ := mustHC(t, data, "", "blocks", "list")
	if !strings.Contains(list, `stash\x1b]0;pwned\a\x1b[2J`) {
		t.Errorf("blocks list does not show the escapes as text:\n%q", list)
	}
	for name, s := range map[string]string{"chat stdout": out, "chat stderr": errOut, "blocks list": list} {
		if strings.ContainsAny(s, "\x1b\x07") {
			t.Errorf("%s printed a raw control character:\n%q", name, s)
		}
	}
}

// An error from the API quotes its message, text the user did not write:
// chat prints it inert and goes on.
func TestChatErrorQuotingTheAPIIsInert(t *testing.T) {
	data := t.TempDir()
	const hostile = `\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202e`
	scriptFile := filepath.Join(t.TempDir(), "hostile.json")
	js := `{"responses": [{"error": {"status": 400, "type": "invalid_request_error", "message": "refused` + hostile + `"}}]}`
	if err := os.WriteFile(scriptFile, []byte(js), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut := mustHC(t, data, "hello\n", "chat", "--provider", "script", "--script", scriptFile)
	if !strings.Contains(errOut, `error: llm: HTTP 400 invalid_request_error: refused\x1b]0;pwned\a\x1b[2J\u009b31m\u202e (nothing was saved`) {
		t.Errorf("chat does not quote the API's message inert:\n%q", errOut)
	}
	if s := out + errOut; strings.ContainsAny(s, "\x1b\x07\u009b\u202e") {
		t.Errorf("chat printed a raw control character:\n%q", s)
	}
}

// An option the kernel refuses is a usage error naming the flag (or the
// argument) that set it: the kernel names the option, the command its flag.
func TestAnOptionTheKernelRefusesNamesItsFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"blocks", "list", "--web-allow", "localhost:8080"}, `--web-allow "localhost:8080"`},
		{[]string{"blocks", "list", "--web-deny", "http://intranet"}, `--web-deny "http://intranet"`},
		{[]string{"blocks", "show", "wake", "0.x"}, "ADDRESS"},
		{[]string{"prompt", "--shell", "/no/such/shell.json"}, "--shell"},
		{[]string{"beach", "sign", "passport", "{not json"}, "BODY"},
		{[]string{"beach", "serve", "--window", "-1s"}, "--window -1s: give how far"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--allow-host", "http://proxy.example"}, `--allow-host "http://proxy.example": give`},
		{[]string{"beach", "serve", "--addr", "127.0.0.1:0", "--allow-host", "*"}, `--allow-host "*": give`},
		{[]string{"serve", "--addr", "0.0.0.0:0", "--token", "short"}, `--token is 5 characters long, short enough to guess`},
	} {
		_, errOut, err := hc(t, t.TempDir(), "", c.args...)
		if exitStatus(t, err) != 2 || !strings.Contains(errOut, c.says) || !strings.Contains(errOut, "--help' for usage.") {
			t.Errorf("%v: %v %q", c.args, err, errOut)
		}
	}
	// An address the kernel reads inside another option keeps its context
	// (the offer it is in) and is not taken for ADDRESS.
	_, errOut, err := hc(t, t.TempDir(), "", "beach", "passport", "publish", "--name", "a", "--offer", "purpose 0.x")
	if exitStatus(t, err) != 1 || !strings.Contains(errOut, `offers "purpose 0.x"`) || strings.Contains(errOut, "ADDRESS") {
		t.Errorf("a malformed offer: %v %q", err, errOut)
	}
}

// A key the API refuses fails every line after it: chat does not ask for
// the line again but ends, saving nothing, with the way to fix the key.
func TestChatEndsOnARefusedKeyNamingTheFix(t *testing.T) {
	data := t.TempDir()
	scriptFile := filepath.Join(t.TempDir(), "auth.json")
	js := `{"responses": [{"error": {"status": 401, "type": "authentication_error", "message": "invalid x-api-key"}},
  {"response": {"content": [{"type": "text", "text": "never reached"}]}}]}`
	if err := os.WriteFile(scriptFile, []byte(js), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := hc(t, data, "hello\nagain\n", "chat", "--provider", "script", "--script", scriptFile)
	if exitStatus(t, err) != 1 || strings.Contains(out, "never reached") {
		t.Fatalf("chat went on after a refused key: %v\n%s\n%s", err, out, errOut)
	}
	if strings.Contains(errOut, "say it again") || !strings.Contains(errOut, "refused the API key") || !strings.Contains(errOut, "nothing of this exchange was saved") {
		t.Errorf("the refusal does not name the fix:\n%s", errOut)
	}
}

// A line over chat's limit (1 MiB: a file piped in by mistake) ends chat
// with a message a person reads, not the line reader's own words.
func TestChatRefusesAHugeLineInWords(t *testing.T) {
	_, errOut, err := hc(t, t.TempDir(), strings.Repeat("a", 2<<20)+"\n", "chat", "--provider", "script", "--script", filepath.Join("testdata", "chat.json"))
	if exitStatus(t, err) != 1 || strings.Contains(errOut, "bufio") || !strings.Contains(errOut, "1 MiB") {
		t.Fatalf("a 2 MiB line: %v\n%s", err, errOut)
	}
}

// An answer whose stream breaks is asked for again: chat's standard output
// (a file here) shows the partial text, ended by its own line and the
// cut-off line, then the whole answer, never the two run together; the
// conversation keeps the whole answer only.
func TestChatToAFileMarksAnAnswerCutOffAndAskedAgain(t *testing.T) {
	const answer = "alpha beta gamma delta epsilon zeta eta theta"
	s, err := script.Parse([]byte(`{"responses":[{"response": {"content": [{"type": "text", "text": "` + answer + `"}]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	fake := llmtest.NewServer(s)
	defer fake.Close()
	fake.BreakStream(llmtest.StreamFault{After: 8, Drop: true})
	data := t.TempDir()
	cmd := exec.Command(binary, "--data", data, "chat", "--base-url", fake.URL)
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=sk-ant-test", "HERMITCRAB_DATA=")
	cmd.Stdin = strings.NewReader("hello\n")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, errOut.String())
	}
	partial, rest, ok := strings.Cut(string(out), "\n[the answer was cut off; asking again]\n")
	if !ok || partial == "" || !strings.HasPrefix(answer, partial) || rest != answer+"\n" {
		t.Fatalf("standard output %q\nstderr %s", out, errOut.String())
	}
	h, _ := mustHC(t, data, "", "blocks", "show", "history")
	if strings.Count(h, "alpha") != 1 || !strings.Contains(h, answer) {
		t.Fatalf("the history keeps more or less than the whole answer:\n%s", h)
	}
}
