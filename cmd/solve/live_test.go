package main

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/llm"
)

// On a terminal the live view draws the streamed answer on one dim line,
// inert (an escape in the model's text is shown, not obeyed), and clears
// it before the loop's next line; a broken stream sent again counts from
// zero. On a pipe nothing of the stream is written; --quiet keeps the
// questions and drops the progress lines.
func TestTheLiveViewShowsTheStreamInertAndClearsIt(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	v := &liveView{w: &b, redraw: true, chars: map[string]int{}}
	v.delta("0123456789ab", "resolve", llm.Delta{Kind: llm.DeltaText, Text: "Hello \x1b]52;c;bad\x07 world"})
	if got := b.String(); !strings.HasPrefix(got, "\r\x1b[K\x1b[2msolve: node 01234567 resolve: answer arriving, 23 characters") ||
		!strings.Contains(got, `\x1b]52`) || strings.Contains(got, "\x1b]52") {
		t.Fatalf("streaming line %q", got)
	}
	b.Reset()
	v.delta("0123456789ab", "resolve", llm.Delta{Kind: llm.DeltaRestart})
	v.drawn = time.Time{}
	v.delta("0123456789ab", "resolve", llm.Delta{Kind: llm.DeltaText, Text: "abc"})
	if got := b.String(); !strings.Contains(got, "answer arriving, 3 characters") {
		t.Errorf("after a restart: %q", got)
	}
	b.Reset()
	if _, err := v.Write([]byte("solve: live: resolved 1\n")); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "\r\x1b[Ksolve: live: resolved 1\n" {
		t.Errorf("a loop line after the streaming line: %q", got)
	}
	b.Reset()
	pipe := newLiveView(&b, cli.Normal) // a strings.Builder is no terminal
	pipe.delta("n", "resolve", llm.Delta{Kind: llm.DeltaText, Text: "words"})
	quiet := newLiveView(&b, cli.Quiet)
	_, _ = quiet.Write([]byte("solve: live: resolved 1\n"))
	_, _ = quiet.Write([]byte("Answer: [c]ommand to register, …\n"))
	if got := b.String(); got != "Answer: [c]ommand to register, …\n" {
		t.Errorf("pipe and --quiet wrote %q", got)
	}
}

// The streaming line fits the terminal, whatever its width: its start
// says which node and operation, its end the newest text. Before, it was
// about 105 columns long, so on an 80-column terminal it wrapped and each
// redraw left a row behind.
func TestTheStreamingLineFitsTheTerminal(t *testing.T) {
	for _, cols := range []int{80, 40} {
		var b strings.Builder
		v := &liveView{w: &b, redraw: true, chars: map[string]int{}, cols: func() int { return cols }}
		v.delta("0123456789ab", "identify_constraints", llm.Delta{Kind: llm.DeltaText, Text: `{"constraints": [{"id": "c1", "text": "go test passes"`})
		line := strings.NewReplacer("\r", "", "\x1b[K", "", "\x1b[2m", "", "\x1b[0m", "").Replace(b.String())
		if n := utf8.RuneCountInString(line); n >= cols || !strings.HasPrefix(line, "solve: node 01234567") {
			t.Errorf("%d columns: a %d-column line %q", cols, n, line)
		}
	}
}
