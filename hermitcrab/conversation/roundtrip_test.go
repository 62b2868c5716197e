package conversation_test

import (
	"context"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/llm/llmtest"
)

// newKernelOverHTTP opens a kernel whose LLM is the Anthropic provider, on
// the real SDK, talking to the strict fake API playing the script.
func newKernelOverHTTP(t *testing.T, scriptJSON string) (*kernel.Kernel, *llmtest.Server) {
	t.Helper()
	client, srv := kerneltest.FakeAnthropic(t, scriptJSON)
	return kerneltest.Open(t, kernel.Options{Client: client, ServerTools: true}), srv
}

// The deep tier thinks adaptively: the model may answer a tool turn
// without thinking, and the boot goes on. A read made from code execution
// (programmatic tool calling) goes back with its caller.
func TestDeepTierBootGoesOnWhenATurnHasNoThinking(t *testing.T) {
	jsx := "function Shell(props) { return <div>awake</div>; }"
	k, srv := newKernelOverHTTP(t, `{"responses":[
		{"content":[{"type":"thinking","thinking":"Purpose first.","signature":"sig-boot"},`+kerneltest.ToolUse("t1", "block_read", map[string]string{"name": "purpose"})+`]},
		{"content":[
			{"type":"server_tool_use","id":"srvtoolu_1","name":"code_execution","input":{"code":"print(await block_read(name='wake'))"}},
			{"type":"tool_use","id":"t2","name":"block_read","input":{"name":"wake"},"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_1"}}],
		 "stop_reason":"tool_use","container":{"id":"container_boot"}},
		{"content":[
			{"type":"code_execution_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"code_execution_result","stdout":"wake read","stderr":"","return_code":0,"content":[]}},
			`+kerneltest.ToolUse("t3", "recompile", map[string]string{"jsx": jsx})+`]}
	]}`)
	res, err := k.Conversation().Boot(context.Background())
	if err != nil {
		t.Fatalf("boot: %v", err)
	}
	if res.Shell == nil || res.Shell.Source != jsx {
		t.Fatalf("boot built no shell: %+v", res.Shell)
	}
	everyRequestAcceptedAndEchoed(t, srv, 3)
	third := srv.Received()[2]
	if th := third.Request.Thinking; th == nil || th.Type != "adaptive" {
		t.Errorf("boot was not the adaptive deep tier: thinking %+v", th)
	}
	if !strings.Contains(string(third.Body), `"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_1"}`) {
		t.Errorf("the programmatic call went back without its caller:\n%s", third.Body)
	}
}

// A saved conversation is sent again as the API sent it, across calls and
// through the database: members llm does not interpret included.
func TestASavedConversationGoesBackByteForByte(t *testing.T) {
	k, srv := newKernelOverHTTP(t, `{"responses":[
		{"content":[{"signature":"sig-1","type":"thinking","thinking":"Greet <warmly> & briefly."},{"type":"text","text":"Hello, Ada.","future_member":[1,2]}]},
		{"content":[{"type":"thinking","thinking":"Again.","signature":"sig-2"},{"type":"text","text":"Still here."}]}
	]}`)
	ctx := context.Background()
	if _, err := k.Conversation().Say(ctx, "c", "Hi, I am Ada.", conversation.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Conversation().Say(ctx, "c", "Still there?", conversation.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	everyRequestAcceptedAndEchoed(t, srv, 2)
	if body := string(srv.Received()[1].Body); !strings.Contains(body, `{"type":"text","text":"Hello, Ada.","future_member":[1,2]}`) {
		t.Errorf("the saved reply lost a member:\n%s", body)
	}
}
