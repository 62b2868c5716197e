package shell_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/hermitcrab/shell"
	"github.com/llmkernels/kernels/pscale"
)

// seedNames are the nine blocks the issue asks the default shell to seed.
var seedNames = []string{"capabilities", "constitution", "cook", "history", "purpose", "relationships", "stash", "touchstone", "wake"}

// maxPscale0 is the length a block's pscale 0 may reach: a sentence or two.
const maxPscale0 = 170

func defaults(t *testing.T) map[string]*pscale.Block {
	t.Helper()
	blocks, err := shell.Default()
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

func addr(t *testing.T, s string) pscale.Address {
	t.Helper()
	a, err := pscale.ParseAddress(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// digitChildren lists a node's digit children as {"1": text, …}.
func digitChildren(t *testing.T, b *pscale.Block, path string) map[string]string {
	t.Helper()
	v, err := pscale.Read(b, addr(t, path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v.Children
}

func TestDefaultHoldsExactlyTheNineSeedBlocks(t *testing.T) {
	if got := shell.Names(); !slices.Equal(got, seedNames) {
		t.Fatalf("Names() = %q, want %q", got, seedNames)
	}
	blocks := defaults(t)
	got := make([]string, 0, len(blocks))
	for name := range blocks {
		got = append(got, name)
	}
	slices.Sort(got)
	if !slices.Equal(got, seedNames) {
		t.Fatalf("Default() holds %q, want %q", got, seedNames)
	}
}

func TestEveryBlockIsCanonicalWithALeanPscale0(t *testing.T) {
	var f struct {
		Blocks map[string]json.RawMessage `json:"blocks"`
	}
	if err := json.Unmarshal(shell.Raw(), &f); err != nil {
		t.Fatal(err)
	}
	for name, raw := range f.Blocks {
		b, note, err := pscale.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if note != "" {
			t.Errorf("%s is not canonical: %s", name, note)
		}
		if b.Place != 1 || len(b.Extra) != 0 {
			t.Errorf("%s: place %d, extra fields %v; want place 1 and nothing else", name, b.Place, b.Extra)
		}
		root := b.Tree.Children[0]
		if root == nil || root.Leaf || root.Text == "" {
			t.Errorf(`%s: tree["0"] must be a branch with its text at "_"`, name)
			continue
		}
		if n := utf8.RuneCountInString(root.Text); n > maxPscale0 {
			t.Errorf("%s: pscale 0 is %d characters, over %d: %q", name, n, maxPscale0, root.Text)
		}
	}
}

func TestWakeCarriesTheTierInstructionsAndParameters(t *testing.T) {
	wake := defaults(t)["wake"]
	want := map[string][]string{
		"0.9.1": {"constitution 0", "purpose 0", "wake 0.1", "stash"},
		"0.9.2": {"constitution 0", "touchstone 0", "capabilities 0", "cook 0", "wake 0.2", "purpose", "relationships 0", "history 0", "stash"},
		"0.9.3": {"touchstone", "constitution 0.6", "capabilities 0.3", "cook 0", "wake 0.3", "purpose", "relationships 0", "history", "stash"},
		"0.9.4": {"model claude-haiku-4-5-20251001", "max_tokens 4096", "max_tool_loops 5", "max_messages 20"},
		"0.9.5": {"model claude-sonnet-4-6", "max_tokens 8192", "thinking enabled 4000", "max_tool_loops 10", "max_messages 20"},
		"0.9.6": {"model claude-opus-4-6", "max_tokens 16000", "thinking adaptive", "max_tool_loops 12", "max_messages 20"},
	}
	if got := digitChildren(t, wake, "0.9"); len(got) != len(want) {
		t.Fatalf("wake 0.9 has children %v, want exactly 1-6", got)
	}
	for path, lines := range want {
		v, err := pscale.Read(wake, addr(t, path))
		if err != nil {
			t.Fatalf("wake %s: %v", path, err)
		}
		if v.Content == "" {
			t.Errorf("wake %s has no text of its own", path)
		}
		wantChildren := map[string]string{}
		for i, line := range lines {
			wantChildren[string(rune('1'+i))] = line
		}
		if !reflect.DeepEqual(v.Children, wantChildren) {
			t.Errorf("wake %s children = %v, want %v", path, v.Children, wantChildren)
		}
	}
}

func TestEveryTierInstructionNamesABlockAndAddressThatExist(t *testing.T) {
	blocks := defaults(t)
	for tier := prompt.Light; tier <= prompt.Deep; tier++ {
		lines, err := prompt.Instructions(prompt.Blocks(blocks), tier)
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) == 0 {
			t.Fatalf("tier %d has no instructions", tier)
		}
		for _, line := range lines {
			in, err := prompt.ParseInstruction(line)
			if err != nil {
				t.Fatalf("tier %d: %v", tier, err)
			}
			b, ok := blocks[in.Block]
			if !ok {
				t.Errorf("tier %d instruction %q: no block %q", tier, line, in.Block)
				continue
			}
			if _, err := pscale.BSP(b, pscale.Query{Address: in.Address, Pscale: in.Point}); err != nil {
				t.Errorf("tier %d instruction %q: %v", tier, line, err)
			}
		}
	}
}

func TestCompiledPromptsFitTheirBudgets(t *testing.T) {
	budgets := map[int]int{prompt.Light: 300, prompt.Present: 480, prompt.Deep: 1700}
	src := prompt.Blocks(defaults(t))
	for tier := prompt.Light; tier <= prompt.Deep; tier++ {
		c, err := prompt.Compile(src, tier)
		if err != nil {
			t.Fatal(err)
		}
		if c.Aperture || len(c.Problems) != 0 {
			t.Fatalf("tier %d did not compile from wake 0.9.%d: aperture %v, problems %q", tier, tier, c.Aperture, c.Problems)
		}
		tokens := prompt.EstimateTokens(c.Text)
		t.Logf("tier %d: %d characters, %d estimated tokens (budget %d)", tier, utf8.RuneCountInString(c.Text), tokens, budgets[tier])
		if tokens > budgets[tier] {
			t.Errorf("tier %d prompt is %d estimated tokens, over its budget of %d:\n%s", tier, tokens, budgets[tier], c.Text)
		}
	}
}

func TestTouchstoneIsTheDefaultsAndRendersUnder2200Characters(t *testing.T) {
	ts, err := shell.Touchstone()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(ts)
	want, _ := json.Marshal(defaults(t)["touchstone"])
	if string(got) != string(want) {
		t.Fatalf("Touchstone() differs from Default()[\"touchstone\"]:\n%s\n%s", got, want)
	}
	r, err := pscale.BSP(ts, pscale.Query{})
	if err != nil {
		t.Fatal(err)
	}
	section := pscale.RenderSection("touchstone", r)
	if n := utf8.RuneCountInString(section); n >= 2200 {
		t.Fatalf("touchstone renders to %d characters, want under 2200", n)
	}
	for _, term := range []string{"place", "(place-1)-i", "0.12 = 0.1.2", "mode?", "block:", "spindle:", "point:", "disc:", "ring:", "dir:", "star:", "digit 0", "summary", "emergence", "nine children stay"} {
		if !strings.Contains(section, term) {
			t.Errorf("touchstone does not teach %q", term)
		}
	}
}

func TestTouchstoneUpdatedIsATime(t *testing.T) {
	if _, err := time.Parse(time.RFC3339, shell.TouchstoneUpdated); err != nil {
		t.Fatal(err)
	}
}

func TestShellContractIsWholeInConstitution06Text(t *testing.T) {
	v, err := pscale.Read(defaults(t)["constitution"], addr(t, "0.6"))
	if err != nil {
		t.Fatal(err)
	}
	for _, term := range []string{
		"React function component", "props", "No import statements",
		"const { useState, useEffect, useRef } = React;", "Inline styles only", "#0a0a1a",
		"props.callLLM(messages, {tier})", "props.conversation.save", "props.conversation.load",
		"export default", "recompile(jsx)",
	} {
		if !strings.Contains(v.Content, term) {
			t.Errorf("constitution 0.6's own text lacks %q (the boot prompt shows only that text): %s", term, v.Content)
		}
	}
}

func TestNamingIsLeftEmptyForMigration(t *testing.T) {
	v, err := pscale.Read(defaults(t)["constitution"], addr(t, "0.5"))
	if err != nil {
		t.Fatal(err)
	}
	if v.Content == "" || len(v.Children) != 0 {
		t.Fatalf("constitution 0.5 must explain naming and have no entries yet, got %q with children %v", v.Content, v.Children)
	}
}

func TestCapabilitiesSelfSaysRecompileEndsTheBoot(t *testing.T) {
	v, err := pscale.Read(defaults(t)["capabilities"], addr(t, "0.3"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v.Content, "recompile") || !strings.Contains(v.Content, "boot ends") {
		t.Fatalf("capabilities 0.3's own text must say recompile builds the interface and ends the boot: %q", v.Content)
	}
}

func TestCapabilitiesNamesEveryTool(t *testing.T) {
	caps, err := json.Marshal(defaults(t)["capabilities"])
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{
		"web_search", "web_fetch", "code_execution",
		"block_read", "block_write", "block_list", "block_create", "bsp(", "resolve(", "write_entry", "compress(",
		"get_source", "recompile(", "set_tools", "call_llm",
		"clipboard_read", "clipboard_write", "speak(", "listen(", "notify(", "download(", "open_tab", "get_geolocation", "fs_",
		"get_datetime", "fetch_url", "50,000",
	} {
		if !strings.Contains(string(caps), tool) {
			t.Errorf("capabilities does not mention %q", tool)
		}
	}
}

func TestDefaultReturnsIndependentCopies(t *testing.T) {
	first := defaults(t)
	if err := pscale.Write(first["purpose"], addr(t, "0.1"), "changed by the caller"); err != nil {
		t.Fatal(err)
	}
	if _, err := pscale.Read(defaults(t)["purpose"], addr(t, "0.1")); err == nil {
		t.Fatal("a change to one Default() result shows in the next")
	}
	ts, err := shell.Touchstone()
	if err != nil {
		t.Fatal(err)
	}
	if ts == first["touchstone"] {
		t.Fatal("Touchstone() returns the block Default() handed out")
	}
	raw := shell.Raw()
	raw[0] = 'x'
	if shell.Raw()[0] == 'x' {
		t.Fatal("a change to Raw()'s bytes shows in the next call")
	}
}
