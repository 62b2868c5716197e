package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab"
	"github.com/llmkernels/kernels/llm/llmtest"
	"github.com/llmkernels/kernels/llm/script"
)

// pricedScript is a script of n answers that each bill 1000 input and
// 100 output tokens, so that every call costs something.
const pricedReply = `{"content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":1000,"output_tokens":100}}`

func pricedScript(n int) string {
	return `{"responses":[` + strings.TrimSuffix(strings.Repeat(pricedReply+",", n), ",") + `]}`
}

// The money hermitcrab keeps (tools list's last 7 days, wake status's
// today, each wake's cost) labels the part a scripted provider was
// metered at, in text and in --json, and shows real money as it is. A
// wake here is tier 1, claude-haiku-4-5: $0.0015 for its 1000 tokens in
// and 100 out.
func TestStoredMoneyLabelsItsScriptedPart(t *testing.T) {
	data := withTriggers(t, "webhook ci tier 1: look at the build")
	scriptFile := filepath.Join(t.TempDir(), "priced.json")
	if err := os.WriteFile(scriptFile, []byte(pricedScript(1)), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := script.Parse([]byte(pricedScript(2)))
	if err != nil {
		t.Fatal(err)
	}
	fake := llmtest.NewServer(s)
	defer fake.Close()
	mustHC(t, data, "sk-ant-test-key\n", "key", "set")
	post := func() {
		k, err := hermitcrab.Open(data, hermitcrab.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer k.Close()
		if _, err := k.Wakes().Webhook(context.Background(), "ci", []byte(`{"build":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	note := "scripted: what the kernel's models would charge; nothing is charged"
	type usage struct {
		CostUSD     float64  `json:"cost_usd"`
		ScriptedUSD *float64 `json:"scripted_usd"`
	}
	toolsWeek := func() (string, usage) {
		text, _ := mustHC(t, data, "", "tools", "list")
		js, _ := mustHC(t, data, "", "tools", "list", "--json")
		var doc struct {
			Usage usage `json:"usage_7_days"`
		}
		if err := json.Unmarshal([]byte(js), &doc); err != nil || doc.Usage.CostUSD <= 0 {
			t.Fatalf("tools list --json: %s %v", js, err)
		}
		return text, doc.Usage
	}
	wakeToday := func() (string, usage) {
		text, _ := mustHC(t, data, "", "wake", "status")
		js, _ := mustHC(t, data, "", "wake", "status", "--json")
		var doc struct {
			Today struct {
				Usage usage `json:"usage"`
			} `json:"today"`
		}
		if err := json.Unmarshal([]byte(js), &doc); err != nil || doc.Today.Usage.CostUSD <= 0 {
			t.Fatalf("wake status --json: %s %v", js, err)
		}
		return text, doc.Today.Usage
	}

	// A real provider (the fake Anthropic API): no label, no scripted part.
	mustHC(t, data, "hello\n", "chat", "--base-url", fake.URL)
	post()
	if out, _ := mustHC(t, data, "", "--base-url", fake.URL, "wake"); !strings.Contains(out, "($0.0015)") || strings.Contains(out, "scripted") {
		t.Fatalf("a real wake's line: %s", out)
	}
	for what, show := range map[string]func() (string, usage){"tools list": toolsWeek, "wake status": wakeToday} {
		text, u := show()
		if strings.Contains(text, "scripted") || u.ScriptedUSD != nil {
			t.Fatalf("%s after real calls labels money scripted: %s %+v", what, text, u)
		}
	}

	// The same again scripted: half of each figure is now scripted, and
	// the text says so once, with the amount.
	mustHC(t, data, "hello\n", "chat", "--provider", "script", "--script", scriptFile)
	post()
	if out, _ := mustHC(t, data, "", "--provider", "script", "--script", scriptFile, "wake"); !strings.Contains(out, "($0.0015*)") || !strings.HasSuffix(out, "\n* "+note+"\n") {
		t.Fatalf("a scripted wake's line: %s", out)
	}
	var recent struct {
		Recent []struct {
			CostUSD     float64  `json:"cost_usd"`
			ScriptedUSD *float64 `json:"scripted_usd"`
		} `json:"recent"`
	}
	if js, _ := mustHC(t, data, "", "wake", "status", "--json"); json.Unmarshal([]byte(js), &recent) != nil || len(recent.Recent) != 2 ||
		recent.Recent[0].ScriptedUSD == nil || *recent.Recent[0].ScriptedUSD != recent.Recent[0].CostUSD || recent.Recent[1].ScriptedUSD != nil {
		t.Fatalf("wake status --json: the wakes' scripted_usd: %s", js)
	}
	for what, show := range map[string]func() (string, usage){"tools list": toolsWeek, "wake status": wakeToday} {
		text, u := show()
		if u.ScriptedUSD == nil || math.Abs(*u.ScriptedUSD-u.CostUSD/2) > 1e-9 {
			t.Fatalf("%s --json: the scripted part of %+v is not half", what, u)
		}
		want := fmt.Sprintf("; of it, $%.4f %s\n", *u.ScriptedUSD, note)
		if !strings.Contains(text, want) || strings.Count(text, "scripted") != 1 {
			t.Fatalf("%s does not label its scripted part once as %q:\n%s", what, want, text)
		}
	}

	// The caps count scripted spend as real: $0.0030 spent today and a
	// wake estimated at $0.0015 pass a cap of $0.004, which real spend
	// alone ($0.0015) would not.
	post()
	if out, _ := mustHC(t, data, "", "--provider", "script", "--script", scriptFile, "--max-wake-cost", "0.004", "wake"); !strings.Contains(out, "skipped: the daily cap of $0.00") {
		t.Fatalf("a wake past the cap with scripted spend: %s", out)
	}
}
