package cli

import (
	"strings"
	"testing"

	"github.com/llmkernels/kernels/llm"
)

// hostileDelta is what a broken or hostile answer may stream: a title set
// by OSC, a screen clear, C1 CSI and a bidirectional override.
const hostileDelta = "a\x1b]0;pwned\x07\x1b[2J\u009b31m\u202eb"

func stream(l *Live, deltas ...llm.Delta) {
	for _, d := range deltas {
		l.Delta(d)
	}
}

// Every piece reaches the terminal inert, text and thinking alike, in
// plain mode (a pipe, NO_COLOR) and in the dim mode of a terminal.
func TestLiveShowsEveryDeltaInert(t *testing.T) {
	for _, dim := range []bool{false, true} {
		var out, errOut strings.Builder
		l := NewLive(&out, &errOut, Normal)
		l.dim = dim
		stream(l, llm.Delta{Kind: llm.DeltaBlockStart, Block: "thinking"}, llm.Delta{Kind: llm.DeltaThinking, Text: hostileDelta},
			llm.Delta{Kind: llm.DeltaBlockStop}, llm.Delta{Kind: llm.DeltaText, Text: hostileDelta + "\r"}, llm.Delta{Kind: llm.DeltaText, Text: "\nnext"})
		l.Line("→ tool " + hostileDelta)
		if !l.End() {
			t.Fatal("End says no text was shown")
		}
		for _, s := range []string{out.String(), strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(errOut.String(), "\x1b[2K", ""), "\x1b[2m", ""), "\x1b[0m", "")} {
			if strings.ContainsAny(s, "\x07\u009b\u202e") || strings.Contains(s, "\x1b]") || strings.Contains(s, "\x1b[2J") {
				t.Fatalf("dim %v: a control reached the terminal: %q", dim, s)
			}
		}
		if got := out.String(); got != `a\x1b]0;pwned\a\x1b[2J\u009b31m\u202eb`+"\nnext\n" {
			t.Fatalf("dim %v: text %q (a \\r\\n split across pieces is a line end)", dim, got)
		}
		if dim != strings.Contains(errOut.String(), "\x1b[2m") {
			t.Fatalf("dim %v: thinking line %q", dim, errOut.String())
		}
	}
}

// --quiet hides the thinking and the progress lines, never the answer.
func TestLiveQuietShowsOnlyTheAnswer(t *testing.T) {
	var out, errOut strings.Builder
	l := NewLive(&out, &errOut, Quiet)
	stream(l, llm.Delta{Kind: llm.DeltaThinking, Text: "hmm"}, llm.Delta{Kind: llm.DeltaText, Text: "the answer"})
	l.Line("· a progress line")
	l.End()
	if out.String() != "the answer\n" || errOut.String() != "" {
		t.Fatalf("out %q, errOut %q", out.String(), errOut.String())
	}
}

// The plain thinking line is said once per thinking block, and a text
// line left open on a terminal is ended before a progress line.
func TestLivePlainThinkingOnceAndProgressOnItsOwnLine(t *testing.T) {
	var b strings.Builder
	l := NewLive(&b, &b, Normal)
	l.outTerm = true
	stream(l, llm.Delta{Kind: llm.DeltaThinking, Text: "one"}, llm.Delta{Kind: llm.DeltaThinking, Text: "two"}, llm.Delta{Kind: llm.DeltaBlockStop},
		llm.Delta{Kind: llm.DeltaText, Text: "Let me look"})
	l.Answered()
	l.Line("→ block_read")
	stream(l, llm.Delta{Kind: llm.DeltaRestart}, llm.Delta{Kind: llm.DeltaText, Text: "Done."})
	l.End()
	want := "thinking…\nLet me look\n→ block_read\nDone.\n"
	if b.String() != want {
		t.Fatalf("got %q\nwant %q", b.String(), want)
	}
}

// An answer cut off and asked for again: on a pipe (a file) as on a
// terminal, at every level, the partial text is ended with a newline and
// the cut-off line before the answer that follows, never run together;
// the turns of a tool loop are on lines of their own too.
func TestLiveCutOffAnswerIsNeverRunTogether(t *testing.T) {
	for _, level := range []Output{Quiet, Normal} {
		for _, term := range []bool{false, true} {
			var out, errOut strings.Builder
			l := NewLive(&out, &errOut, level)
			l.outTerm = term
			stream(l, llm.Delta{Kind: llm.DeltaText, Text: "alpha beta gam"}, llm.Delta{Kind: llm.DeltaRestart},
				llm.Delta{Kind: llm.DeltaText, Text: "alpha beta gamma delta"})
			l.Answered()
			l.Line("→ block_read")
			stream(l, llm.Delta{Kind: llm.DeltaThinking, Text: "hm"}, llm.Delta{Kind: llm.DeltaRestart}, llm.Delta{Kind: llm.DeltaText, Text: "Done."})
			l.End()
			want := "alpha beta gam\n" + CutOff + "\nalpha beta gamma delta\nDone.\n"
			if out.String() != want {
				t.Fatalf("level %v, terminal %v: got %q\nwant %q", level, term, out.String(), want)
			}
		}
	}
}
