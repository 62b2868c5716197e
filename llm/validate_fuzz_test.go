package llm

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCheckRequest: any request that decodes is checked without a panic;
// it is valid or an *InvalidRequestError naming at least one violation,
// each non-empty; after Normalize the request breaks neither rule
// Normalize fixes (a budget at or over max_tokens, a temperature other
// than 1 with thinking), keeps max_tokens positive, and a second
// Normalize changes nothing.
func FuzzCheckRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
		`{"model":"m","max_tokens":2048,"thinking":{"type":"enabled","budget_tokens":2048},"temperature":0.5,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":10,"thinking":{"type":"adaptive"},"temperature":1.5,"tool_choice":{"type":"any"},"messages":[{"role":"assistant","content":[]}]}`,
		`{"model":"m","max_tokens":100,"thinking":{"type":"enabled","budget_tokens":9223372036854775807},"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":4000,"thinking":{"type":"enabled","budget_tokens":2000},"messages":[{"role":"user","content":"hi"},
			{"role":"assistant","content":[{"type":"redacted_thinking","data":"cmVk"},{"type":"tool_use","id":"toolu_1","name":"echo","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"},{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}]}`,
		`{"model":"m","max_tokens":1,"tools":[{"name":"a b","input_schema":{"type":"string"}},{"name":"a b"},{"type":"web_search_20260209","name":"web_search"}],
			"tool_choice":{"type":"tool","name":"x"},"cache_control":{"type":"x","ttl":"2h"},"system":[{"type":"image","text":""}],"messages":[{"role":"system","content":"x"}]}`,
	} {
		f.Add([]byte(s), "")
	}
	f.Add([]byte(`{"model":"m","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":5000},"messages":[{"role":"user","content":"hi"}]}`), BetaInterleavedThinking)
	f.Fuzz(func(t *testing.T, data []byte, beta string) {
		var req Request
		if json.Unmarshal(data, &req) != nil {
			return
		}
		betas := []string{beta}
		var inv *InvalidRequestError
		switch err := CheckRequest(&req, betas...); {
		case err == nil:
		case !errors.As(err, &inv) || len(inv.Violations) == 0:
			t.Fatalf("CheckRequest gave %v, want nil or violations", err)
		default:
			for _, v := range inv.Violations {
				if v == "" || !utf8.ValidString(v) {
					t.Fatalf("a violation reads %q", v)
				}
			}
		}
		maxTokens := req.MaxTokens
		Normalize(&req, betas...)
		if err := CheckRequest(&req, betas...); err != nil && (req.Thinking == nil || req.Thinking.BudgetTokens <= math.MaxInt-thinkingHeadroom) {
			for _, fixed := range []string{"must be greater than thinking.budget_tokens", "may only be set to 1 when thinking"} {
				if strings.Contains(err.Error(), fixed) {
					t.Fatalf("after Normalize: %v", err)
				}
			}
		}
		if maxTokens >= 1 && req.MaxTokens < maxTokens {
			t.Fatalf("Normalize lowered max_tokens from %d to %d", maxTokens, req.MaxTokens)
		}
		if again := req.MaxTokens; len(Normalize(&req, betas...)) != 0 || req.MaxTokens != again {
			t.Fatalf("a second Normalize changed the request")
		}
	})
}
