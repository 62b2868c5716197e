package conversation_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/llm"
)

// runTool runs one client tool as the loop would and returns its output;
// a handler error becomes the is_error text the LLM would see.
func runTool(t *testing.T, k *kernel.Kernel, name string, input string) llm.ToolOutput {
	t.Helper()
	h, ok := k.Conversation().Catalogue()[name]
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	out, err := h.Run(context.Background(), json.RawMessage(input))
	if err != nil {
		return llm.ErrorOutput(err.Error())
	}
	return out
}

func TestBlockToolsSayWhatIsWrong(t *testing.T) {
	k, _ := kerneltest.New(t, `{"responses":[]}`)
	cases := []struct{ tool, input, want string }{
		{"block_read", `{"name":"nosuch"}`, "stash"}, // lists the blocks that exist
		{"block_read", `{"name":"purpose","path":"0.7"}`, "digit 7 not present"},
		{"block_read", `{"name":"purpose","path":"0.x"}`, `'x' is not a digit`},
		{"block_write", `{"name":"purpose","content":"x"}`, "path is required"},
		{"block_create", `{"name":"purpose","pscale0":"again"}`, "already exists"},
		{"block_create", `{"name":"../etc","pscale0":"x"}`, "../etc"},
		{"bsp", `{"name":"wake","spindle":"0.9","point":-5}`, "no pscale -5 on this spindle (pscales: 0,-1)"},
		{"set_tools", `{"tools":["block_read","teleport"]}`, "unknown tools teleport"},
		{"clipboard_write", `{"text":"hi"}`, "no web shell page is attached"},
		{"fetch_url", `{"url":"file:///etc/passwd"}`, "want an absolute http(s) URL"},
	}
	for _, c := range cases {
		out := runTool(t, k, c.tool, c.input)
		if !out.IsError || !strings.Contains(out.Content.Text, c.want) {
			t.Errorf("%s %s: is_error=%v %q, want an error containing %q", c.tool, c.input, out.IsError, out.Content.Text, c.want)
		}
	}
}

func TestBlockReadWithANumberKeepsItsDigits(t *testing.T) {
	k, _ := kerneltest.New(t, `{"responses":[]}`)
	runTool(t, k, "block_write", `{"name":"stash","path":"0.1","content":"first"}`)
	out := runTool(t, k, "block_read", `{"name":"stash","path":0.1}`)
	if out.IsError || !strings.Contains(out.Content.Text, `"content":"first"`) {
		t.Fatalf("numeric path: %+v", out)
	}
}

func TestWriteEntryOnAFullNodeSaysToCompress(t *testing.T) {
	k, _ := kerneltest.New(t, `{"responses":[]}`)
	for i := 0; i < 9; i++ {
		if out := runTool(t, k, "write_entry", `{"name":"stash","content":"n"}`); out.IsError {
			t.Fatal(out.Content.Text)
		}
	}
	out := runTool(t, k, "write_entry", `{"name":"stash","content":"tenth"}`)
	if !out.IsError || !strings.Contains(out.Content.Text, "call compress") {
		t.Fatalf("got %+v", out)
	}
}

func TestBlockCreateThenWriteEntry(t *testing.T) {
	k, _ := kerneltest.New(t, `{"responses":[]}`)
	if out := runTool(t, k, "block_create", `{"name":"garden","pscale0":"Plants I tend."}`); out.IsError {
		t.Fatal(out.Content.Text)
	}
	out := runTool(t, k, "write_entry", `{"name":"garden","content":"basil"}`)
	if out.IsError || !strings.Contains(out.Content.Text, `"path":"0.1"`) || kerneltest.Text(t, k, "garden", "0.1") != "basil" {
		t.Fatalf("got %+v", out)
	}
}

