package conversation_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/script"
)

// chatScript is the script of an ordinary chat of n exchanges at the
// present tier of the default shell: each reply about 600 characters after
// a short thinking block, and every third exchange a block_read of stash
// before it (a second call in the exchange). Enough light-tier answers
// follow for the compressions auto-save asks for as history fills.
func chatScript(n int) string {
	var entries []string
	think := func(i, j int) string {
		return fmt.Sprintf(`{"type":"thinking","thinking":"The person asks about step %d; answer plainly.","signature":"sig-%d-%d"}`, i, i, j)
	}
	reply := func(i int) string {
		return kerneltest.TextBlock(fmt.Sprintf("Step %d: ", i) + strings.Repeat("Let us plant basil near the tomatoes and keep notes in stash. ", 10))
	}
	model := func(m string) string { return fmt.Sprintf(`"model":%q`, m) }
	for i := 1; i <= n; i++ {
		if i%3 == 0 {
			entries = append(entries, fmt.Sprintf(`{"match":{%s,"last_user_contains":"question %d?"},"response":{"content":[%s,%s]}}`,
				model("claude-sonnet-4-6"), i, think(i, 1), kerneltest.ToolUse(fmt.Sprintf("toolu_%d", i), "block_read", map[string]string{"name": "stash"})))
			entries = append(entries, fmt.Sprintf(`{"match":{%s,"tool_result_for":"block_read"},"response":{"content":[%s,%s]}}`,
				model("claude-sonnet-4-6"), think(i, 2), reply(i)))
			continue
		}
		entries = append(entries, fmt.Sprintf(`{"match":{%s,"last_user_contains":"question %d?"},"response":{"content":[%s,%s]}}`,
			model("claude-sonnet-4-6"), i, think(i, 1), reply(i)))
	}
	for i := 0; i < n; i++ {
		entries = append(entries, fmt.Sprintf(`{"match":{%s},"response":{"content":[%s]}}`, model("claude-haiku-4-5-20251001"),
			kerneltest.TextBlock(`{"kind": "summary", "text": "Garden planning, steps gathered."}`)))
	}
	return `{"responses":[` + strings.Join(entries, ",") + `]}`
}

// chatLine is the person's i-th line of chatScript's chat (about 180
// characters).
func chatLine(i int) string {
	return fmt.Sprintf("%s question %d?", strings.Repeat("What should we try next for the garden plan? ", 4), i)
}

// runChat says n lines of chatScript's chat on the conversation "c" and
// returns the present-tier requests the LLM got, in order.
func runChat(t testing.TB, k *kernel.Kernel, p *script.Provider, n int) []*llm.Request {
	t.Helper()
	ctx := context.Background()
	for i := 1; i <= n; i++ {
		if _, err := k.Conversation().Say(ctx, "c", chatLine(i), conversation.CallOptions{}); err != nil {
			t.Fatalf("exchange %d: %v", i, err)
		}
	}
	var out []*llm.Request
	for _, r := range p.Requests() {
		if r.Model == "claude-sonnet-4-6" {
			out = append(out, r)
		}
	}
	return out
}

