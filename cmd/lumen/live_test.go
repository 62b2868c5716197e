package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/lumen"
)

// What streams in is foreign text: on the dim line and in a tool call's
// line, escapes and bidi controls are shown as escapes, never sent to the
// terminal. The only escapes written are the line's own (erase, dim).
func TestLiveProgressIsInert(t *testing.T) {
	var b bytes.Buffer
	l := &live{w: &b, level: cli.Normal, dim: true}
	l.progress(lumen.Progress{Step: "think", Delta: llm.Delta{Kind: llm.DeltaThinking, Text: "evil \x1b]0;pwned\x07 \u202e reversed"}})
	l.progress(lumen.Progress{Step: "think", Delta: llm.Delta{Kind: llm.DeltaText, Text: `{"situation": "\x1b[31mred"}`}})
	l.progress(lumen.Progress{Step: "create-skill", Delta: llm.Delta{Kind: llm.DeltaBlockStart, Block: llm.BlockToolUse, Name: "create_skill\x1b[2J"}})
	l.progress(lumen.Progress{Step: "create-skill", Delta: llm.Delta{Kind: llm.DeltaRestart}})
	out := b.String()
	own := strings.NewReplacer("\r\x1b[2K", "", "\x1b[2m", "", "\x1b[0m", "").Replace(out)
	if strings.ContainsAny(own, "\x1b\x07\u202e") {
		t.Fatalf("a control character from the answer reached the terminal: %q", out)
	}
	for _, want := range []string{"think: ", "reversed", "create-skill: → create_skill", "asked for again"} {
		if !strings.Contains(out, want) {
			t.Errorf("the progress lacks %q: %q", want, out)
		}
	}
}

// On a pipe (or with NO_COLOR) a step that thinks says so once, plainly;
// what it writes is not shown; --quiet shows nothing.
func TestLiveProgressOnAPipeIsPlainAndQuietIsSilent(t *testing.T) {
	var b bytes.Buffer
	l := &live{w: &b, level: cli.Normal}
	for _, piece := range []string{"one", "two"} {
		l.progress(lumen.Progress{Step: "think", Delta: llm.Delta{Kind: llm.DeltaThinking, Text: piece}})
	}
	l.progress(lumen.Progress{Step: "think", Delta: llm.Delta{Kind: llm.DeltaText, Text: "{}"}})
	l.progress(lumen.Progress{Step: "decide", Delta: llm.Delta{Kind: llm.DeltaThinking, Text: "three"}})
	l.call(lumen.CallReport{Step: "decide", Model: "m", Usage: lumen.Usage{Calls: 1, InputTokens: 100, CacheReadTokens: 84}})
	if got, want := b.String(), "think: thinking…\ndecide: thinking…\ndecide m: 100→0 tokens, cost $0.0000, 84% of input from cache, 0.0s\n"; got != want {
		t.Fatalf("plain progress %q, want %q", got, want)
	}
	b.Reset()
	q := &live{w: &b, level: cli.Quiet, dim: true}
	q.progress(lumen.Progress{Step: "think", Delta: llm.Delta{Kind: llm.DeltaThinking, Text: "x"}})
	q.call(lumen.CallReport{Step: "think"})
	if b.Len() != 0 {
		t.Fatalf("--quiet showed %q", b.String())
	}
}

// The dim line fits the terminal, whatever its width, keeping the newest
// words: a line wider than the terminal wraps, and the erase before each
// redraw reaches its last row only, so the others would pile up.
func TestLiveProgressFitsANarrowTerminal(t *testing.T) {
	var b bytes.Buffer
	l := &live{w: &b, level: cli.Normal, dim: true, cols: func() int { return 40 }}
	for range 5 {
		l.progress(lumen.Progress{Step: "think", Delta: llm.Delta{Kind: llm.DeltaThinking, Text: "weighing what Sam said about the garden "}})
	}
	for _, draw := range strings.Split(b.String(), "\r\x1b[2K")[1:] {
		line := strings.NewReplacer("\x1b[2m", "", "\x1b[0m", "").Replace(draw)
		if n := utf8.RuneCountInString(line); n > 39 || !strings.HasPrefix(line, "think: ") || !strings.HasSuffix(line, "garden") {
			t.Fatalf("a %d-column line on a 40-column terminal: %q", n, line)
		}
	}
}
