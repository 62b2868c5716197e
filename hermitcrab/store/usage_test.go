package store

import (
	"context"
	"math"
	"testing"

	"github.com/llmkernels/kernels/llm"
)

// A day's tally kept before the scripted part existed keeps its figures
// when calls are added to it: its scripted part reads as none, and only
// the scripted calls added since count in it.
func TestUsageTallyFromBeforeTheScriptedPartKeepsItsFigures(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	old := `{"calls":3,"tokens":{"input_tokens":300,"output_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":600},"cost_usd":0.5}`
	if err := s.SetSetting(ctx, usageKey(UsageCall, "2026-11-28"), old); err != nil {
		t.Fatal(err)
	}
	if u, err := s.UsageSince(ctx, "", "2026-11-28"); err != nil || u.Calls != 3 || u.CostUSD != 0.5 || u.ScriptedUSD != 0 || u.ScriptedPart() != "" {
		t.Fatalf("the old tally as read: %+v %v", u, err)
	}
	one := llm.Usage{InputTokens: 100, OutputTokens: 10}
	if err := s.AddUsage(ctx, UsageCall, "2026-11-28", 1, one, 0.25, true); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUsage(ctx, UsageCall, "2026-11-28", 1, one, 0.125, false); err != nil {
		t.Fatal(err)
	}
	u, err := s.UsageSince(ctx, "", "2026-11-28")
	want := llm.Usage{InputTokens: 500, OutputTokens: 50, CacheReadInputTokens: 600}
	if err != nil || u.Calls != 5 || u.Tokens != want || math.Abs(u.CostUSD-0.875) > 1e-12 || math.Abs(u.ScriptedUSD-0.25) > 1e-12 {
		t.Fatalf("the tally after a scripted and a real call: %+v %v", u, err)
	}
	if got, want := u.ScriptedPart(), "; of it, $0.2500 scripted: what the kernel's models would charge; nothing is charged"; got != want {
		t.Fatalf("the label: %q, want %q", got, want)
	}
}
