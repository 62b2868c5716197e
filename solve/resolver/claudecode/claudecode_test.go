package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/script"
	"github.com/llmkernels/kernels/solve/loop"
)

func client(t *testing.T, responses string) (*llm.Client, *script.Provider) {
	t.Helper()
	s, err := script.Parse([]byte(`{"responses": ` + responses + `}`))
	if err != nil {
		t.Fatal(err)
	}
	p := script.New(s)
	return &llm.Client{Provider: p, Retry: llm.RetryPolicy{MaxAttempts: 1}}, p
}

func TestEachOperationHasItsPromptAndATypedAnswer(t *testing.T) {
	c, p := client(t, `[{"match": {"system_contains": "operation: verify"}, "response": {"content": [{"type": "text",
		"text": "{\"checks\": [{\"ref\": \"c1\", \"passed\": true, \"sigma\": 0.9, \"detail\": \"ok\"}], \"is_leaf\": true, \"leaf_reason\": \"small\"}"}]}}]`)
	r := New(c)
	call := &loop.Call{Op: loop.OpVerify, Goal: "Name the queue", Model: "claude-opus-4-6", Attempt: 2,
		Constraints: []loop.ConstraintView{{Ref: "c1", Type: "semantic", Domain: "naming", Title: "kebab-case", Payload: json.RawMessage(`{"rubric":"lower-case"}`)}},
		Output:      &loop.ArtifactView{Type: "doc", Content: "billing-queue"}}
	if cost, secs := r.Estimate(context.Background(), call); cost <= 0 || secs != 30 {
		t.Errorf("estimate $%v, %vs", cost, secs)
	}
	out, err := r.Resolve(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	var a loop.VerifyAnswer
	if err := json.Unmarshal(out.Answer, &a); err != nil || !a.IsLeaf || len(a.Checks) != 1 || out.LLMCalls != 1 || out.Cost <= 0 {
		t.Errorf("answer %s (%v), %+v", out.Answer, err, out)
	}
	req := p.Requests()[0]
	user := req.Messages[0].Content[0].Text
	if !strings.HasPrefix(req.System[0].Text, "SOLVE kernel · operation: verify") || !strings.HasPrefix(user, "Operation: verify · attempt 2\nGoal: Name the queue") ||
		!strings.Contains(user, "- c1 [semantic, naming] kebab-case") || !strings.Contains(user, "Output to judge (doc):\nbilling-queue") {
		t.Errorf("system %q\nuser %q", req.System[0].Text, user)
	}
}

func TestFailuresAreClassified(t *testing.T) {
	var re *loop.ResolverError
	c, _ := client(t, `[{"response": {"content": [{"type": "text", "text": "no JSON here"}]}}, {"response": {"content": [{"type": "text", "text": "still none"}]}},
		{"response": {"content": [{"type": "text", "text": "none"}]}}]`)
	if _, err := New(c).Resolve(context.Background(), &loop.Call{Op: loop.OpAssemble, Model: "claude-opus-4-6"}); !errors.As(err, &re) || !re.Permanent || re.Mode != "malformed_json" || re.Cost <= 0 {
		t.Errorf("a malformed answer: %v", err)
	}
	c, _ = client(t, `[{"error": {"status": 529, "type": "overloaded_error"}}]`)
	if _, err := New(c).Resolve(context.Background(), &loop.Call{Op: loop.OpAssemble, Model: "claude-opus-4-6"}); !errors.As(err, &re) || re.Permanent || re.Mode != "llm_unavailable" {
		t.Errorf("an overloaded API: %v", err)
	}
	c, _ = client(t, `[{"error": {"status": 400, "type": "invalid_request_error"}}]`)
	if _, err := New(c).Resolve(context.Background(), &loop.Call{Op: loop.OpAssemble, Model: "claude-opus-4-6"}); !errors.As(err, &re) || !re.Permanent || re.Mode != "llm_error" {
		t.Errorf("a refused request: %v", err)
	}
	// A request that cannot be sent at all is permanent: sending it again
	// cannot help (before: "llm_unavailable", retried, then the run stopped).
	c, _ = client(t, `[{"response": {"content": [{"type": "text", "text": "{}"}]}}]`)
	if _, err := New(c).Resolve(context.Background(), &loop.Call{Op: loop.OpAssemble, Model: ""}); !errors.As(err, &re) || !re.Permanent || re.Mode != "invalid_request" {
		t.Errorf("a request without a model: %v", err)
	}
	// The caller's deadline is not the API's fault: retryable, as it is.
	c, _ = client(t, `[{"response": {"content": [{"type": "text", "text": "{}"}]}}]`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(c).Resolve(ctx, &loop.Call{Op: loop.OpAssemble, Model: "claude-opus-4-6"}); !errors.As(err, &re) || re.Permanent || !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled call: %v", err)
	}
	if _, err := New(nil).Resolve(context.Background(), &loop.Call{Op: loop.OpAssemble, Model: "claude-opus-4-6"}); !errors.As(err, &re) || re.Mode != "no_llm" {
		t.Errorf("no client: %v", err)
	}
	if _, err := New(nil).Resolve(context.Background(), &loop.Call{Op: loop.OpSelfModel}); err == nil {
		t.Error("an operation without a prompt was accepted")
	}
}
