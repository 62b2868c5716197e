package cli

import (
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/llmkernels/kernels/llm"
)

// visible is what a redrawn line shows: s without the carriage return
// and the escapes that erase, dim and reset it.
func visible(s string) string {
	return strings.NewReplacer("\r", "", "\x1b[2K", "", "\x1b[K", "", "\x1b[2m", "", "\x1b[0m", "").Replace(s)
}

// Width reads a terminal's columns, and says 0 for what is no terminal.
func TestWidthIsTheTerminalsColumns(t *testing.T) {
	_, slave := pty(t)
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 40}); err != nil {
		t.Fatal(err)
	}
	if got := Width(slave); got != 40 {
		t.Errorf("Width of a 40-column terminal: %d", got)
	}
	if got := Width(&strings.Builder{}); got != 0 {
		t.Errorf("Width of a buffer: %d", got)
	}
}

// A line redrawn in place fits the terminal with a column to spare: the
// newest words are kept, and a prefix too long for the terminal is cut.
// Before, the thinking line was 80 columns whatever the terminal, and
// wrapped on a narrower one, leaving a row behind at each redraw.
func TestFitLineAndTheThinkingLineFitTheTerminal(t *testing.T) {
	for _, c := range []struct {
		prefix, text string
		width        int
		want         string
	}{
		{"think: ", "one two three", 0, "think: one two three"},
		{"think: ", "one two three", 80, "think: one two three"},
		{"think: ", "one two three", 15, "think: … three"},
		{"a long prefix: ", "text", 8, "a long…"},
	} {
		if got := FitLine(c.prefix, c.text, c.width); got != c.want {
			t.Errorf("FitLine(%q, %q, %d) = %q, want %q", c.prefix, c.text, c.width, got, c.want)
		}
	}
	var out, errOut strings.Builder
	l := NewLive(&out, &errOut, Normal)
	l.dim, l.cols = true, func() int { return 30 }
	l.Delta(llm.Delta{Kind: llm.DeltaThinking, Text: strings.Repeat("considering the question ", 5)})
	line := visible(errOut.String())
	if n := utf8.RuneCountInString(line); n > 29 || !strings.HasPrefix(line, "thinking: …") || !strings.HasSuffix(line, "question") {
		t.Errorf("the thinking line on a 30-column terminal (%d columns): %q", n, line)
	}
}
