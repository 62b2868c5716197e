package conversation_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/blocks"
	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/hermitcrab/store"

	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/pscale"
)

func TestBootCallsRecompileAndStoresTheJSX(t *testing.T) {
	jsx := "function Shell(props) { return <div style={{background: '#0a0a1a'}}>hello</div>; }"
	k, p := kerneltest.New(t, `{"responses":[
		{"content":[{"type":"thinking","thinking":"Let me read my purpose.","signature":"sig1"},`+kerneltest.ToolUse("t1", "block_read", map[string]string{"name": "purpose"})+`]},
		{"content":[{"type":"thinking","thinking":"Now the shell.","signature":"sig2"},{"type":"text","text":"Building my face."},`+kerneltest.ToolUse("t2", "recompile", map[string]string{"jsx": jsx})+`]}
	]}`)
	res, err := k.Conversation().Boot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Shell == nil || res.Shell.Source != jsx {
		t.Fatalf("shell not returned: %+v", res.Shell)
	}
	stored, err := k.Conversation().Store().LatestShell(context.Background(), "")
	if err != nil || stored.Source != jsx {
		t.Fatalf("shell not stored: %+v %v", stored, err)
	}
	reqs := p.Requests()
	if len(reqs) != 2 || p.Remaining() != 0 {
		t.Fatalf("want exactly 2 requests (recompile ends the boot), got %d", len(reqs))
	}
	boot := reqs[0]
	if boot.Model != "claude-opus-4-6" || boot.MaxTokens != 16000 || boot.Thinking.Type != "adaptive" {
		t.Fatalf("boot is not the deep tier of the wake block: model %s max_tokens %d thinking %+v", boot.Model, boot.MaxTokens, boot.Thinking)
	}
	if len(boot.Messages) != 1 || boot.Messages[0].Text() != "BOOT" {
		t.Fatalf("boot message: %+v", boot.Messages)
	}
	if !strings.HasPrefix(boot.System[0].Text, "[touchstone]") || boot.System[0].CacheControl == nil {
		t.Fatalf("boot system prompt must start with the whole touchstone and be cached: %.80q", boot.System[0].Text)
	}
	if last := boot.Tools[len(boot.Tools)-1]; last.CacheControl == nil {
		t.Fatalf("the last tool carries no cache breakpoint: %s", last.Name)
	}
}

// A boot on a scripted client is metered at the deep tier's model, and its
// cost line (the one the page and the CLI show) says once that nothing was
// charged; on a real client it does not.
func TestABootsCostLineSaysWhenItWasScripted(t *testing.T) {
	const note = " (scripted: what claude-opus-4-6 would charge; nothing is charged)"
	for _, scripted := range []bool{true, false} {
		k, _ := kerneltest.New(t, `{"responses":[{"content":[`+kerneltest.ToolUse("t1", "recompile", map[string]string{"jsx": "function Shell() { return <div/>; }"})+`]}]}`)
		client := *k.Conversation().Client()
		client.Scripted = scripted
		k.Conversation().SetClient(&client)
		res, err := k.Conversation().Boot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		line := res.CostLine()
		if res.Result.CostUSD <= 0 || strings.HasSuffix(line, ", 0% of input from cache"+note) != scripted || strings.Contains(line, "scripted") != scripted {
			t.Errorf("scripted %v: cost line %q", scripted, line)
		}
	}
}

func TestBootWithoutRecompileBuildsNoShell(t *testing.T) {
	k, _ := kerneltest.New(t, `{"responses":[{"content":[{"type":"text","text":"Hello, I am awake."}]}]}`)
	_, err := k.Conversation().Boot(context.Background())
	if !errors.Is(err, ErrNoShell) || !strings.Contains(err.Error(), "end_turn") {
		t.Fatalf("want ErrNoShell naming the stop reason, got %v", err)
	}
}

