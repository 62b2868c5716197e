package kernel_test

// The kernel and the person's MCP servers: real servers (the go-sdk's,
// over stdio in this test binary started again as a command, and over
// streamable HTTP; and the beach's own MCP endpoint), the scripted LLM.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/mcp"
	"github.com/llmkernels/kernels/llm/script"
)

// serverMode, in the environment, makes this binary an MCP server on its
// stdin and stdout ("serve"), or a command that answers what is not MCP
// ("garbage").
const serverMode = "HERMITCRAB_MCP_TEST_SERVER"

// secretCalls counts the calls of the secret tool an HTTP test server
// (in this process) ran.
var secretCalls atomic.Int32

func TestMain(m *testing.M) {
	switch os.Getenv(serverMode) {
	case "serve":
		if err := kerneltest.MCPServer(&secretCalls).Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "garbage":
		fmt.Println("this is not JSON-RPC")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// light is the tier the tests call on: no thinking, so scripts need no
// thinking blocks.
var light = conversation.CallOptions{Tier: 1}

// stdioServer is this binary as an MCP server over stdio.
func stdioServer(t *testing.T, name, mode string) mcp.Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcp.Server{Name: name, Command: exe, Env: map[string]string{serverMode: mode}}
}

// httpServer serves kerneltest.MCPServer over streamable HTTP until the
// test ends or the returned stop is called.
func httpServer(t *testing.T) (url string, stop func()) {
	t.Helper()
	return kerneltest.ServeMCP(t, kerneltest.MCPServer(&secretCalls))
}

// scriptedKernel opens a kernel in dir whose LLM plays js.
func scriptedKernel(t *testing.T, dir, js string, tune ...func(*kernel.Options)) (*kernel.Kernel, *script.Provider) {
	t.Helper()
	p := kerneltest.Scripted(t, js)
	o := kernel.Options{Client: &llm.Client{Provider: p}, ServerTools: true}
	for _, f := range tune {
		f(&o)
	}
	return kerneltest.OpenIn(t, dir, o), p
}

// addServers adds the servers to the instance in dir, as `hermitcrab mcp
// add` does, and returns the kernel's notes.
func addServers(t *testing.T, dir string, servers ...mcp.Server) []string {
	t.Helper()
	k := kerneltest.OpenIn(t, dir, kernel.Options{})
	var notes []string
	for _, s := range servers {
		offer, err := k.AddMCPServer(context.Background(), s)
		if err != nil {
			t.Fatalf("adding %s: %v", s.Name, err)
		}
		notes = append(notes, offer.Notes...)
	}
	return notes
}

// toolNames are the names of a request's tools.
func toolNames(req *llm.Request) []string {
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	return names
}

// toolResults are the tool results of a request's last message, by the id
// of their tool_use.
func toolResults(req *llm.Request) map[string]llm.ContentBlock {
	out := map[string]llm.ContentBlock{}
	for _, b := range req.Messages[len(req.Messages)-1].Content {
		if b.Type == llm.BlockToolResult {
			out[b.ToolUseID] = b
		}
	}
	return out
}

func resultText(b llm.ContentBlock) string {
	data, _ := json.Marshal(b)
	return string(data)
}

// TestMCPToolsAreOneSetToolsAway pins the way an MCP server's tools reach
// the LLM: named in the capabilities block when added, absent from the
// boot tools (so the boot request does not grow), refused when called
// before they are chosen, then offered as NAME__tool after set_tools and
// run on the server, over stdio.
func TestMCPToolsAreOneSetToolsAway(t *testing.T) {
	dir := t.TempDir()
	addServers(t, dir, stdioServer(t, "tests", "serve"))
	js := kerneltest.Replies(
		kerneltest.ToolUse("t1", "tests__echo", map[string]string{"text": "too early"}),
		kerneltest.ToolUse("t2", "set_tools", map[string]any{"tools": []string{"block_read", "tests__echo"}}),
		kerneltest.TextBlock("chosen"),
		kerneltest.ToolUse("t3", "tests__echo", map[string]string{"text": "hello"}),
		kerneltest.TextBlock("done"),
	)
	k, p := scriptedKernel(t, dir, js)
	capabilities := kerneltest.Text(t, k, "capabilities", "0.9")
	if !strings.Contains(capabilities, "MCP servers") || !strings.Contains(kerneltest.Text(t, k, "capabilities", "0.9.1"), "tests__echo (Echo the text back.)") {
		t.Fatalf("capabilities 0.9 does not name the server's tools: %q / %q", capabilities, kerneltest.Text(t, k, "capabilities", "0.9.1"))
	}
	ctx := context.Background()
	if _, err := k.Conversation().Say(ctx, "c", "choose", light); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Conversation().Say(ctx, "c", "echo", light); err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	if names := toolNames(reqs[0]); strings.Contains(strings.Join(names, " "), "tests__") {
		t.Errorf("the first request already offers the server's tools: %v", names)
	}
	if r := resultText(toolResults(reqs[1])["t1"]); !strings.Contains(r, `"is_error":true`) {
		t.Errorf("a tool not chosen yet was not refused: %s", r)
	}
	if names := toolNames(reqs[3]); !strings.Contains(strings.Join(names, " "), "tests__echo") {
		t.Errorf("after set_tools the request lacks tests__echo: %v", names)
	}
	if r := resultText(toolResults(reqs[4])["t3"]); !strings.Contains(r, "echo: hello") || strings.Contains(r, `"is_error":true`) {
		t.Errorf("the echo's result: %s", r)
	}
}

// TestAToolNotChosenNeverRuns pins the allowlist: with one of a server's
// tools chosen, another of its tools, and a tool of the same name under
// another server's prefix, are refused and never reach a server.
func TestAToolNotChosenNeverRuns(t *testing.T) {
	dir := t.TempDir()
	url, _ := httpServer(t)
	addServers(t, dir, mcp.Server{Name: "web", URL: url}, mcp.Server{Name: "other", URL: url})
	secretCalls.Store(0)
	js := kerneltest.Replies(
		kerneltest.ToolUse("t1", "set_tools", map[string]any{"tools": []string{"web__echo"}}),
		kerneltest.TextBlock("chosen"),
		kerneltest.ToolUse("t2", "web__secret", map[string]any{})+","+kerneltest.ToolUse("t3", "other__echo", map[string]string{"text": "x"}),
		kerneltest.TextBlock("done"),
	)
	k, p := scriptedKernel(t, dir, js)
	ctx := context.Background()
	for _, line := range []string{"choose", "try"} {
		if _, err := k.Conversation().Say(ctx, "c", line, light); err != nil {
			t.Fatal(err)
		}
	}
	if n := secretCalls.Load(); n != 0 {
		t.Errorf("a tool the LLM did not choose ran %d times", n)
	}
	reqs := p.Requests()
	results := toolResults(reqs[len(reqs)-1])
	for _, id := range []string{"t2", "t3"} {
		if r := resultText(results[id]); !strings.Contains(r, `"is_error":true`) || strings.Contains(r, "echo: x") {
			t.Errorf("%s was not refused: %s", id, r)
		}
	}
	if names := toolNames(reqs[2]); strings.Contains(strings.Join(names, " "), "other__") || strings.Contains(strings.Join(names, " "), "web__secret") {
		t.Errorf("tools not chosen were offered: %v", names)
	}
}

// TestMCPResultsReachTheLLMInert pins that what a server answers reaches
// the model with its control characters shown as escapes.
func TestMCPResultsReachTheLLMInert(t *testing.T) {
	content := chooseThenCall(t, "tests__hostile").Content.String()
	if strings.ContainsAny(content, "\x1b\x07\u202e") || !strings.Contains(content, `ok\x1b]0;pwned`) {
		t.Errorf("the server's text did not reach the LLM inert: %q", content)
	}
}

// TestAHungOrDeadServerGivesAnErrorResultAndTheCallGoesOn pins that a
// tool that never answers is cancelled at the call timeout, and a server
// gone before the turn is named to the LLM in a note: each call ends
// normally.
func TestAHungOrDeadServerGivesAnErrorResultAndTheCallGoesOn(t *testing.T) {
	dir := t.TempDir()
	url, stop := httpServer(t)
	addServers(t, dir, stdioServer(t, "tests", "serve"), mcp.Server{Name: "web", URL: url})
	js := kerneltest.Replies(
		kerneltest.ToolUse("t1", "set_tools", map[string]any{"tools": []string{"tests__hang", "web__echo"}}),
		kerneltest.TextBlock("chosen"),
		kerneltest.ToolUse("t2", "tests__hang", map[string]any{}),
		kerneltest.TextBlock("after the hang"),
		kerneltest.ToolUse("t3", "web__echo", map[string]string{"text": "anyone?"}),
		kerneltest.TextBlock("after the outage"),
		kerneltest.TextBlock("after the note"),
	)
	k, p := scriptedKernel(t, dir, js, func(o *kernel.Options) { o.MCPCallTimeout = 300 * time.Millisecond })
	ctx := context.Background()
	for _, line := range []string{"choose", "hang"} {
		if _, err := k.Conversation().Say(ctx, "c", line, light); err != nil {
			t.Fatal(err)
		}
	}
	reqs := p.Requests()
	if r := resultText(toolResults(reqs[len(reqs)-1])["t2"]); !strings.Contains(r, `"is_error":true`) || !strings.Contains(r, "did not answer within 300ms") {
		t.Errorf("the hung call's result: %s", r)
	}
	// The server goes away between turns: the call of its tool finds out,
	// and the next turn names it to the LLM instead of offering its tool.
	stop()
	for _, line := range []string{"outage", "again"} {
		res, err := k.Conversation().Say(ctx, "c", line, light)
		if err != nil {
			t.Fatalf("a dead server failed the call: %v", err)
		}
		if want := map[string]string{"outage": "after the outage", "again": "after the note"}[line]; res.Text != want {
			t.Errorf("the call ended with %q, want %q", res.Text, want)
		}
	}
	reqs = p.Requests()
	if r := resultText(toolResults(reqs[len(reqs)-2])["t3"]); !strings.Contains(r, `"is_error":true`) {
		t.Errorf("a call of a dead server's tool: %s", r)
	}
	last := reqs[len(reqs)-1]
	msg := last.Messages[len(last.Messages)-1]
	if note := msg.Content[len(msg.Content)-1].Text; !strings.Contains(note, "[mcp] Not offered this turn: web__echo") || !strings.Contains(note, `mcp server "web" cannot be reached`) {
		t.Errorf("the LLM was not told the server is gone: %q", note)
	}
	if names := toolNames(last); strings.Contains(strings.Join(names, " "), "web__echo") || !strings.Contains(strings.Join(names, " "), "tests__hang") {
		t.Errorf("the tools offered with one server gone: %v", names)
	}
}

// TestSetToolsRefusesWhatNoServerOffers pins set_tools' check of MCP
// names: a tool a server does not have, or one of a server answering
// garbage, is refused with the reason, and nothing changes.
func TestSetToolsRefusesWhatNoServerOffers(t *testing.T) {
	dir := t.TempDir()
	addServers(t, dir, stdioServer(t, "tests", "serve"))
	// A server that broke after it was added: its command answers garbage.
	broken := stdioServer(t, "broken", "garbage")
	addByHand(t, dir, broken)
	k, _ := scriptedKernel(t, dir, `{"responses":[]}`)
	ctx := context.Background()
	before, err := k.Conversation().ActiveTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"tests__nope":  "Not offered this turn: tests__nope",
		"broken__echo": `mcp server "broken" cannot be reached`,
	} {
		_, err := k.Conversation().SetTools(ctx, []llm.Tool{{Name: name}})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "tests__echo") {
			t.Errorf("set_tools %s: %v", name, err)
		}
	}
	if _, err := k.Conversation().SetTools(ctx, []llm.Tool{{Name: "tests__echo", Description: "mine"}}); err == nil || !strings.Contains(err.Error(), "give its name only") {
		t.Errorf("a definition of an MCP tool: %v", err)
	}
	after, _ := k.Conversation().ActiveTools(ctx)
	if len(after) != len(before) {
		t.Errorf("a refused set_tools changed the tools: %v", after)
	}
}