// wire is v as sent.
func wire(t testing.TB, v any) []byte {
	t.Helper()
	data, err := llm.MarshalWire(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Between calls the tools are byte for byte the same, and the system
// prompt too unless a block it shows changed; every request ends on a cache breakpoint, the window stays within
// max_messages, and the messages a call sends start with those of the call
// before it except when a chunk of old exchanges is dropped: at most once
// in five exchanges with the default window of 20 messages.
func TestCallsKeepTheirPrefixForTheCache(t *testing.T) {
	const n = 30
	k, p := kerneltest.New(t, chatScript(n))
	reqs := runChat(t, k, p, n)
	if len(reqs) != n+n/3 {
		t.Fatalf("%d present-tier requests, want %d", len(reqs), n+n/3)
	}
	breaks, systemChanges := 0, 0
	for i, r := range reqs {
		// The window is trimmed before an exchange; its tool loop adds turns.
		last := r.Messages[len(r.Messages)-1].Content[0]
		if r.CacheControl == nil || (last.Type != llm.BlockToolResult && len(r.Messages) > 20) {
			t.Fatalf("request %d: cache_control %v, %d messages", i, r.CacheControl, len(r.Messages))
		}
		if i == 0 {
			continue
		}
		prev := reqs[i-1]
		if !bytes.Equal(wire(t, r.Tools), wire(t, prev.Tools)) {
			t.Fatalf("request %d: the tools changed:\n%s\n%s", i, wire(t, prev.Tools), wire(t, r.Tools))
		}
		if !bytes.Equal(wire(t, r.System), wire(t, prev.System)) {
			systemChanges++
		}
		// The breakpoints move from call to call; the API reads a prefix
		// whatever breakpoints its blocks carry.
		msgs, prevMsgs := unmarked(r.Messages), unmarked(prev.Messages)
		if len(msgs) < len(prevMsgs) || !bytes.Equal(wire(t, msgs[:len(prevMsgs)]), wire(t, prevMsgs)) {
			breaks++
		}
	}
	// History grows a level after its first nine entries (its top's
	// pscale, which the prompt shows, rises): the one change to the
	// system prompt in these 30 exchanges.
	if systemChanges > 1 {
		t.Fatalf("the system prompt changed %d times in %d exchanges", systemChanges, n)
	}
	t.Logf("the message prefix changed %d times", breaks)
	if breaks > n/5 {
		t.Fatalf("the message prefix changed %d times in %d exchanges: dropped in chunks, it changes at most %d times", breaks, n, n/5)
	}
}

// unmarked is msgs without their cache breakpoints.
func unmarked(msgs []llm.Message) []llm.Message {
	return (&llm.Request{Messages: msgs}).WithoutCache().Messages
}

// --no-cache (Client.NoCache) sends no breakpoint at all: none on the
// tools, the system prompt, a message or the request.
func TestNoCacheSendsNoBreakpoint(t *testing.T) {
	k, p := kerneltest.New(t, chatScript(3))
	k.Conversation().Client().NoCache = true
	reqs := runChat(t, k, p, 3)
	for i, r := range p.Requests() {
		if bytes.Contains(wire(t, r), []byte("cache_control")) {
			t.Fatalf("request %d carries a breakpoint: %s", i, wire(t, r))
		}
	}
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
}

// approxTokens is the request's size as the fakes estimate input tokens:
// its JSON bytes / 4.
func approxTokens(t testing.TB, r *llm.Request) int {
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return (len(data) + 3) / 4
}

// Tokens at the door (issue 24's budgets): the boot request with its tool
// definitions on the default shell within 1,500 tokens, and a
// conversational request after 20 exchanges within 2,500.
func TestRequestSizesAtTheDoor(t *testing.T) {
	k, p := kerneltest.New(t, chatScript(20))
	reqs := runChat(t, k, p, 20)
	after := approxTokens(t, reqs[len(reqs)-1])
	t.Logf("the request after 20 exchanges: about %d tokens", after)
	if got := after; got > 2500 {
		t.Errorf("the request after 20 exchanges is about %d tokens, over 2,500", got)
	}
	boot, bp := kerneltest.New(t, kerneltest.Replies(kerneltest.TextBlock("I will build my shell.")))
	if _, err := boot.Conversation().Call(context.Background(), []llm.Message{llm.UserText("BOOT")}, conversation.CallOptions{Tier: prompt.Deep}); err != nil {
		t.Fatal(err)
	}
	t.Logf("the boot request: about %d tokens", approxTokens(t, bp.Requests()[0]))
	if got := approxTokens(t, bp.Requests()[0]); got > 1500 {
		t.Errorf("the boot request is about %d tokens, over 1,500", got)
	}
}

// The figures docs/hermitcrab.md gives for a 30-exchange chat at the
// present tier against the simulated cache (BenchmarkChatCache): token
// counts, not time, so they hold on any machine. At least 65% of input is
// read from the cache, and the effective input per request (uncached +
// 1.25 × written + 0.1 × read) is at most 1,180 tokens, 41% of the 2,845
// of a window that slid by one message with no breakpoint on its tail.
func TestChatReadsFromTheCache(t *testing.T) {
	rec := cachedChat(t, 30)
	share, effective := rec.usage.CacheReadShare(), rec.usage.EffectiveInputTokens()/float64(rec.calls)
	t.Logf("%d requests: %.1f%% of input read from the cache, %.0f effective input tokens per request", rec.calls, 100*share, effective)
	if rec.calls != 40 {
		t.Fatalf("%d present-tier requests, want 40", rec.calls)
	}
	if share < 0.65 {
		t.Errorf("%.1f%% of input read from the cache, under 65%%", 100*share)
	}
	if effective > 1180 {
		t.Errorf("%.0f effective input tokens per request, over 1,180", effective)
	}
}

// breakpoints counts the content blocks of msgs that carry cache_control.
func breakpoints(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.CacheControl != nil {
				n++
			}
		}
	}
	return n
}

