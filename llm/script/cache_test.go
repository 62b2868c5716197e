package script

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
)

// cachingFake is a provider answering "ok" as often as asked, with a clock
// the test moves.
func cachingFake(t *testing.T, answers int) (*Provider, *time.Time) {
	t.Helper()
	entries := strings.Repeat(`{"content":[{"type":"text","text":"ok"}]},`, answers)
	p := New(mustParse(t, `{"responses":[`+strings.TrimSuffix(entries, ",")+`]}`))
	now := time.Date(2026, 11, 4, 10, 0, 0, 0, time.UTC)
	p.SetClock(func() time.Time { return now })
	return p, &now
}

func usageOf(t *testing.T, p *Provider, req *llm.Request) llm.Usage {
	t.Helper()
	resp, err := p.Messages(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Usage
}

// bigSystem is a system prompt of about 1,500 tokens (4 bytes a token):
// over claude-sonnet-4-5's minimum of 1,024.
var bigSystem = strings.Repeat("You are a careful assistant. ", 210)

func conversation(turns int) []llm.Message {
	msgs := []llm.Message{llm.UserText("question 0")}
	for i := 1; i < turns; i++ {
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: []llm.ContentBlock{llm.TextBlock("answer")}},
			llm.UserText("question "+strings.Repeat("x", i)))
	}
	return msgs
}

func cachedRequest(msgs []llm.Message) *llm.Request {
	return &llm.Request{Model: testModel, MaxTokens: 100,
		System:   []llm.SystemBlock{{Type: llm.BlockText, Text: bigSystem, CacheControl: llm.Ephemeral()}},
		Messages: msgs}
}

// The first request writes the prefix up to its breakpoint, the next one
// with the same prefix reads it; the parts add up to the request.
func TestCacheWritesThenReadsAPrefix(t *testing.T) {
	p, _ := cachingFake(t, 2)
	first := usageOf(t, p, cachedRequest(conversation(1)))
	if first.CacheCreationInputTokens < 1024 || first.CacheReadInputTokens != 0 || first.InputTokens == 0 ||
		first.CacheCreation.Ephemeral5mInputTokens != first.CacheCreationInputTokens {
		t.Fatalf("first request: %+v", first)
	}
	second := usageOf(t, p, cachedRequest(conversation(2)))
	if second.CacheReadInputTokens != first.CacheCreationInputTokens || second.CacheCreationInputTokens != 0 {
		t.Fatalf("second request: %+v (first %+v)", second, first)
	}
	encoded, _ := json.Marshal(cachedRequest(conversation(2)))
	if got, want := second.PromptTokens(), estimateTokens(len(encoded)); got != want {
		t.Errorf("the parts add up to %d tokens, the request is %d", got, want)
	}
}

// A prefix under the model's minimum is silently not cached: no write,
// no read, all input.
func TestCacheIgnoresAPrefixUnderTheMinimum(t *testing.T) {
	p, _ := cachingFake(t, 2)
	for i := 0; i < 2; i++ {
		req := cachedRequest(conversation(1))
		req.System[0].Text = "short"
		if u := usageOf(t, p, req); u.CacheCreationInputTokens != 0 || u.CacheReadInputTokens != 0 || u.InputTokens == 0 {
			t.Fatalf("request %d: %+v", i+1, u)
		}
	}
	// The same prefix on Opus 4.6 (minimum 4,096) is not cached either.
	p, _ = cachingFake(t, 2)
	for i := 0; i < 2; i++ {
		req := cachedRequest(conversation(1))
		req.Model = "claude-opus-4-6"
		if u := usageOf(t, p, req); u.CacheCreationInputTokens != 0 || u.CacheReadInputTokens != 0 {
			t.Fatalf("opus request %d: %+v", i+1, u)
		}
	}
}

// A cached prefix lives 5 minutes from its last use (1 hour with ttl
// "1h"); a read starts its lifetime again.
func TestCacheLifetime(t *testing.T) {
	p, now := cachingFake(t, 5)
	usageOf(t, p, cachedRequest(conversation(1)))
	*now = now.Add(4 * time.Minute)
	if u := usageOf(t, p, cachedRequest(conversation(1))); u.CacheReadInputTokens == 0 {
		t.Fatalf("read after 4 minutes: %+v", u)
	}
	*now = now.Add(4 * time.Minute) // 8 minutes after the write, 4 after the read
	if u := usageOf(t, p, cachedRequest(conversation(1))); u.CacheReadInputTokens == 0 {
		t.Fatalf("a read did not start the lifetime again: %+v", u)
	}
	*now = now.Add(5*time.Minute + time.Second)
	if u := usageOf(t, p, cachedRequest(conversation(1))); u.CacheReadInputTokens != 0 || u.CacheCreationInputTokens == 0 {
		t.Fatalf("read after the lifetime: %+v", u)
	}
	hour := cachedRequest(conversation(1))
	hour.System[0].CacheControl = llm.EphemeralTTL("1h")
	*now = now.Add(time.Hour)
	u := usageOf(t, p, hour)
	if u.CacheCreation.Ephemeral1hInputTokens != u.CacheCreationInputTokens || u.CacheCreationInputTokens == 0 {
		t.Fatalf("1-hour write: %+v", u)
	}
}