// sentTools is the names of the tools a request carried, sorted.
func sentTools(req *llm.Request) string {
	var names []string
	for _, tool := range req.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

func TestTheFirstCallsSendTheBootToolsOnly(t *testing.T) {
	k, p := kerneltest.New(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`)
	if _, err := k.Conversation().Call(context.Background(), []llm.Message{llm.UserText("hi")}, conversation.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(BootTools))
	if got := sentTools(p.Requests()[0]); got != strings.Join(want, ",") {
		t.Fatalf("tools sent: %s", got)
	}
}

func TestSetToolsChangesTheNextCallsToolsAndAlwaysKeepsItself(t *testing.T) {
	k, p := kerneltest.New(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`)
	out := runTool(t, k, "set_tools", `{"tools":["block_read","speak","web_search"]}`)
	if out.IsError || !strings.Contains(out.Content.Text, `"set_tools"`) {
		t.Fatal(out.Content.Text)
	}
	if _, err := k.Conversation().Call(context.Background(), []llm.Message{llm.UserText("hi")}, conversation.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := sentTools(p.Requests()[0]); got != "block_read,set_tools,speak,web_search" {
		t.Fatalf("tools sent: %s", got)
	}
}

func TestSetToolsTakesDefinitions(t *testing.T) {
	k, p := kerneltest.New(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`)
	out := runTool(t, k, "set_tools", `{"tools":[
		{"name":"bsp","description":"Walk a block."},
		{"type":"web_search_20260209","name":"web_search","max_uses":2,"allowed_domains":["example.org"]},
		"code_execution"]}`)
	if out.IsError {
		t.Fatal(out.Content.Text)
	}
	if _, err := k.Conversation().Call(context.Background(), []llm.Message{llm.UserText("hi")}, conversation.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	sent := map[string]llm.Tool{}
	for _, tool := range p.Requests()[0].Tools {
		sent[tool.Name] = tool
	}
	if bsp := sent["bsp"]; bsp.Description != "Walk a block." || len(bsp.InputSchema) == 0 || len(bsp.AllowedCallers) != 1 {
		t.Fatalf("bsp as defined, run by the kernel, callable from code: %+v", bsp)
	}
	ws := sent["web_search"]
	if ws.Type != "web_search_20260209" || string(ws.Options["max_uses"]) != "2" || string(ws.Options["allowed_domains"]) != `["example.org"]` {
		t.Fatalf("web_search as defined: %+v", ws)
	}
	if sent["code_execution"].Type != "code_execution_20250825" || sent["set_tools"].Name == "" {
		t.Fatalf("by name: %+v", sent)
	}
	for _, bad := range []struct{ tools, says string }{
		{`[{"name":"my_tool","input_schema":{"type":"object"}}]`, "unknown tools my_tool"},
		{`[{"type":"web_search_20260209","name":"web_search","max_uses":"many"}]`, `option "max_uses" is "many", want a number`},
		{`[{"type":"web_search_20260209","name":"web_search","bogus":1}]`, `unknown option "bogus"`},
		{`[{"type":"web_fetch_20260209","name":"web_search"}]`, "is not a version of web_search"},
		{`[{"type":"bash_20250124","name":"bsp"}]`, "one of the kernel's own tools"},
		{`[42]`, "give a tool's name or its definition"},
		// Schemas the API refuses: every later call would fail, set_tools
		// included, and the LLM could never change them back.
		{`[{"name":"bsp","input_schema":{"type":"string"}}]`, `input_schema.type: Input should be 'object', got "string"`},
		{`[{"name":"bsp","input_schema":"anything"}]`, "input_schema: Input should be a valid dictionary"},
		{`[{"name":"bsp","input_schema":{"properties":{"name":{"type":"string"}}}}]`, "input_schema.type: Input should be 'object', got null"},
		{`[{"name":"bsp","input_schema":{"type":"object","properties":5}}]`, "not a valid JSON Schema"},
	} {
		out := runTool(t, k, "set_tools", `{"tools":`+bad.tools+`}`)
		if !out.IsError || !strings.Contains(out.Content.Text, bad.says) {
			t.Errorf("set_tools %s: %+v, want an error saying %q", bad.tools, out, bad.says)
		}
	}
	if got, _ := k.Conversation().ActiveTools(context.Background()); len(got) != 4 {
		t.Fatalf("a refused set_tools changed the tools: %+v", got)
	}
}

func TestServerToolsAreLeftOutForOtherProviders(t *testing.T) {
	k, p := kerneltest.New(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`, func(o *kernel.Options) { o.ServerTools = false })
	k.Conversation().Call(context.Background(), []llm.Message{llm.UserText("hi")}, conversation.CallOptions{})
	for _, tool := range p.Requests()[0].Tools {
		if tool.IsServer() {
			t.Fatalf("server tool %s sent with ServerTools off", tool.Name)
		}
	}
}

func TestPTCIsOnForTheReadOnlyToolsUnlessTurnedOff(t *testing.T) {
	for _, off := range []bool{false, true} {
		k, p := kerneltest.New(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`, func(o *kernel.Options) { o.NoPTC = off })
		useTools(t, k, "bsp", "resolve", "write_entry")
		k.Conversation().Call(context.Background(), []llm.Message{llm.UserText("hi")}, conversation.CallOptions{})
		for _, tool := range p.Requests()[0].Tools {
			callable := len(tool.AllowedCallers) == 1 && tool.AllowedCallers[0] == "code_execution_20250825"
			if callable != (!off && slices.Contains(readOnlyTools, tool.Name)) {
				t.Errorf("NoPTC %v: %s has allowed_callers %v", off, tool.Name, tool.AllowedCallers)
			}
		}
	}
	// Without code execution there is nothing to call the tools from.
	k, p := kerneltest.New(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`, func(o *kernel.Options) { o.ServerTools = false })
	k.Conversation().Call(context.Background(), []llm.Message{llm.UserText("hi")}, conversation.CallOptions{})
	for _, tool := range p.Requests()[0].Tools {
		if len(tool.AllowedCallers) > 0 {
			t.Errorf("%s callable from code with no code execution", tool.Name)
		}
	}
}

func TestTheCodeExecutionContainerIsKeptAcrossCalls(t *testing.T) {
	k, p := kerneltest.New(t, `{"responses":[
		{"content":[{"type":"text","text":"ran code"}],"container":{"id":"cntr_7","expires_at":"2026-12-21T00:00:00Z"}},
		{"content":[{"type":"text","text":"again"}]}
	]}`)
	ctx := context.Background()
	k.Conversation().Call(ctx, []llm.Message{llm.UserText("run")}, conversation.CallOptions{})
	k.Conversation().Call(ctx, []llm.Message{llm.UserText("again")}, conversation.CallOptions{})
	if got := p.Requests()[1].Container; got != "cntr_7" {
		t.Fatalf("second call's container %q", got)
	}
}

func TestRecompileRefusesJSXThatDoesNotCompileAndKeepsTheOldShell(t *testing.T) {
	k, _ := kerneltest.New(t, `{"responses":[]}`, func(o *kernel.Options) {
		o.CompileShell = func(_ context.Context, jsx string) error {
			if strings.Contains(jsx, "<div>") && !strings.Contains(jsx, "</div>") {
				return errCompile
			}
			return nil
		}
	})
	good := runTool(t, k, "recompile", `{"jsx":"function A(){return <div></div>}"}`)
	bad := runTool(t, k, "recompile", `{"jsx":"function A(){return <div>}"}`)
	if good.IsError || !good.Stop || !bad.IsError || bad.Stop || !strings.Contains(bad.Content.Text, "1:24: unclosed <div>") {
		t.Fatalf("good %+v bad %+v", good, bad)
	}
	if src := runTool(t, k, "get_source", `{}`); src.Content.Text != "function A(){return <div></div>}" {
		t.Fatalf("get_source %q", src.Content.Text)
	}
}

var errCompile = &compileError{"1:24: unclosed <div>"}

type compileError struct{ msg string }

func (e *compileError) Error() string { return e.msg }

// useTools adds tools to the boot set, as the LLM would with set_tools.
func useTools(t *testing.T, k *kernel.Kernel, names ...string) {
	t.Helper()
	var tools []llm.Tool
	for _, n := range append(slices.Clone(BootTools), names...) {
		tools = append(tools, llm.Tool{Name: n})
	}
	if _, err := k.Conversation().SetTools(context.Background(), tools); err != nil {
		t.Fatal(err)
	}
}

// CleanAPIRequest returns the tools it injects beside the body that
// carries them, so the passthrough computes the anthropic-beta header from
// the tools actually sent (no tool the kernel can set needs a beta value
// today; one that did would get its header from this list).
func TestCleanAPIRequestReturnsTheInjectedTools(t *testing.T) {
	k, _ := kerneltest.New(t, `{"responses":[]}`)
	ctx := context.Background()
	for _, body := range []string{`{"max_tokens":10}`, `{"max_tokens":10,"tools":null}`} {
		r, err := k.Conversation().CleanAPIRequest(ctx, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		out, tools, notes := r.Body, r.Tools, r.Notes
		current, err := k.Conversation().CurrentTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var sent struct {
			Tools []llm.Tool `json:"tools"`
		}
		if err := json.Unmarshal(out, &sent); err != nil {
			t.Fatal(err)
		}
		names := func(list []llm.Tool) []string {
			var out []string
			for _, t := range list {
				out = append(out, t.Name+"/"+t.Type)
			}
			return out
		}
		if len(current) != len(BootTools) || !slices.Equal(names(tools), names(current)) || !slices.Equal(names(sent.Tools), names(current)) {
			t.Fatalf("%s: returned %v, sent %v, want the current %v", body, names(tools), names(sent.Tools), names(current))
		}
		if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "current tools added") }) {
			t.Fatalf("%s: notes %q do not say the tools were added", body, notes)
		}
	}
	r, err := k.Conversation().CleanAPIRequest(ctx, []byte(`{"max_tokens":10,"tools":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	out, tools, notes := r.Body, r.Tools, r.Notes
	if len(tools) != 0 || !strings.Contains(string(out), `"tools":[]`) || slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "tools") }) {
		t.Fatalf("tools: [] became %s %v %q %v", out, tools, notes, err)
	}
}
