package prompt

import (
	"strconv"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/pscale"
)

func block(t *testing.T, js string) *pscale.Block {
	t.Helper()
	b, _, err := pscale.Parse([]byte(js))
	if err != nil {
		t.Fatalf("parse %s: %v", js, err)
	}
	return b
}

// testBlocks is a small shell: a wake block with instructions for tiers 1
// and 2 and parameters for tier 2.
func testBlocks(t *testing.T) Blocks {
	return Blocks{
		"purpose": block(t, `{"place":1,"tree":{"0":{"_":"Why I am here.","1":"Help the person.","2":{"_":"Learn.","1":"Read widely."}}}}`),
		"stash":   block(t, `{"place":1,"tree":{"0":"Notes between activations."}}`),
		"wake": block(t, `{"place":1,"tree":{"0":{"_":"How you wake.","9":{"_":"Prompt and invocation.",
			"1":{"_":"Light prompt","1":"purpose 0","2":"stash"},
			"2":{"_":"Present prompt","1":"purpose 0.2","2":"purpose 0.21 -2","3":"stash"},
			"5":{"_":"Present params","1":"model claude-sonnet-4-6","2":"max_tokens 8192","3":"thinking enabled 4000","4":"max_messages 12"}}}}}`),
	}
}

func TestCompileRunsEachInstructionThroughBSPAndJoinsSections(t *testing.T) {
	c, err := Compile(testBlocks(t), Present)
	if err != nil {
		t.Fatal(err)
	}
	want := "[purpose 0.2]\n  [0] Why I am here.\n  [-1] Learn." +
		"\n\n[purpose 0.21 -2] Read widely." +
		"\n\n[stash]\n0: Notes between activations."
	if c.Text != want {
		t.Fatalf("compiled prompt:\n%s\nwant:\n%s", c.Text, want)
	}
	if c.Aperture || len(c.Sections) != 3 || len(c.Problems) != 0 {
		t.Fatalf("aperture %v sections %d problems %v", c.Aperture, len(c.Sections), c.Problems)
	}
}

func TestCompileFallsBackToTheApertureWithoutInstructions(t *testing.T) {
	blocks := testBlocks(t)
	for _, src := range []Blocks{
		{"purpose": blocks["purpose"], "stash": blocks["stash"]}, // no wake block
		blocks, // a wake block without 0.9.3
	} {
		c, err := Compile(src, Deep)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Aperture || !strings.Contains(c.Text, "[purpose] Why I am here.") || !strings.Contains(c.Text, "[stash] Notes between activations.") {
			t.Fatalf("want the aperture of every block, got aperture=%v:\n%s", c.Aperture, c.Text)
		}
	}
}

func TestAFailingInstructionIsShownToTheLLMNotFatal(t *testing.T) {
	src := testBlocks(t)
	wake := src["wake"]
	addr, _ := pscale.ParseAddress("0.9.1.3")
	pscale.Write(wake, addr, "purpose 0.7")
	addr, _ = pscale.ParseAddress("0.9.1.4")
	pscale.Write(wake, addr, "nosuch")
	c, err := Compile(src, Light)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Problems) != 2 {
		t.Fatalf("want 2 problems, got %q", c.Problems)
	}
	if !strings.Contains(c.Text, "[purpose 0.7] (this instruction failed: block \"purpose\": path 0.7: digit 7 not present (children: 1,2))") {
		t.Fatalf("failed section does not say why:\n%s", c.Text)
	}
	if !strings.Contains(c.Text, `[nosuch] (this instruction failed: block "nosuch": no such block)`) {
		t.Fatalf("missing block not shown:\n%s", c.Text)
	}
	if !strings.HasPrefix(c.Text, "[purpose 0]\n  [0] Why I am here.") {
		t.Fatalf("the good instructions must still compile:\n%s", c.Text)
	}
}

