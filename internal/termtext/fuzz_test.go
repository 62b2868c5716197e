package termtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzEscapeIsTotal: whatever the text, Line and Block give valid UTF-8
// in which no control, C1 or bidirectional control survives (Block keeps
// \n and \t, and no \r), NewWriter writes what Block gives, and text with
// nothing to escape is left as it was.
func FuzzEscapeIsTotal(f *testing.F) {
	for _, s := range []string{"", "plain", hostile, "one\r\n\ttwo\r", "\xff\xfe", "\xed\xa0\x80", "\u2028\u2029\u061c\u200f",
		"\ufeff\u00ad", "\\x1b", "\x1b", "\u009b", "日本語 🙂", "\xc2", "a\r\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line, block := Line(s), Block(s)
		for _, c := range []struct {
			out       string
			multiline bool
		}{{line, false}, {block, true}} {
			if !utf8.ValidString(c.out) {
				t.Fatalf("%q gave invalid UTF-8 %q", s, c.out)
			}
			for _, r := range c.out {
				if Control(r) && !(c.multiline && (r == '\n' || r == '\t')) {
					t.Fatalf("%q gave %q, where %U survives", s, c.out, r)
				}
			}
		}
		if strings.ContainsRune(block, '\r') {
			t.Fatalf("Block(%q) = %q keeps a \\r", s, block)
		}
		if utf8.ValidString(s) && !strings.ContainsFunc(s, Control) && (line != s || block != s) {
			t.Fatalf("%q needs no escape, but Line gave %q and Block %q", s, line, block)
		}
		var b strings.Builder
		if _, err := NewWriter(&b).Write([]byte(s)); err != nil || b.String() != block {
			t.Fatalf("NewWriter wrote %q (%v), want %q", b.String(), err, block)
		}
	})
}
