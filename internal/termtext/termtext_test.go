package termtext

import (
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile holds what a broken or hostile answer may send a terminal: a
// title set by OSC, a screen clear, an OSC 52 clipboard write, a carriage
// return over the line, C1 CSI, DEL, a bidirectional override and a byte
// that is not UTF-8.
const hostile = "a\x1b]0;pwned\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07b\rc\u009b31m\x7fd\u202eg\xffe"

func TestLineWritesEveryControlAsAVisibleEscape(t *testing.T) {
	got := Line(hostile + "\n\tf")
	want := `a\x1b]0;pwned\a\x1b[2J\x1b]52;c;ZXZpbA==\ab\rc\u009b31m\x7fd\u202eg` + "\uFFFD" + `e\n\tf`
	if got != want {
		t.Fatalf("Line = %q\nwant   %q", got, want)
	}
	assertInert(t, got, false)
}

func TestBlockKeepsLineBreaksAndTabsOnly(t *testing.T) {
	got := Block("one\r\n\ttwo\n" + hostile)
	want := "one\n\ttwo\n" + `a\x1b]0;pwned\a\x1b[2J\x1b]52;c;ZXZpbA==\ab\rc\u009b31m\x7fd\u202eg` + "\uFFFD" + "e"
	if got != want {
		t.Fatalf("Block = %q\nwant    %q", got, want)
	}
	assertInert(t, got, true)
	if got := Block("a\r"); got != `a\r` {
		t.Fatalf("a \\r at the end is not a line ending: %q", got)
	}
}

func TestPlainTextIsUnchanged(t *testing.T) {
	for _, s := range []string{"", "plain", "日本語 σ — “quoted” 🙂", "U+FFFD written as such: \uFFFD"} {
		if Line(s) != s || Block(s) != s {
			t.Errorf("changed %q: Line %q, Block %q", s, Line(s), Block(s))
		}
	}
}

func TestControlCoversC0DelC1AndBidi(t *testing.T) {
	for _, r := range []rune{0, '\a', '\t', '\n', '\r', 0x1b, 0x7f, 0x80, 0x9b, 0x9f, 0x200e, 0x202a, 0x202e, 0x2066, 0x2069} {
		if !Control(r) {
			t.Errorf("Control(%U) = false", r)
		}
	}
	for _, r := range []rune{' ', 'a', 0xa0, 'é', 0xfffd, 0x1f642} {
		if Control(r) {
			t.Errorf("Control(%U) = true", r)
		}
	}
}

func assertInert(t *testing.T, s string, multiline bool) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("not UTF-8: %q", s)
	}
	for _, r := range s {
		if Control(r) && !(multiline && (r == '\n' || r == '\t')) {
			t.Errorf("raw %U left in %q", r, s)
		}
	}
	if strings.ContainsRune(s, 0x1b) {
		t.Errorf("raw ESC left in %q", s)
	}
}

func TestWriterPassesEachWriteThroughBlock(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b)
	n, err := io.WriteString(w, "solve: [plan] "+hostile+"\n")
	if err != nil || n != len("solve: [plan] "+hostile+"\n") {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if want := "solve: [plan] " + Block(hostile) + "\n"; b.String() != want {
		t.Fatalf("wrote %q, want %q", b.String(), want)
	}
	assertInert(t, b.String(), true)
}
