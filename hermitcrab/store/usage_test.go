package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/llmkernels/kernels/internal/sqlite"
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

// A file from before wakes were marked scripted (schema step 3) reads its
// wakes as they were, real, read-only without a write; a read-write open
// adds the mark and keeps every figure.
func TestWakesFromBeforeTheScriptedMarkKeepTheirCost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hermitcrab.db")
	old, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range append(slices.Clone(schema.Steps[:3]),
		fmt.Sprintf(`PRAGMA application_id = %d`, sqlite.HermitcrabID), `PRAGMA user_version = 3`,
		`INSERT INTO wakes (trigger, place, due, at, day, tier, status, reason, reply, cost, finished)
			VALUES ('k', 'wake 0.5.1', 'd', '2026-11-28T10:00:00.000000000Z', '2026-11-28', 1, 'woke', 'r', 'ok', 0.25, '2026-11-28T10:00:01.000000000Z')`) {
		if _, err := old.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	old.Close()
	ctx := context.Background()
	for _, open := range []func(string, Options) (*Store, error){OpenReadOnly, Open} {
		s, err := open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		list, err := s.Wakes(ctx, 0, 0)
		if err != nil || len(list) != 1 || list[0].CostUSD != 0.25 || list[0].ScriptedUSD != 0 {
			t.Fatalf("the old wake: %+v %v", list, err)
		}
		s.Close()
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.FinishWake(ctx, 1, WakeEnd{Status: WakeDone, Reply: "again", CostUSD: 0.5, Scripted: true, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if list, err := s.Wakes(ctx, 0, 0); err != nil || list[0].CostUSD != 0.5 || list[0].ScriptedUSD != 0.5 {
		t.Fatalf("a wake finished scripted: %+v %v", list, err)
	}
}