// usageLog records each request and the usage of its answer.
type usageLog struct {
	inner    llm.Provider
	mu       sync.Mutex
	requests []*llm.Request
	usage    []llm.Usage
}

func (p *usageLog) Messages(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	resp, err := p.inner.Messages(ctx, req)
	if err == nil {
		p.mu.Lock()
		p.requests, p.usage = append(p.requests, req), append(p.usage, resp.Usage)
		p.mu.Unlock()
	}
	return resp, err
}

// The automatic breakpoint on the tail finds the prefix the call before
// wrote only within the 20 blocks before it (the API's lookback), and an
// answer of many blocks (a web search's cited text comes a block per
// citation) holds more: a breakpoint on the call before's tail still reads
// it. Each call places its own breakpoints, whatever the window it is
// given holds, and hands back and saves none.
func TestLongAnswersStillReadTheCache(t *testing.T) {
	const n = 6
	var entries []string
	for i := 1; i <= n+1; i++ {
		parts := []string{fmt.Sprintf(`{"type":"thinking","thinking":"Step %d.","signature":"sig-%d"}`, i, i)}
		for j := 0; j < 22; j++ {
			parts = append(parts, kerneltest.TextBlock(fmt.Sprintf("Part %d of answer %d: basil grows well beside tomatoes.", j, i)))
		}
		entries = append(entries, fmt.Sprintf(`{"match":{"model":"claude-sonnet-4-6","last_user_contains":"question %d?"},"response":{"content":[%s]}}`, i, strings.Join(parts, ",")))
	}
	for i := 0; i <= n; i++ {
		entries = append(entries, fmt.Sprintf(`{"match":{"model":"claude-haiku-4-5-20251001"},"response":{"content":[%s]}}`, kerneltest.TextBlock(`{"kind": "summary", "text": "Garden steps."}`)))
	}
	s, err := script.Parse([]byte(`{"responses":[` + strings.Join(entries, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	p := &usageLog{inner: script.New(s)}
	k := kerneltest.Open(t, kernel.Options{Client: &llm.Client{Provider: p}, ServerTools: true})
	ctx := context.Background()
	var last *conversation.CallResult
	for i := 1; i <= n; i++ {
		if last, err = k.Conversation().Say(ctx, "c", chatLine(i), conversation.CallOptions{}); err != nil {
			t.Fatalf("exchange %d: %v", i, err)
		}
	}
	wrote, calls := false, 0
	for i, r := range p.requests {
		if r.Model != "claude-sonnet-4-6" {
			continue
		}
		u := p.usage[i]
		if want := min(calls, 1); breakpoints(r.Messages) != want {
			t.Errorf("call %d carries %d breakpoints in its messages, want %d", calls+1, breakpoints(r.Messages), want)
		}
		if wrote && u.CacheReadInputTokens == 0 {
			t.Errorf("call %d read nothing from the cache: %+v", calls+1, u)
		}
		wrote = wrote || u.CacheCreationInputTokens > 0
		calls++
	}
	if !wrote {
		t.Fatal("no request was cached")
	}
	saved, err := k.Conversation().Conversation(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if breakpoints(saved) != 0 || breakpoints(last.Messages) != 0 {
		t.Errorf("breakpoints left: %d in the saved conversation, %d in the window handed back", breakpoints(saved), breakpoints(last.Messages))
	}
	// A window given back with breakpoints of its own is sent with the
	// call's only.
	given := append([]llm.Message(nil), last.Messages...)
	for i := range given[:4] {
		given[i] = given[i].WithCacheControl(llm.Ephemeral())
	}
	given = append(given, llm.UserText(chatLine(n+1)))
	if _, err := k.Conversation().Call(ctx, given, conversation.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := breakpoints(p.requests[len(p.requests)-1].Messages); got != 1 {
		t.Errorf("a window given back with 4 breakpoints was sent with %d", got)
	}
}
