package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTextKeepsShortTextAndCutsLongTextOnACharacter(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"σσσσ", 2, "σσ…"},    // two bytes a character: never cut inside one
		{"日本語です", 4, "日本語で…"}, // three bytes a character
		{"abc", 0, "…"},
		{"abc", -1, "…"},
		{"", 0, ""},
	}
	for _, c := range cases {
		got := Text(c.in, c.n)
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("Text(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestTextLeavesInvalidUTF8ItWasGivenWhole(t *testing.T) {
	// A stray byte counts as one character, as range over a string does.
	if got := Text("a\xffb", 2); got != "a\xff…" {
		t.Fatalf("Text = %q", got)
	}
}

func TestLineFoldsWhiteSpaceBeforeClipping(t *testing.T) {
	if got := Line("  one\n\ttwo   three \n", 100); got != "one two three" {
		t.Fatalf("Line = %q", got)
	}
	if got := Line("one\n\ntwo three", 7); got != "one two…" {
		t.Fatalf("Line = %q", got)
	}
	long := strings.Repeat("x ", 1000)
	if got := Line(long, 10); utf8.RuneCountInString(got) != 11 {
		t.Fatalf("Line kept %d characters", utf8.RuneCountInString(got))
	}
}