func TestParseInstruction(t *testing.T) {
	in, err := ParseInstruction("purpose 0.9.4 -2")
	if err != nil || in.Block != "purpose" || in.Address.Digits() != "094" || *in.Point != -2 {
		t.Fatalf("got %+v, %v", in, err)
	}
	in, err = ParseInstruction("  stash  ")
	if err != nil || in.Block != "stash" || in.Address != nil || in.Point != nil {
		t.Fatalf("got %+v, %v", in, err)
	}
	for _, bad := range []string{"", "a b c d", "purpose 0.x", "purpose 0.1 up"} {
		if _, err := ParseInstruction(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestMultiDotAddressesInInstructionsAreNotCut(t *testing.T) {
	src := testBlocks(t)
	addr, _ := pscale.ParseAddress("0.9.1.1")
	pscale.Write(src["wake"], addr, "wake 0.9.5")
	c, _ := Compile(src, Light)
	if !strings.HasPrefix(c.Text, "[wake 0.9.5]\n  [0] How you wake.\n  [-1] Prompt and invocation.\n  [-2] Present params") {
		t.Fatalf("0.9.5 must walk 0,9,5:\n%s", c.Text)
	}
}

func TestTierParamsReadTheWakeBlock(t *testing.T) {
	p, err := TierParams(testBlocks(t), Present)
	if err != nil {
		t.Fatal(err)
	}
	if p.Model != "claude-sonnet-4-6" || p.MaxTokens != 8192 || p.Thinking == nil || p.Thinking.Type != "enabled" ||
		p.Thinking.BudgetTokens != 4000 || p.MaxMessages != 12 || p.MaxToolLoops != DefaultMaxToolLoops || len(p.Notes) != 0 {
		t.Fatalf("params %+v", p)
	}
}

func TestTierParamsFallBackPerSpec(t *testing.T) {
	noWake := Blocks{}
	light, _ := TierParams(noWake, Light)
	deep, _ := TierParams(noWake, Deep)
	if light.Model != FallbackFastModel || deep.Model != FallbackModel || deep.MaxTokens != 8192 || deep.Thinking != nil {
		t.Fatalf("fallbacks: light %+v deep %+v", light, deep)
	}
	if len(deep.Notes) != 1 || !strings.Contains(deep.Notes[0], "using claude-opus-4-6") {
		t.Fatalf("the fallback must be noted: %q", deep.Notes)
	}
}

// A model configured for a tier (the config file's hermitcrab.models)
// takes the place of the spec's fallback, never of the wake block's own
// choice.
func TestAConfiguredTierModelNeverReplacesTheWakeBlocksChoice(t *testing.T) {
	light, _ := TierParamsWith(Blocks{}, Light, "configured-light")
	if light.Model != "configured-light" || len(light.Notes) != 1 || !strings.Contains(light.Notes[0], "the model configured for the tier") {
		t.Fatalf("no wake block: %+v", light)
	}
	present, _ := TierParamsWith(testBlocks(t), Present, "configured-present")
	if present.Model != "claude-sonnet-4-6" || len(present.Notes) != 0 {
		t.Fatalf("the wake block names one: %+v", present)
	}
}

func TestTierParamsThinkingForms(t *testing.T) {
	cases := map[string]string{
		"thinking enabled 8000":  "enabled/8000",
		"thinking adaptive":      "adaptive/0",
		"thinking off":           "none",
		"thinking enabled lots":  "none",
		"thinking maybe":         "none",
		"thinking enabled 8,000": "enabled/8000",
	}
	for line, want := range cases {
		src := testBlocks(t)
		addr, _ := pscale.ParseAddress("0.9.5.3")
		pscale.Write(src["wake"], addr, line)
		p, _ := TierParams(src, Present)
		got := "none"
		if p.Thinking != nil {
			got = p.Thinking.Type + "/" + strconv.Itoa(p.Thinking.BudgetTokens)
		}
		if got != want {
			t.Errorf("%q: got %s, want %s", line, got, want)
		}
		if want == "none" && line != "thinking off" && len(p.Notes) == 0 {
			t.Errorf("%q: a malformed line must be noted", line)
		}
	}
}

func TestTierParamsNoteWhatTheyIgnore(t *testing.T) {
	src := testBlocks(t)
	addr, _ := pscale.ParseAddress("0.9.5.5")
	pscale.Write(src["wake"], addr, "temperature 0.2")
	addr, _ = pscale.ParseAddress("0.9.5.2")
	pscale.Write(src["wake"], addr, "max_tokens -5")
	p, _ := TierParams(src, Present)
	if p.MaxTokens != FallbackMaxTokens || len(p.Notes) != 2 {
		t.Fatalf("max_tokens %d notes %q", p.MaxTokens, p.Notes)
	}
}

func TestEstimateTokens(t *testing.T) {
	if EstimateTokens("") != 0 || EstimateTokens("abcd") != 1 || EstimateTokens("abcde") != 2 || EstimateTokens("éééé") != 1 {
		t.Fatal("estimate is characters / 4 rounded up")
	}
}

func TestBlockModeOfAGrownBlockIsItsNarrative(t *testing.T) {
	blocks := testBlocks(t)
	hist := block(t, `{"place":1,"tree":{"0":{"_":"What happened."}}}`)
	for n := 1; n <= 40; n++ {
		if _, err := pscale.AppendEntry(hist, "exchange "+strconv.Itoa(n), func(a pscale.Address, _ *pscale.Node) string { return "summary " + a.String() }); err != nil {
			t.Fatal(err)
		}
	}
	blocks["history"] = hist
	blocks["wake"] = block(t, `{"place":1,"tree":{"0":{"9":{"1":{"1":"history","2":"stash"}}}}}`)
	c, err := Compile(blocks, Light)
	if err != nil {
		t.Fatal(err)
	}
	want := "[history]\nWhat happened.\n1: summary 0\n2: summary 02\n3: summary 03\n4: summary 04\n5:\n  (1 earlier entry: bsp history 05)\n  2: exchange 38\n  3: exchange 39\n  4: exchange 40" +
		"\n\n[stash]\n0: Notes between activations."
	if c.Text != want {
		t.Fatalf("compiled:\n%s\nwant:\n%s", c.Text, want)
	}
}
