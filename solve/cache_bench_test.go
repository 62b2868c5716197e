package solve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/anthropic"
	"github.com/llmkernels/kernels/llm/llmtest"
	"github.com/llmkernels/kernels/llm/script"
	"github.com/llmkernels/kernels/solve"
	"github.com/llmkernels/kernels/solve/loop"
)

const blurbsGoal = "Write eight short product blurbs"

// blurbsScript is a run of 48 claude-code-0 calls: the root is planned,
// verified as not a leaf and split into eight blurbs, each identified,
// selected, routed, resolved and verified; then checked and assembled.
// Answers are matched by operation and goal, so workers may interleave.
func blurbsScript(b *testing.B) *script.Script {
	b.Helper()
	var rs []any
	add := func(op, goal string, attempt int, answer any) {
		marker := "Operation: " + op
		if attempt > 0 {
			marker += fmt.Sprintf(" · attempt %d", attempt)
		}
		text, err := json.Marshal(answer)
		if err != nil {
			b.Fatal(err)
		}
		rs = append(rs, m{"match": m{"last_user_contains": marker + "\nGoal: " + goal},
			"response": m{"content": []any{m{"type": "text", "text": string(text)}}}})
	}
	node := func(goal string) {
		add(loop.OpIdentify, goal, 0, m{"constraints": []any{m{"type": "semantic", "domain": "content", "title": "names the product", "rubric": "named"}},
			"required_capabilities": []string{"technical_writing"}, "rationale": "copy"})
		add(loop.OpSelect, goal, 0, m{"selected": []string{"c1"}, "rationale": "it"})
		add(loop.OpRoute, goal, 0, m{"resolver_id": loop.ClaudeCodeID, "capability": "technical_writing", "rationale": "prose"})
	}
	node(blurbsGoal)
	add(loop.OpResolve, blurbsGoal, 1, m{"summary": "eight blurbs, one per product", "text": "one each"})
	add(loop.OpVerify, blurbsGoal, 1, m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": 0.9, "detail": "plan"}}, "is_leaf": false, "leaf_reason": "eight pieces"})
	var children []any
	for i := range 8 {
		goal := fmt.Sprintf("Write the blurb for product %d", i+1)
		children = append(children, m{"ref": fmt.Sprintf("b%d", i+1), "goal": goal, "summary": fmt.Sprintf("Blurb %d", i+1), "weight": 1, "depends_on": []string{}})
		node(goal)
		add(loop.OpResolve, goal, 1, m{"summary": "blurb", "text": "a blurb"})
		add(loop.OpVerify, goal, 1, m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": 0.9, "detail": "named"}}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one blurb"})
	}
	add(loop.OpDecompose, blurbsGoal, 0, m{"children": children, "rationale": "one each"})
	add(loop.OpConsistency, blurbsGoal, 0, m{"verdict": "SAT", "conflicts": []any{}})
	add(loop.OpAssemble, blurbsGoal, 0, m{"summary": "eight blurbs"})
	data, err := json.Marshal(m{"responses": rs})
	if err != nil {
		b.Fatal(err)
	}
	s, err := script.Parse(data)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkRunPromptCache runs `solve run` on a goal that takes 48
// claude-code-0 calls, through the Anthropic adapter against the strict
// fake API (llm/llmtest), whose simulated prompt cache keeps the API's
// rules and minimum cacheable lengths (llm.MinCacheTokens), with one
// worker. It reports the share of input tokens read from the cache and
// the effective input tokens per call (uncached + 1.25 × written + 0.1 ×
// read), with caching on and with --no-cache (nocache), per model: Sonnet
// 4.5 (minimum 1,024 tokens), Sonnet 4.6 (2,048), Opus 4.6 (4,096).
// Target: at least 50% read where the shared prefix reaches the minimum.
func BenchmarkRunPromptCache(b *testing.B) {
	for _, model := range []string{"claude-sonnet-4-5", "claude-sonnet-4-6", "claude-opus-4-6"} {
		for _, noCache := range []bool{false, true} {
			name := model
			if noCache {
				name += "/nocache"
			}
			b.Run(name, func(b *testing.B) {
				var u llm.Usage
				calls := 0
				for b.Loop() {
					b.StopTimer()
					srv := llmtest.NewServer(blurbsScript(b))
					p, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-bench", BaseURL: srv.URL})
					if err != nil {
						b.Fatal(err)
					}
					k, err := solve.Open(context.Background(), filepath.Join(b.TempDir(), "kernel.db"))
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					res, err := k.Run(context.Background(), loop.Request{Goal: blurbsGoal, BudgetUSD: 5, Time: time.Hour, Workers: 1, Model: model},
						solve.Options{Client: &llm.Client{Provider: p, NoCache: noCache}})
					b.StopTimer()
					if err != nil || res.Outcome != loop.OutcomeAchieved {
						b.Fatalf("run: %v %+v", err, res)
					}
					for _, r := range srv.Received() {
						var resp llm.Response
						if r.Status != http.StatusOK || json.Unmarshal(r.Response, &resp) != nil {
							b.Fatalf("a call failed: %d %s", r.Status, r.Response)
						}
						u = u.Add(resp.Usage)
						calls++
					}
					k.Close()
					srv.Close()
					b.StartTimer()
				}
				b.ReportMetric(float64(calls)/float64(b.N), "calls/run")
				b.ReportMetric(100*u.CacheReadShare(), "%read")
				b.ReportMetric(u.EffectiveInputTokens()/float64(calls), "eff-in-tokens/call")
			})
		}
	}
}
