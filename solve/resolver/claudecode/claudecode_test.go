package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

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
	if !strings.HasPrefix(req.System[1].Text, "SOLVE kernel · operation: verify") || !strings.HasPrefix(user, "Operation: verify · attempt 2\nGoal: Name the queue") ||
		!strings.Contains(user, "- c1 [semantic, naming] kebab-case") || !strings.Contains(user, "Output to judge (doc):\nbilling-queue") {
		t.Errorf("system %q\nuser %q", req.System[1].Text, user)
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

// A call capped at what the loop reserved (Call.MaxCost) is sent with a
// max_tokens whose worst case fits under it, and no repair turn; a cap
// that cannot pay for the request's input sends nothing; uncapped, the
// answer gets its full max_tokens.
func TestACappedCallFitsItsWorstCaseUnderTheCap(t *testing.T) {
	const answer = `[{"response": {"content": [{"type": "text", "text": "not json"}]}}, {"response": {"content": [{"type": "text", "text": "{\"summary\": \"ok\"}"}]}}]`
	call := func(max float64) *loop.Call {
		return &loop.Call{Op: loop.OpAssemble, Goal: "Ship it", Model: "claude-sonnet-4-5", MaxCost: max}
	}
	prices, _ := llm.DefaultPriceTable().Lookup("claude-sonnet-4-5")
	c, p := client(t, answer)
	r := New(c)
	ceiling := r.Ceiling(context.Background(), call(0))
	if est, _ := r.Estimate(context.Background(), call(0)); ceiling <= est {
		t.Fatalf("ceiling $%v not above the estimate $%v", ceiling, est)
	}
	_, err := r.Resolve(context.Background(), call(ceiling/2))
	var re *loop.ResolverError
	if !errors.As(err, &re) || re.Mode != "malformed_json" || re.LLMCalls != 1 {
		t.Fatalf("a malformed answer under a cap: %v (want one call, no repair turn)", err)
	}
	sent := p.Requests()[0]
	in := 0
	for _, b := range sent.System {
		in += len(b.Text)
	}
	for _, b := range sent.Messages[0].Content {
		in += len(b.Text)
	}
	// The worst case writes the whole input to the cache (1.25× input).
	if worst := (float64(in)*prices.CacheWrite + float64(sent.MaxTokens)*prices.Output) / 1e6; sent.MaxTokens >= 8000 || worst > ceiling/2 {
		t.Errorf("max_tokens %d: worst case $%.6f over the cap $%.6f", sent.MaxTokens, worst, ceiling/2)
	}
	if worst, _ := llm.DefaultPriceTable().Cost("claude-sonnet-4-5", llm.Usage{CacheCreationInputTokens: in, OutputTokens: 8000}); ceiling < worst {
		t.Errorf("ceiling $%.6f below the uncapped worst case $%.6f (the whole input written to the cache)", ceiling, worst)
	}
	if _, err := r.Resolve(context.Background(), call(1e-6)); !errors.As(err, &re) || re.Mode != "over_budget" || len(p.Requests()) != 1 {
		t.Errorf("a cap below the input's price: %v, %d requests", err, len(p.Requests()))
	}
	c, p = client(t, answer)
	if _, err := New(c).Resolve(context.Background(), call(0)); err != nil || p.Requests()[0].MaxTokens != 8000 || len(p.Requests()) != 2 {
		t.Errorf("uncapped: %v, %d requests", err, len(p.Requests()))
	}
}

// A run's calls share their system prompt's first block byte for byte,
// behind the one cache breakpoint, whatever the operation: on a model
// whose minimum the whole loop's instructions reach (Sonnet 4.5, 1,024
// tokens) the block holds every operation and its schema, and the second
// call reads it from the (simulated) cache; on Opus 4.6 (4,096 tokens)
// with a short goal it cannot be cached, so the prompt stays lean and
// carries no breakpoint; with
// caching off no breakpoint is sent and the prompt is lean.
func TestCallsShareACachedPrefix(t *testing.T) {
	const answers = `[{"match": {"last_user_contains": "Operation: resolve"}, "response": {"content": [{"type": "text", "text": "{\"summary\": \"done\", \"text\": \"ok\"}"}]}},
		{"match": {"last_user_contains": "Operation: assemble"}, "response": {"content": [{"type": "text", "text": "{\"summary\": \"assembled\"}"}]}}]`
	run := func(model string, noCache bool) ([]*llm.Request, []*loop.Output) {
		c, p := client(t, answers)
		c.NoCache = noCache
		r := New(c)
		var outs []*loop.Output
		for _, op := range []string{loop.OpResolve, loop.OpAssemble} {
			out, err := r.Resolve(context.Background(), &loop.Call{Op: op, Goal: "a node's goal", RunGoal: "Ship the median function", Model: model})
			if err != nil {
				t.Fatalf("%s %s: %v", model, op, err)
			}
			outs = append(outs, out)
		}
		return p.Requests(), outs
	}
	reqs, outs := run("claude-sonnet-4-5", false)
	a, b := reqs[0].System, reqs[1].System
	if a[0].Text != b[0].Text || a[0].CacheControl == nil || b[0].CacheControl == nil || a[1].CacheControl != nil {
		t.Fatalf("the shared block differs or has no breakpoint:\n%+v\n%+v", a[0], b[0])
	}
	for _, want := range []string{"## resolve", "## assemble", "Answer schema of verify", "Ship the median function"} {
		if !strings.Contains(a[0].Text, want) {
			t.Errorf("the shared block lacks %q", want)
		}
	}
	if strings.Contains(a[0].Text, "a node's goal") || !strings.Contains(a[1].Text, "operation: resolve") || !strings.Contains(b[1].Text, "operation: assemble") {
		t.Errorf("node or operation text in the shared block, or the operation not named after it:\n%q\n%q", a[1].Text, b[1].Text)
	}
	if w, r := outs[0].Usage.CacheCreationInputTokens, outs[1].Usage.CacheReadInputTokens; w < 1024 || r != w {
		t.Errorf("sonnet: first call wrote %d tokens, second read %d (want the same prefix, at least 1,024)", w, r)
	}
	if outs[1].Cost >= outs[0].Cost {
		t.Errorf("the call reading the cache cost $%.6f, the one writing it $%.6f", outs[1].Cost, outs[0].Cost)
	}
	reqs, outs = run("claude-opus-4-6", false)
	if s := reqs[0].System; strings.Contains(s[0].Text, "## resolve") || s[0].CacheControl != nil || !strings.HasPrefix(s[1].Text, "SOLVE kernel · operation: resolve") || outs[1].Usage.CacheReadInputTokens != 0 {
		t.Errorf("opus, short goal: want the lean prompt, nothing cached; got %q, %+v", s[0].Text, outs[1].Usage)
	}
	reqs, _ = run("claude-sonnet-4-5", true)
	for _, req := range reqs {
		for _, s := range req.System {
			if s.CacheControl != nil || strings.Contains(s.Text, "## resolve") {
				t.Errorf("--no-cache: a breakpoint or the whole loop sent: %+v", s)
			}
		}
	}
}

// boardTool answers read_board with text of the given length.
func boardTool(n int) llm.ToolHandler {
	return llm.ToolHandler{Tool: llm.Tool{Name: "board__read_board", Description: "Read a board's hot spot.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Run: func(context.Context, json.RawMessage) (llm.ToolOutput, error) {
			return llm.TextOutput("hot spot 71C" + strings.Repeat(".", max(n-12, 0))), nil
		}}
}

func toolCall(h llm.ToolHandler) *loop.Call {
	return &loop.Call{Op: loop.OpResolve, Goal: "Read board A", Model: "claude-opus-4-6", Attempt: 1,
		Tools: func(context.Context) []llm.ToolHandler { return []llm.ToolHandler{h} }}
}

const (
	useBoard = `{"match": {"system_contains": "operation: resolve"}, "response": {"stop_reason": "tool_use", "usage": {"input_tokens": 3000, "output_tokens": 50},
		"content": [{"type": "tool_use", "id": "toolu_1", "name": "board__read_board", "input": {}}]}}`
	answerBoard = `{"match": {"tool_result_for": "board__read_board", "last_user_contains": "hot spot 71C"}, "response": {"usage": {"input_tokens": 3100, "output_tokens": 40},
		"content": [{"type": "text", "text": "{\"summary\": \"read\", \"text\": \"71C\"}"}]}}`
)

// A call offered tools runs the tool loop: the model's tool_use is
// answered with the tool's result in the next request, and the answer
// after it is the call's; both requests are paid, each within what is
// left of the reservation.
func TestACallOfferedToolsRunsTheToolLoop(t *testing.T) {
	c, p := client(t, `[`+useBoard+`, `+answerBoard+`]`)
	r := New(c)
	call := toolCall(boardTool(20))
	call.MaxCost = r.Ceiling(context.Background(), call)
	out, err := r.Resolve(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	var a loop.ResolveAnswer
	if err := json.Unmarshal(out.Answer, &a); err != nil || a.Text != "71C" || out.LLMCalls != 2 || out.Cost <= 0 || out.Cost > call.MaxCost {
		t.Fatalf("answer %s (%v), %+v", out.Answer, err, out)
	}
	reqs := p.Requests()
	if len(reqs) != 2 || len(reqs[0].Tools) != 1 || reqs[0].Tools[0].Name != "board__read_board" || !strings.Contains(reqs[0].System[1].Text, "SERVER__tool") {
		t.Fatalf("%d requests; the first offers %d tools", len(reqs), len(reqs[0].Tools))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1].Content[0]
	if last.Type != llm.BlockToolResult || last.ToolUseID != "toolu_1" || !strings.HasPrefix(last.Content.String(), "hot spot 71C") {
		t.Errorf("the second request does not answer the tool_use: %+v", last)
	}
	if reqs[1].MaxTokens >= reqs[0].MaxTokens {
		t.Errorf("max_tokens %d then %d: the second round must fit what the first left", reqs[0].MaxTokens, reqs[1].MaxTokens)
	}
}

// The whole loop stays inside the call's reservation: a round whose
// worst case (its input, every byte a token, and one token out) exceeds
// what is left is not sent, and the attempt fails over_budget with what
// the rounds before it cost.
func TestAToolLoopStopsBeforeARoundItCannotPayFor(t *testing.T) {
	c, p := client(t, `[`+useBoard+`, `+answerBoard+`]`)
	r := New(c)
	call := toolCall(boardTool(100_000)) // about $0.63 of input on claude-opus-4-6 in the second round
	call.MaxCost = r.Ceiling(context.Background(), call)
	_, err := r.Resolve(context.Background(), call)
	var re *loop.ResolverError
	if !errors.As(err, &re) || !re.Permanent || re.Mode != "over_budget" || re.LLMCalls != 1 || re.Cost <= 0 || re.Cost > call.MaxCost {
		t.Fatalf("err %v (%+v)", err, re)
	}
	if n := len(p.Requests()); n != 1 {
		t.Errorf("%d requests sent; the second could cost more than was reserved", n)
	}
	// With room for it, the same loop runs to its answer.
	c, _ = client(t, `[`+useBoard+`, `+answerBoard+`]`)
	call.MaxCost = 2
	if _, err := New(c).Resolve(context.Background(), call); err != nil {
		t.Fatalf("with $2 reserved: %v", err)
	}
	// What the first round cost counts: after a long first answer, a
	// second round that the whole reservation would pay for, but not what
	// is left of it, is not sent.
	c, p = client(t, `[`+strings.Replace(useBoard, `"output_tokens": 50`, `"output_tokens": 7500`, 1)+`, `+answerBoard+`]`)
	call = toolCall(boardTool(20))
	call.MaxCost = New(c).Ceiling(context.Background(), call)
	if _, err := New(c).Resolve(context.Background(), call); !errors.As(err, &re) || re.Mode != "over_budget" || len(p.Requests()) != 1 {
		t.Fatalf("after a first round of $%.4f of $%.4f: err %v, %d requests", re.Cost, call.MaxCost, err, len(p.Requests()))
	}
}

// A model that keeps asking for tools is stopped at maxRounds requests.
func TestAToolLoopIsCappedInRounds(t *testing.T) {
	var rs []string
	for i := range maxRounds + 1 {
		rs = append(rs, strings.Replace(useBoard, "toolu_1", "toolu_"+string(rune('a'+i)), 1))
	}
	c, p := client(t, `[`+strings.Join(rs, ",")+`]`)
	_, err := New(c).Resolve(context.Background(), toolCall(boardTool(20)))
	var re *loop.ResolverError
	if !errors.As(err, &re) || re.Mode != "tool_rounds" || len(p.Requests()) != maxRounds {
		t.Fatalf("err %v after %d requests", err, len(p.Requests()))
	}
}

// A model that is unavailable sends the request on to the client's
// fallback models (llm.Client.Send), at their prices: the ceiling and the
// capped max_tokens count the dearest model the call may reach, so that
// a fallback to a dearer model stays inside what was reserved.
func TestACappedCallStaysUnderItsHoldOnADearerFallback(t *testing.T) {
	const answers = `[{"match": {"model": "claude-haiku-4-5"}, "error": {"status": 529, "type": "overloaded_error", "message": "overloaded"}},
		{"match": {"model": "claude-opus-4-1"}, "response": {"content": [{"type": "text", "text": "{\"summary\": \"ok\"}"}]}}]`
	c, p := client(t, answers)
	c.Fallback = []string{"claude-opus-4-1"}
	r := New(c)
	call := &loop.Call{Op: loop.OpAssemble, Goal: "Ship it", Model: "claude-haiku-4-5"}
	ceiling := r.Ceiling(context.Background(), call)
	call.MaxCost = ceiling / 2
	out, err := r.Resolve(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	sent := p.Requests()[len(p.Requests())-1]
	if sent.Model != "claude-opus-4-1" {
		t.Fatalf("the fallback was not reached: %s", sent.Model)
	}
	in := 0
	for _, b := range sent.System {
		in += len(b.Text)
	}
	for _, b := range sent.Messages[0].Content {
		in += len(b.Text)
	}
	worst, _ := llm.DefaultPriceTable().Cost("claude-opus-4-1", llm.Usage{CacheCreationInputTokens: in, OutputTokens: sent.MaxTokens})
	if worst > call.MaxCost {
		t.Errorf("max_tokens %d on the fallback: worst case $%.6f over the $%.6f held", sent.MaxTokens, worst, call.MaxCost)
	}
	if uncapped, _ := llm.DefaultPriceTable().Cost("claude-opus-4-1", llm.Usage{CacheCreationInputTokens: in, OutputTokens: 8000}); ceiling < uncapped {
		t.Errorf("ceiling $%.6f below the fallback's worst case $%.6f", ceiling, uncapped)
	}
	if out.Cost > call.MaxCost {
		t.Errorf("the call cost $%.6f of $%.6f held", out.Cost, call.MaxCost)
	}
}

// A request answered with an error that may have been billed (a 500) is
// not sent again inside the call, whatever the client's retries: a second
// billed attempt could overspend the call's hold. The failure says it may
// have been billed, so the loop settles it at its hold and asks again.
func TestACallMayBeBilledOnceInsideItsHold(t *testing.T) {
	c, p := client(t, `[{"error": {"status": 500, "type": "api_error", "message": "internal"}}, {"content": [{"type": "text", "text": "{\"summary\": \"ok\"}"}]}]`)
	c.Retry = llm.RetryPolicy{MaxAttempts: 4, Sleep: func(context.Context, time.Duration) error { return nil }}
	_, err := New(c).Resolve(context.Background(), &loop.Call{Op: loop.OpAssemble, Goal: "Ship it", Model: "claude-sonnet-4-5", MaxCost: 1})
	var re *loop.ResolverError
	if !errors.As(err, &re) || re.Mode != "llm_unavailable" || re.Permanent || !re.MaybeBilled || len(p.Requests()) != 1 {
		t.Fatalf("%v (%+v), %d requests", err, re, len(p.Requests()))
	}
	if c.Retry.Unbilled {
		t.Error("New changed the caller's client")
	}
}

// A model whose long prompts cost more (claude-haiku-5-5, over 100,000
// tokens) has a round whose request may pass that counted at the long
// rates: the second round, carrying a 100,000-character tool result, is
// sent only if its worst case at those rates fits what is left.
func TestAToolLoopCountsALongPromptAtItsRates(t *testing.T) {
	c, p := client(t, `[`+useBoard+`, `+answerBoard+`]`)
	call := toolCall(boardTool(100_000))
	call.Model, call.MaxCost = "claude-haiku-5-5", 0.05
	_, err := New(c).Resolve(context.Background(), call)
	long, _ := llm.DefaultPriceTable().Lookup("claude-haiku-5-5")
	reqs := p.Requests()
	if len(reqs) < 2 {
		var re *loop.ResolverError
		if !errors.As(err, &re) || re.Mode != "over_budget" {
			t.Fatalf("err %v after %d requests", err, len(reqs))
		}
		return
	}
	first, _ := llm.DefaultPriceTable().Cost(call.Model, llm.Usage{InputTokens: 3000, OutputTokens: 50})
	second := reqs[1]
	worst := (float64(requestBytes(second))*long.LongPrompt.CacheWrite + float64(second.MaxTokens)*long.LongPrompt.Output) / 1e6
	if first+worst > call.MaxCost {
		t.Errorf("the second round (max_tokens %d) may cost $%.4f at the long rates; $%.4f of $%.2f was left", second.MaxTokens, worst, call.MaxCost-first, call.MaxCost)
	}
}