func TestAChatTurnPersistsTheBlockWriteAndAHistoryEntry(t *testing.T) {
	k, p := kerneltest.New(t, `{"responses":[
		{"content":[{"type":"thinking","thinking":"Note it.","signature":"s"},`+kerneltest.ToolUse("t1", "block_write", map[string]string{"name": "purpose", "path": "0.1", "content": "Help Ada finish her thesis."})+`]},
		{"content":[{"type":"thinking","thinking":"Reply.","signature":"s2"},{"type":"text","text":"I have written that into my purpose, Ada."}]}
	]}`)
	ctx := context.Background()
	res, err := k.Conversation().Say(ctx, "terminal", "My name is Ada and I need help finishing my thesis.", conversation.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "I have written that into my purpose, Ada." {
		t.Fatalf("reply %q", res.Text)
	}
	if got := kerneltest.Text(t, k, "purpose", "0.1"); got != "Help Ada finish her thesis." {
		t.Fatalf("purpose 0.1 = %q", got)
	}
	if got := kerneltest.Text(t, k, "history", "0.1"); got != "I have written that into my purpose, Ada." {
		t.Fatalf("history 0.1 = %q (auto-save)", got)
	}
	conv, err := k.Conversation().Conversation(ctx, "terminal")
	if err != nil || len(conv) != 4 {
		t.Fatalf("saved conversation has %d messages, want 4 (user, tool_use, tool_result, reply): %v", len(conv), err)
	}
	if m := p.Requests()[0]; m.Model != "claude-sonnet-4-6" || !strings.Contains(m.System[0].Text, "[purpose]") {
		t.Fatalf("chat is the present tier: model %s", m.Model)
	}
}

func TestAWakeEditChangesTheNextCallsModelAndPrompt(t *testing.T) {
	k, p := kerneltest.New(t, `{"responses":[
		{"content":[{"type":"thinking","thinking":"Edit wake.","signature":"s"},`+kerneltest.ToolUse("t1", "block_write", map[string]string{"name": "wake", "path": "0.9.5.1", "content": "model claude-haiku-4-5"})+`,`+
		kerneltest.ToolUse("t2", "block_write", map[string]string{"name": "wake", "path": "0.9.2.1", "content": "relationships"})+`]},
		{"content":[{"type":"text","text":"Done: cheaper model, and I will see all of relationships."}]},
		{"content":[{"type":"text","text":"Hello again."}]}
	]}`)
	ctx := context.Background()
	if _, err := k.Conversation().Say(ctx, "c", "Switch yourself to a cheaper model.", conversation.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Conversation().Say(ctx, "c", "Hi.", conversation.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	before, after := reqs[0], reqs[2]
	if before.Model != "claude-sonnet-4-6" || after.Model != "claude-haiku-4-5" {
		t.Fatalf("model before %s after %s", before.Model, after.Model)
	}
	if strings.Contains(before.System[0].Text, "[relationships]\n") || !strings.HasPrefix(after.System[0].Text, "[relationships]\n") {
		t.Fatalf("the new first instruction did not change the prompt:\n%.200s", after.System[0].Text)
	}
}

func TestAThinkingBudgetAtMaxTokensIsFixedBeforeTheRequest(t *testing.T) {
	k, p := kerneltest.New(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`)
	ctx := context.Background()
	k.Blocks().Edit(ctx, "wake", func(b *pscale.Block) error {
		addr, _ := pscale.ParseAddress("0.9.5.3")
		return pscale.Write(b, addr, "thinking enabled 8192")
	})
	res, err := k.Conversation().Call(ctx, []llm.Message{llm.UserText("hi")}, conversation.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sent := p.Requests()[0]
	if sent.Thinking.BudgetTokens != 8192 || sent.MaxTokens <= 8192 {
		t.Fatalf("sent thinking %d with max_tokens %d", sent.Thinking.BudgetTokens, sent.MaxTokens)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "max_tokens raised from 8192") {
		t.Fatalf("the fix is not reported: %q", res.Notes)
	}
}

func TestCompressWritesToTheNodeWhoseChildrenItCompressed(t *testing.T) {
	k, p := kerneltest.New(t, `{"responses":[
		{"content":[{"type":"thinking","thinking":"0.3 is full.","signature":"s"},`+kerneltest.ToolUse("t1", "compress", map[string]string{"name": "stash", "path": "0.3"})+`]},
		{"match":{"system_contains":"You compress memory"},"response":{"content":[{"type":"text","text":"{\"mode\":\"emergence\",\"text\":\"Small notes became a habit of care.\"}"}]}},
		{"content":[{"type":"text","text":"Compressed."}]}
	]}`)
	ctx := context.Background()
	useTools(t, k, "compress")
	if _, err := k.Blocks().WriteEntry(ctx, "stash", kerneltest.At(t, "0"), "topic three"); err != nil { // 0.1
		t.Fatal(err)
	}
	k.Blocks().WriteEntry(ctx, "stash", kerneltest.At(t, "0"), "two") // 0.2
	k.Blocks().WriteEntry(ctx, "stash", kerneltest.At(t, "0"), "three")
	for i := 1; i <= 9; i++ {
		if _, err := k.Blocks().WriteEntry(ctx, "stash", kerneltest.At(t, "0.3"), fmt.Sprintf("note %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := k.Conversation().Call(ctx, []llm.Message{llm.UserText("Tidy the stash.")}, conversation.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := kerneltest.Text(t, k, "stash", "0.3"); got != "Small notes became a habit of care." {
		t.Fatalf("stash 0.3 = %q, want the compression", got)
	}
	if got := kerneltest.Text(t, k, "stash", "0"); strings.Contains(got, "habit") {
		t.Fatalf("compression written to the parent: %q", got)
	}
	for i := 1; i <= 9; i++ {
		if got := kerneltest.Text(t, k, "stash", fmt.Sprintf("0.3.%d", i)); got != fmt.Sprintf("note %d", i) {
			t.Fatalf("entry %d lost: %q", i, got)
		}
	}
	light := p.Requests()[1]
	if light.Model != "claude-haiku-4-5-20251001" || !strings.Contains(light.Messages[0].Text(), "9: note 9") {
		t.Fatalf("compress must ask the light tier with the nine entries: %s %q", light.Model, light.Messages[0].Text())
	}
}

func TestCompressRefusesANodeThatIsNotFull(t *testing.T) {
	k, _ := kerneltest.New(t, `{"responses":[]}`)
	_, err := k.Conversation().Compress(context.Background(), "stash", kerneltest.At(t, "0"))
	if err == nil || !strings.Contains(err.Error(), "not all taken") {
		t.Fatalf("got %v", err)
	}
}

// compressReply is a scripted light-tier answer to a compress request.
func compressReply(text string) string {
	return `{"match":{"system_contains":"You compress memory"},"response":{"content":[{"type":"text","text":` +
		strconv.Quote(`{"mode":"summary","text":"`+text+`"}`) + `}]}}`
}

func TestAutoSaveGrowsAFullHistoryAndKeepsItsDescription(t *testing.T) {
	k, p := kerneltest.New(t, `{"responses":[{"content":[{"type":"text","text":"tenth reply"}]},`+compressReply("Nine exchanges about the garden.")+`]}`)
	ctx := context.Background()
	for i := 1; i <= 9; i++ {
		k.Blocks().WriteEntry(ctx, "history", pscale.Address{}, fmt.Sprintf("exchange %d", i))
	}
	desc := kerneltest.Text(t, k, "history", "0")
	res, err := k.Conversation().Call(ctx, []llm.Message{llm.UserText("hi")}, conversation.CallOptions{})
	if err != nil || len(res.Notes) != 0 {
		t.Fatalf("%v, notes %q", err, res.Notes)
	}
	for path, want := range map[string]string{"0": desc, "01": "Nine exchanges about the garden.", "01.9": "exchange 9", "02.1": "tenth reply"} {
		if got := kerneltest.Text(t, k, "history", path); got != want {
			t.Errorf("history %s = %q, want %q", path, got, want)
		}
	}
	if light := p.Requests()[1]; light.Model != "claude-haiku-4-5-20251001" || !strings.Contains(light.Messages[0].Text(), "9: exchange 9") {
		t.Fatalf("the compression must go to the light tier with the nine entries: %s", light.Model)
	}
}

func TestAutoSaveSavesPastANodeItCannotCompressAndCompressesItLater(t *testing.T) {
	k, _ := kerneltest.New(t, `{"responses":[
		{"content":[{"type":"text","text":"tenth reply"}]},
		{"match":{"system_contains":"You compress memory"},"error":{"status":400,"type":"invalid_request_error","message":"no"}},
		{"content":[{"type":"text","text":"eleventh reply"}]},
		`+compressReply("Caught up.")+`
	]}`)
	ctx := context.Background()
	for i := 1; i <= 9; i++ {
		k.Blocks().WriteEntry(ctx, "history", pscale.Address{}, fmt.Sprintf("exchange %d", i))
	}
	res, err := k.Conversation().Call(ctx, []llm.Message{llm.UserText("hi")}, conversation.CallOptions{})
	if err != nil || !strings.Contains(strings.Join(res.Notes, "\n"), "could not be compressed") {
		t.Fatalf("%v, notes %q", err, res.Notes)
	}
	if got := kerneltest.Text(t, k, "history", "02.1"); got != "tenth reply" {
		t.Fatalf("the exchange was not saved past the full node: %q", got)
	}
	if _, err := k.Conversation().Call(ctx, []llm.Message{llm.UserText("again")}, conversation.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := kerneltest.Text(t, k, "history", "01"); got != "Caught up." {
		t.Fatalf("the next exchange did not compress the node left behind: %q", got)
	}
}

func TestAHundredExchangesAreAllSavedAndTheHistoryPromptStaysBounded(t *testing.T) {
	var entries []string
	for n := 1; n <= 100; n++ {
		entries = append(entries, fmt.Sprintf(`{"match":{"last_user_contains":"[message %d]"},"response":{"content":[{"type":"text","text":"reply %d: %s"}]}}`, n, n, strings.Repeat("words ", 60)))
	}
	for n := 1; n <= 12; n++ {
		entries = append(entries, compressReply(fmt.Sprintf("compression %d", n)))
	}
	k, p := kerneltest.New(t, `{"responses":[`+strings.Join(entries, ",")+`]}`)
	ctx := context.Background()
	for n := 1; n <= 100; n++ {
		res, err := k.Conversation().Say(ctx, "long", fmt.Sprintf("[message %d]", n), conversation.CallOptions{})
		if err != nil {
			t.Fatalf("exchange %d: %v", n, err)
		}
		if len(res.Notes) != 0 {
			t.Fatalf("exchange %d: notes %q", n, res.Notes)
		}
	}
	if p.Remaining() != 0 {
		t.Fatalf("%d scripted answers unused: the compressions did not all happen", p.Remaining())
	}
	b, err := k.Blocks().Block(ctx, "history")
	if err != nil || b.Place != 3 {
		t.Fatalf("history after 100 exchanges: place %d, %v", b.Place, err)
	}
	for n := 1; n <= 100; n++ {
		// Entry n sits at 0, then the base-9 digits of n−1 (each plus one).
		v := n - 1
		addr := fmt.Sprintf("0%d%d.%d", v/81+1, v/9%9+1, v%9+1)
		r, err := k.Blocks().BSP(ctx, "history", bspQuery(t, addr, -1))
		if err != nil || !strings.HasPrefix(r.Point.Text, fmt.Sprintf("reply %d: ", n)) {
			t.Fatalf("exchange %d at history %s: %+v %v", n, addr, r.Point, err)
		}
	}
	deep, err := prompt.Compile(k.Blocks().Source(ctx), prompt.Deep)
	if err != nil {
		t.Fatal(err)
	}
	var section string
	for _, s := range deep.Sections {
		if s.Instruction == "history" {
			section = s.Text
		}
	}
	if len(section) > 4000 || !strings.Contains(section, "reply 100: ") || strings.Contains(section, "reply 97: ") || !strings.Contains(section, "compression") {
		t.Fatalf("the deep prompt's history section (%d characters):\n%s", len(section), section)
	}
}

func TestAutoSaveKeeps500Characters(t *testing.T) {
	long := strings.Repeat("é", 600)
	k, _ := kerneltest.New(t, `{"responses":[{"content":[{"type":"text","text":"`+long+`"}]}]}`)
	if _, err := k.Conversation().Call(context.Background(), []llm.Message{llm.UserText("hi")}, conversation.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := kerneltest.Text(t, k, "history", "0.1"); got != strings.Repeat("é", 500)+"…" {
		t.Fatalf("history entry has %d characters", len([]rune(got)))
	}
}

func TestCallLLMDelegatesToTheChosenTierWithoutTools(t *testing.T) {
	k, p := kerneltest.New(t, `{"responses":[
		{"content":[{"type":"thinking","thinking":"Delegate.","signature":"s"},`+kerneltest.ToolUse("t1", "call_llm", map[string]string{"prompt": "Format as a list: apples pears", "model": "fast"})+`]},
		{"match":{"system_contains":"You are a delegate"},"response":{"content":[{"type":"text","text":"- apples\n- pears"}]}},
		{"content":[{"type":"thinking","thinking":"Done.","signature":"s2"},{"type":"text","text":"Here is your list."}]}
	]}`)
	useTools(t, k, "call_llm")
	if _, err := k.Conversation().Call(context.Background(), []llm.Message{llm.UserText("List my fruit.")}, conversation.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	delegate := reqs[1]
	if delegate.Model != "claude-haiku-4-5-20251001" || len(delegate.Tools) != 0 || delegate.Messages[0].Text() != "Format as a list: apples pears" {
		t.Fatalf("delegate call: model %s, %d tools, %q", delegate.Model, len(delegate.Tools), delegate.Messages[0].Text())
	}
	if got := reqs[2].Messages[2].Content[0].Content.Text; got != "- apples\n- pears" {
		t.Fatalf("the delegate's answer did not come back as the tool result: %q", got)
	}
}

func TestHistoryMovesItsOldestEntriesOutAtTheSizeLimitAndKeepsSaving(t *testing.T) {
	var entries []string
	for n := 1; n <= 250; n++ {
		entries = append(entries, fmt.Sprintf(`{"match":{"last_user_contains":"[message %d]"},"response":{"content":[{"type":"text","text":"reply %d: %s"}]}}`, n, n, strings.Repeat("words ", 30)))
	}
	for n := 1; n <= 40; n++ {
		entries = append(entries, compressReply(fmt.Sprintf("compression %d", n)))
	}
	k, _ := kerneltest.New(t, `{"responses":[`+strings.Join(entries, ",")+`]}`, func(o *kernel.Options) { o.MaxBlockBytes = 16 << 10 })
	ctx := context.Background()
	moved := 0
	for n := 1; n <= 250; n++ {
		res, err := k.Conversation().Call(ctx, []llm.Message{llm.UserText(fmt.Sprintf("[message %d]", n))}, conversation.CallOptions{})
		if err != nil {
			t.Fatalf("exchange %d: %v", n, err)
		}
		for _, note := range res.Notes {
			if !strings.Contains(note, "its oldest entries moved to block history-") {
				t.Fatalf("exchange %d: %q", n, note)
			}
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("250 exchanges in 16 KiB moved nothing out")
	}
	everyReplySavedOnce(t, k, 250)
	if b, _ := k.Blocks().Raw(ctx, "history"); len(b.Data) > 16<<10 {
		t.Fatalf("history is %d bytes", len(b.Data))
	}
}

// everyReplySavedOnce checks that replies 1…n ("reply N: …") are each an
// entry, once, at pscale -1, in history or in a block moved out of it, and
// readable there by BSP.
func everyReplySavedOnce(t *testing.T, k *kernel.Kernel, n int) {
	t.Helper()
	ctx := context.Background()
	names, _ := k.Conversation().Store().Names(ctx)
	where := map[string]string{}
	var walk func(block string, p pscale.Phrase)
	walk = func(block string, p pscale.Phrase) {
		if strings.HasPrefix(p.Text, "reply ") {
			key := strings.SplitN(p.Text, ":", 2)[0]
			if at, ok := where[key]; ok {
				t.Fatalf("%s is saved twice: at %s and at %s %s", key, at, block, p.Path)
			}
			where[key] = block + " " + p.Path
		}
		for _, c := range p.Children {
			walk(block, c)
		}
	}
	for _, name := range names {
		if name == "history" || strings.HasPrefix(name, "history-") {
			r, err := k.Blocks().Resolve(ctx, name, 9)
			if err != nil {
				t.Fatal(err)
			}
			walk(name, r)
		}
	}
	for i := 1; i <= n; i++ {
		at, ok := where[fmt.Sprintf("reply %d", i)]
		if !ok {
			t.Fatalf("exchange %d is in no history block (%v)", i, names)
		}
		block, path, _ := strings.Cut(at, " ")
		if r, err := k.Blocks().BSP(ctx, block, bspQuery(t, path, -1)); err != nil || !strings.HasPrefix(r.Point.Text, fmt.Sprintf("reply %d: ", i)) {
			t.Fatalf("exchange %d at %s %s, pscale -1: %+v %v", i, block, path, r.Point, err)
		}
	}
}

// TestHistoryKeepsSavingWhenTheLightTierNeverCompresses: with every
// compression failing (a wrong light-tier model, say), the full nodes are
// saved past, and at the size limit the oldest full node moves out
// uncompressed, so no exchange is lost.
func TestHistoryKeepsSavingWhenTheLightTierNeverCompresses(t *testing.T) {
	var entries []string
	for n := 1; n <= 150; n++ {
		entries = append(entries, fmt.Sprintf(`{"match":{"last_user_contains":"[message %d]"},"response":{"content":[{"type":"text","text":"reply %d: %s"}]}}`, n, n, strings.Repeat("words ", 30)),
			`{"match":{"system_contains":"You compress memory"},"error":{"status":404,"type":"not_found_error","message":"model: claude-retired"}}`,
			`{"match":{"system_contains":"You compress memory"},"error":{"status":404,"type":"not_found_error","message":"model: claude-retired"}}`)
	}
	k, _ := kerneltest.New(t, `{"responses":[`+strings.Join(entries, ",")+`]}`, func(o *kernel.Options) { o.MaxBlockBytes = 16 << 10 })
	ctx := context.Background()
	for n := 1; n <= 150; n++ {
		res, err := k.Conversation().Call(ctx, []llm.Message{llm.UserText(fmt.Sprintf("[message %d]", n))}, conversation.CallOptions{})
		if err != nil {
			t.Fatalf("exchange %d: %v", n, err)
		}
		for _, note := range res.Notes {
			if strings.Contains(note, "auto-save to history failed") || strings.Contains(note, "nothing could move") {
				t.Fatalf("exchange %d: %s", n, note)
			}
		}
	}
	everyReplySavedOnce(t, k, 150)
	if got := kerneltest.Text(t, k, "history", "01"); !strings.Contains(got, "not compressed, moved to block history-") {
		t.Fatalf("history 01 = %q", got)
	}
	// A walk into the node that moved out names the block it moved to,
	// and the same spindle there finds the entry.
	leaf := kerneltest.Text(t, k, "history", "01")
	moved := leaf[strings.LastIndex(leaf, " ")+1 : len(leaf)-1]
	_, err := k.Blocks().BSP(ctx, "history", bspQuery(t, "011"))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("moved to block %q", moved)) {
		t.Fatalf("bsp history 011 (history 01 is %q): %v", leaf, err)
	}
	if r, err := k.Blocks().BSP(ctx, moved, bspQuery(t, "011")); err != nil || len(r.Nodes) != 3 {
		t.Fatalf("bsp %s 011: %+v %v", moved, r, err)
	}
}

func TestConcurrentExchangesAreAllSavedOnceWhileHistoryGrows(t *testing.T) {
	const n = 40
	var entries []string
	for i := 1; i <= n; i++ {
		entries = append(entries, fmt.Sprintf(`{"match":{"last_user_contains":"[message %d]"},"response":{"content":[{"type":"text","text":"reply %d"}]}}`, i, i))
	}
	for i := 1; i <= 3*n; i++ {
		entries = append(entries, compressReply(fmt.Sprintf("compression %d", i)))
	}
	k, _ := kerneltest.New(t, `{"responses":[`+strings.Join(entries, ",")+`]}`)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := k.Conversation().Call(ctx, []llm.Message{llm.UserText(fmt.Sprintf("[message %d]", i))}, conversation.CallOptions{})
			if err == nil && len(res.Notes) > 0 {
				err = fmt.Errorf("message %d: notes %q", i, res.Notes)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	r, err := k.Blocks().Resolve(ctx, "history", 9)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	var walk func(p pscale.Phrase)
	walk = func(p pscale.Phrase) {
		if strings.HasPrefix(p.Text, "reply ") {
			seen[p.Text]++
		}
		for _, c := range p.Children {
			walk(c)
		}
	}
	walk(r)
	for i := 1; i <= n; i++ {
		if c := seen[fmt.Sprintf("reply %d", i)]; c != 1 {
			t.Errorf("reply %d saved %d times", i, c)
		}
	}
	b, _ := k.Blocks().Block(ctx, "history")
	if b.Place != 2 || len(pscale.Uncompressed(b)) != 0 {
		t.Fatalf("history after %d concurrent exchanges: place %d, uncompressed %v", n, b.Place, pscale.Uncompressed(b))
	}
}

func TestWriteEntryAndCompressRefuseMalformedPaths(t *testing.T) {
	k, _ := kerneltest.New(t, `{"responses":[]}`)
	ctx := context.Background()
	// Each path as an edge is given it: parsed (blocks.ParseAddress), then
	// taken by the operation.
	writeEntry := func(path any) error {
		addr, err := blocks.ParseAddress("path", path)
		if err == nil {
			_, err = k.Blocks().WriteEntry(ctx, "stash", addr, "x")
		}
		return err
	}
	compress := func(path any) error {
		addr, err := blocks.ParseAddress("path", path)
		if err == nil {
			_, err = k.Conversation().Compress(ctx, "stash", addr)
		}
		return err
	}
	for _, path := range []any{"0.x", "-1", "0..9.", "１", 1.5e300, "0.9.9"} {
		if err := writeEntry(path); err == nil {
			t.Errorf("write_entry at %v succeeded", path)
		}
		if err := compress(path); err == nil {
			t.Errorf("compress at %v succeeded", path)
		}
	}
	if _, err := k.Conversation().Compress(ctx, "no-such-block", kerneltest.At(t, "0")); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("compress of a missing block: %v", err)
	}
	if at, err := k.Blocks().WriteEntry(ctx, "stash", pscale.Address{}, "x"); err != nil || at.String() != "0.1" {
		t.Errorf("an empty path appends: %q %v", at, err)
	}
}

// TestAutoSaveGoesOnWhenAnotherWriterCompressedFirst: an append found the
// top full, and before its compression ran another exchange grew the block
// (or compressed the node): the late compression does nothing and says
// nothing, and no second light-tier call is made.
func TestAutoSaveGoesOnWhenAnotherWriterCompressedFirst(t *testing.T) {
	k, p := kerneltest.New(t, `{"responses":[`+compressReply("Nine entries.")+`]}`)
	ctx := context.Background()
	for i := 1; i <= 9; i++ {
		k.Blocks().WriteEntry(ctx, "history", pscale.Address{}, fmt.Sprintf("entry %d", i))
	}
	_, err := k.Blocks().WriteEntry(ctx, "history", pscale.Address{}, "entry 10")
	var full *pscale.FullError
	if !errors.As(err, &full) {
		t.Fatalf("a full top: %v", err)
	}
	if _, err := k.Conversation().CompressAuto(ctx, "history", full.Path); err != nil { // the other writer
		t.Fatal(err)
	}
	for _, late := range []string{full.Path.String(), "09"} { // the node as this append saw it; one gone after the growth
		addr, _ := pscale.ParseAddress(late)
		if _, err := k.Conversation().CompressAuto(ctx, "history", addr); err != nil {
			t.Fatalf("the late compression of %s: %v", late, err)
		}
	}
	if n := len(p.Requests()); n != 1 {
		t.Fatalf("%d light-tier calls, want the one", n)
	}
}

// compressing answers every call at once: a compression request with a
// numbered summary, anything else with "reply N: …" for the user's
// "[message N]".
type compressing struct{ compressions atomic.Int32 }

func (p *compressing) Messages(_ context.Context, req *llm.Request) (*llm.Response, error) {
	text := "reply " + strings.TrimSuffix(strings.TrimPrefix(req.Messages[len(req.Messages)-1].Text(), "[message "), "]") + ": " + strings.Repeat("words ", 60)
	if strings.Contains(req.System[0].Text, "You compress memory") {
		text = fmt.Sprintf(`{"mode":"summary","text":"compression %d"}`, p.compressions.Add(1))
	}
	return &llm.Response{Model: req.Model, StopReason: llm.StopEndTurn, Content: []llm.ContentBlock{llm.TextBlock(text)}}, nil
}

// TestAThousandExchangesAreAllSavedUnderTheSizeLimit: a thousand exchanges
// of 400-character replies under the default 64 KiB limit grow history to
// place 4 and move its oldest nodes to history-N blocks; every exchange is
// saved once and readable by BSP, every block stays under the limit, and
// the deep prompt's view of history stays bounded.
func TestAThousandExchangesAreAllSavedUnderTheSizeLimit(t *testing.T) {
	n := 1000
	if kerneltest.Race {
		n = 200
	}
	k := kerneltest.Open(t, kernel.Options{Client: &llm.Client{Provider: &compressing{}}})
	ctx := context.Background()
	for i := 1; i <= n; i++ {
		res, err := k.Conversation().Call(ctx, []llm.Message{llm.UserText(fmt.Sprintf("[message %d]", i))}, conversation.CallOptions{})
		if err != nil {
			t.Fatalf("exchange %d: %v", i, err)
		}
		for _, note := range res.Notes {
			if !strings.Contains(note, "its oldest entries moved to block history-") {
				t.Fatalf("exchange %d: %q", i, note)
			}
		}
	}
	everyReplySavedOnce(t, k, n)
	names, _ := k.Conversation().Store().Names(ctx)
	for _, name := range names {
		if b, _ := k.Blocks().Raw(ctx, name); len(b.Data) > store.DefaultMaxBlockBytes {
			t.Errorf("block %s is %d bytes", name, len(b.Data))
		}
	}
	deep, err := prompt.Compile(k.Blocks().Source(ctx), prompt.Deep)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range deep.Sections {
		if s.Instruction == "history" && (len(s.Text) > 4000 || !strings.Contains(s.Text, fmt.Sprintf("reply %d: ", n))) {
			t.Fatalf("the deep prompt's history section (%d characters):\n%s", len(s.Text), s.Text)
		}
	}
	if b, _ := k.Blocks().Block(ctx, "history"); !kerneltest.Race && b.Place != 4 {
		t.Fatalf("history after %d exchanges: place %d", n, b.Place)
	}
}