// TestTheBeachsOwnMCPEndpointAsAServer pins the kernel against the MCP
// server this module serves: the beach's endpoint, over streamable HTTP.
func TestTheBeachsOwnMCPEndpointAsAServer(t *testing.T) {
	beach := kerneltest.StartBeach(t, "sqlite")
	dir := t.TempDir()
	addServers(t, dir, mcp.Server{Name: "beach", URL: beach.URL + "/mcp"})
	js := kerneltest.Replies(
		kerneltest.ToolUse("t1", "set_tools", map[string]any{"tools": []string{"beach__beach_info"}}),
		kerneltest.TextBlock("chosen"),
		kerneltest.ToolUse("t2", "beach__beach_info", map[string]any{}),
		kerneltest.TextBlock("done"),
	)
	k, p := scriptedKernel(t, dir, js)
	for _, line := range []string{"choose", "ask"} {
		if _, err := k.Conversation().Say(context.Background(), "c", line, light); err != nil {
			t.Fatal(err)
		}
	}
	reqs := p.Requests()
	if r := resultText(toolResults(reqs[len(reqs)-1])["t2"]); strings.Contains(r, `"is_error":true`) || !strings.Contains(r, "protocol") {
		t.Errorf("beach_info through the kernel: %s", r)
	}
}