// Automatic caching (top-level cache_control) puts the breakpoint on the
// conversation's tail: each exchange reads what the one before wrote and
// writes only the new part (two short messages with their roles: under
// 40 tokens).
func TestAutomaticCachingFollowsTheTail(t *testing.T) {
	p, _ := cachingFake(t, 6)
	var last llm.Usage
	for turns := 1; turns <= 6; turns++ {
		req := cachedRequest(conversation(turns))
		req.System[0].CacheControl = nil
		req.CacheControl = llm.Ephemeral()
		u := usageOf(t, p, req)
		if turns > 1 && (u.CacheReadInputTokens != last.CacheReadInputTokens+last.CacheCreationInputTokens || u.CacheCreationInputTokens == 0 || u.CacheCreationInputTokens > 40) {
			t.Fatalf("turn %d: %+v after %+v", turns, u, last)
		}
		last = u
	}
	if share := last.CacheReadShare(); share < 0.9 {
		t.Errorf("read share %.2f at the sixth turn", share)
	}
}

// A breakpoint looks back over 20 blocks at most: a prefix cached further
// back is not found.
func TestCacheLooksBackTwentyBlocks(t *testing.T) {
	for _, c := range []struct {
		added int
		hit   bool
	}{{19, true}, {20, false}} {
		p, _ := cachingFake(t, 2)
		msgs := conversation(1)
		req := cachedRequest(msgs)
		req.System[0].CacheControl = nil
		req.Messages = []llm.Message{msgs[0].WithCacheControl(llm.Ephemeral())}
		usageOf(t, p, req)
		blocks := []llm.ContentBlock{llm.TextBlock("question 0")}
		for i := 0; i < c.added; i++ {
			blocks = append(blocks, llm.TextBlock("more"))
		}
		later := cachedRequest(nil)
		later.System[0].CacheControl = nil
		later.Messages = []llm.Message{llm.Message{Role: llm.RoleUser, Content: blocks}.WithCacheControl(llm.Ephemeral())}
		if u := usageOf(t, p, later); (u.CacheReadInputTokens > 0) != c.hit {
			t.Errorf("%d blocks later: %+v, want a read %v", c.added, u, c.hit)
		}
	}
}

// A change early in the prompt misses everything after it; tool_choice
// and thinking miss the message prefixes only. The spelling of a block
// (its members' order) is not a change.
func TestCacheInvalidation(t *testing.T) {
	withTail := func(msgs []llm.Message) *llm.Request {
		req := cachedRequest(msgs)
		req.Messages[len(msgs)-1] = msgs[len(msgs)-1].WithCacheControl(llm.Ephemeral())
		return req
	}
	p, _ := cachingFake(t, 4)
	first := usageOf(t, p, withTail(conversation(3)))
	choice := withTail(conversation(3))
	choice.ToolChoice = &llm.ToolChoice{Type: "none"}
	u := usageOf(t, p, choice)
	if u.CacheReadInputTokens == 0 || u.CacheReadInputTokens >= first.CacheCreationInputTokens {
		t.Errorf("tool_choice changed: read %d, want the system prefix only (of %d)", u.CacheReadInputTokens, first.CacheCreationInputTokens)
	}
	early := withTail(conversation(3))
	early.System[0].Text = "Now: 10:01. " + bigSystem
	if u := usageOf(t, p, early); u.CacheReadInputTokens != 0 {
		t.Errorf("the system prompt changed: read %d", u.CacheReadInputTokens)
	}
	var respelled []llm.Message
	for _, m := range conversation(3) {
		data, _ := json.Marshal(m)
		var back llm.Message
		json.Unmarshal([]byte(strings.Replace(string(data), `{"type":"text","text":"answer"}`, `{"text":"answer","type":"text"}`, 1)), &back)
		respelled = append(respelled, back)
	}
	if u := usageOf(t, p, withTail(respelled)); u.CacheReadInputTokens != first.CacheCreationInputTokens {
		t.Errorf("the same blocks spelled otherwise: read %d, want %d", u.CacheReadInputTokens, first.CacheCreationInputTokens)
	}
}

// A scripted usage is returned as written, whatever the cache did.
func TestGivenUsageIsKeptWithCaching(t *testing.T) {
	p := New(mustParse(t, `{"responses":[{"content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":7,"output_tokens":1}}]}`))
	if u := usageOf(t, p, cachedRequest(conversation(1))); u != (llm.Usage{InputTokens: 7, OutputTokens: 1}) {
		t.Errorf("usage %+v", u)
	}
}

// The API caches the whole prompt before a breakpoint, the messages' roles
// and the brackets around the blocks included; only what follows the last
// breakpoint is input. With the breakpoint on the tail, the input left is
// the request's settings (model, max_tokens); with it on the system prompt,
// the messages are input, their structure with them.
func TestCacheCountsTheStructureBeforeTheBreakpoint(t *testing.T) {
	msgs := conversation(12) // 23 messages: their roles and brackets are about 150 tokens
	p, _ := cachingFake(t, 2)
	tail := cachedRequest(msgs)
	tail.CacheControl = llm.Ephemeral()
	u := usageOf(t, p, tail)
	settings, _ := json.Marshal(&llm.Request{Model: tail.Model, MaxTokens: tail.MaxTokens, CacheControl: tail.CacheControl})
	if u.CacheCreationInputTokens == 0 || u.InputTokens > estimateTokens(len(settings)) {
		t.Errorf("breakpoint on the tail: %+v; want at most the settings' %d tokens as input", u, estimateTokens(len(settings)))
	}
	p, _ = cachingFake(t, 2)
	u = usageOf(t, p, cachedRequest(msgs))
	messages, _ := json.Marshal(msgs)
	if u.InputTokens < estimateTokens(len(messages)) {
		t.Errorf("breakpoint on the system prompt: %d tokens of input, under the messages' %d", u.InputTokens, estimateTokens(len(messages)))
	}
}