// TestRemovingAServerTakesItsLineOutOfCapabilities pins remove: the
// registry forgets the server, capabilities 0.9 loses its line (and goes
// when it was the last), and what the LLM wrote at 0.9 is never replaced.
func TestRemovingAServerTakesItsLineOutOfCapabilities(t *testing.T) {
	dir := t.TempDir()
	url, _ := httpServer(t)
	addServers(t, dir, mcp.Server{Name: "one", URL: url}, mcp.Server{Name: "two", URL: url})
	k := kerneltest.OpenIn(t, dir, kernel.Options{})
	ctx := context.Background()
	if removed, note, err := k.RemoveMCPServer(ctx, "ONE"); err != nil || note != "" || removed != "one" {
		t.Fatalf("remove: %q %q %v", removed, note, err)
	}
	if got := kerneltest.Text(t, k, "capabilities", "0.9.1"); !strings.HasPrefix(got, "two: ") {
		t.Errorf("0.9.1 after removing one: %q", got)
	}
	if _, _, err := k.RemoveMCPServer(ctx, "one"); err == nil {
		t.Error("removing a server twice did not fail")
	}
	if _, _, err := k.RemoveMCPServer(ctx, "two"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Blocks().ReadNode(ctx, "capabilities", kerneltest.At(t, "0.9")); err == nil {
		t.Error("capabilities 0.9 stayed with no server left")
	}
	if servers, err := k.MCPServers().Load(); err != nil || len(servers) != 0 {
		t.Errorf("the registry after removing both: %v %v", servers, err)
	}
	if _, err := k.Blocks().WriteAt(ctx, "capabilities", kerneltest.At(t, "0.9"), "my own notes"); err != nil {
		t.Fatal(err)
	}
	offer, err := k.AddMCPServer(ctx, mcp.Server{Name: "three", URL: url})
	if err != nil {
		t.Fatal(err)
	}
	if got := kerneltest.Text(t, k, "capabilities", "0.9"); got != "my own notes" || len(offer.Notes) == 0 || !strings.Contains(offer.Notes[len(offer.Notes)-1], "holds something else") {
		t.Errorf("the LLM's 0.9 was replaced (%q) or the person not told: %v", got, offer.Notes)
	}
}

// TestTheMCPConnectorCarriesTheChosenToolsOfRemoteServers pins the
// connector through the real SDK into the strict fake API: a server at an
// https URL with a bearer token goes out as mcp_servers, its toolset
// enabling only the tools chosen, the beta header with it, and the
// connector's blocks round-trip in the history. A server over stdio stays
// the kernel's, and the kernel never connects to the connector's.
func TestTheMCPConnectorCarriesTheChosenToolsOfRemoteServers(t *testing.T) {
	dir := t.TempDir()
	addServers(t, dir, stdioServer(t, "tests", "serve"))
	// Written by hand: add would connect, and nothing answers at this URL.
	remote := mcp.Server{Name: "docs", URL: "https://docs.example/mcp", Headers: map[string]string{"Authorization": "Bearer tok-123456"}}
	addByHand(t, dir, remote)
	answer := `{"type":"mcp_tool_use","id":"mcptoolu_1","name":"search","server_name":"docs","input":{"q":"go"}},` +
		`{"type":"mcp_tool_result","tool_use_id":"mcptoolu_1","is_error":false,"content":[{"type":"text","text":"found"}]},{"type":"text","text":"found it"}`
	client, fake := kerneltest.FakeAnthropic(t, kerneltest.Replies(
		kerneltest.ToolUse("t1", "set_tools", map[string]any{"tools": []string{"docs__search", "tests__echo"}}),
		kerneltest.TextBlock("chosen"),
		answer,
		kerneltest.TextBlock("ok"),
	))
	k := kerneltest.OpenIn(t, dir, kernel.Options{Client: client, ServerTools: true, MCPConnector: true})
	for _, line := range []string{"choose", "search", "thanks"} {
		if _, err := k.Conversation().Say(context.Background(), "c", line, light); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	}
	got := fake.Received()
	if len(got) != 4 {
		t.Fatalf("%d requests, want 4", len(got))
	}
	for i, r := range got {
		var body struct {
			MCPServers json.RawMessage `json:"mcp_servers"`
			Tools      json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		beta := strings.Join(r.Header.Values("anthropic-beta"), ",")
		tools := string(body.Tools)
		if i < 2 {
			if body.MCPServers != nil || strings.Contains(tools, "mcp_toolset") || beta != "" {
				t.Errorf("request %d, before the tools were chosen: mcp_servers %s, beta %q", i+1, body.MCPServers, beta)
			}
			continue
		}
		if string(body.MCPServers) != `[{"type":"url","url":"https://docs.example/mcp","name":"docs","authorization_token":"tok-123456"}]` {
			t.Errorf("request %d: mcp_servers %s", i+1, body.MCPServers)
		}
		if !strings.Contains(tools, `"type":"mcp_toolset"`) || !strings.Contains(tools, `"configs":{"search":{"enabled":true}}`) || !strings.Contains(tools, `"default_config":{"enabled":false}`) {
			t.Errorf("request %d: the toolset does not enable only the chosen tool: %s", i+1, tools)
		}
		if !strings.Contains(tools, `"name":"tests__echo"`) || strings.Contains(tools, `"name":"docs__search"`) {
			t.Errorf("request %d: the stdio server's tool is not the kernel's, or the connector's is: %s", i+1, tools)
		}
		if beta != "mcp-client-2025-11-20" {
			t.Errorf("request %d: anthropic-beta %q", i+1, beta)
		}
	}
}

// TestAnMCPImageReachesTheLLMAsAnImage pins images in a kernel call: the
// PNG a tool answers is an image block of its tool result, which the
// scripted API's checks take, and the TIFF the API does not take is a
// line naming it.
func TestAnMCPImageReachesTheLLMAsAnImage(t *testing.T) {
	b := chooseThenCall(t, "tests__chart").Content.Blocks
	if len(b) != 3 || b[0].Text != "the chart:" || b[1].Type != llm.BlockImage || b[1].Source.MediaType != "image/png" ||
		b[2].Text != "[image of type image/tiff left out: its data is not an image of a type the model takes (image/jpeg, image/png, image/gif, image/webp)]" {
		t.Errorf("the chart's result: %+v", b)
	}
}

// TestThePagesToolLoopLeavesTheConnectorsToolsToTheAPI pins the page's
// own tool loop (ToolLoop) beside the MCP connector: the kernel runs the
// chosen tool of its own server, and answers a call of a connector's
// tool, which only the kernel's own calls give the API, with an error
// saying it did not run.
func TestThePagesToolLoopLeavesTheConnectorsToolsToTheAPI(t *testing.T) {
	dir := t.TempDir()
	addServers(t, dir, stdioServer(t, "tests", "serve"))
	remote := mcp.Server{Name: "docs", URL: "https://docs.example/mcp"} // by hand: nothing answers there
	addByHand(t, dir, remote)
	client, fake := kerneltest.FakeAnthropic(t, kerneltest.Replies(
		kerneltest.ToolUse("t1", "docs__search", map[string]string{"q": "go"})+","+kerneltest.ToolUse("t2", "tests__echo", map[string]string{"text": "x"}),
		kerneltest.TextBlock("done"),
	))
	k := kerneltest.OpenIn(t, dir, kernel.Options{Client: client, ServerTools: true, MCPConnector: true})
	ctx := context.Background()
	if _, err := k.Conversation().SetTools(ctx, []llm.Tool{{Name: "docs__search"}, {Name: "tests__echo"}}); err != nil {
		t.Fatal(err)
	}
	res, err := k.Conversation().ToolLoop(ctx, &llm.Request{Model: "claude-sonnet-4-6", MaxTokens: 100,
		Messages: []llm.Message{llm.UserText("search")}, Tools: []llm.Tool{{Name: "docs__search"}, {Name: "tests__echo"}}})
	if err != nil || res.Text() != "done" {
		t.Fatalf("toolloop: %v", err)
	}
	got := fake.Received()
	results := toolResults(got[len(got)-1].Request)
	if r := results["t1"]; !r.IsError || !strings.Contains(r.Content.String(), "Anthropic's API calls itself") {
		t.Errorf("the connector's tool: %q", r.Content.String())
	}
	if r := results["t2"]; r.IsError || r.Content.String() != "echo: x" {
		t.Errorf("the kernel's tool: %q", r.Content.String())
	}
}

// chooseThenCall has the LLM of a kernel with the test's stdio server
// choose tool with set_tools in one exchange and call it in the next, and
// returns the tool's result as the second call's request carried it.
func chooseThenCall(t *testing.T, tool string) llm.ContentBlock {
	t.Helper()
	dir := t.TempDir()
	addServers(t, dir, stdioServer(t, "tests", "serve"))
	js := kerneltest.Replies(
		kerneltest.ToolUse("t1", "set_tools", map[string]any{"tools": []string{tool}}),
		kerneltest.TextBlock("chosen"),
		kerneltest.ToolUse("t2", tool, map[string]any{}),
		kerneltest.TextBlock("done"),
	)
	k, p := scriptedKernel(t, dir, js)
	for _, line := range []string{"choose", "call"} {
		if _, err := k.Conversation().Say(context.Background(), "c", line, light); err != nil {
			t.Fatal(err)
		}
	}
	reqs := p.Requests()
	return toolResults(reqs[len(reqs)-1])["t2"]
}

// addByHand writes srv into the registry of dir beside the servers added
// there, without connecting to it as add would: a server that is broken
// now, or one nothing answers for.
func addByHand(t *testing.T, dir string, srv mcp.Server) {
	t.Helper()
	reg := mcp.Registry{Path: filepath.Join(dir, kernel.MCPFile)}
	servers, err := reg.Load()
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]any{"servers": append(servers, srv)})
	if err := os.WriteFile(reg.Path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
