// Package clip shortens text for logs, error messages, progress lines and
// summaries, always on a character (rune) boundary, so a clipped string is
// still valid UTF-8 however the original was written.
package clip

import "strings"

// Ellipsis ends every clipped string.
const Ellipsis = "…"

// Text returns s when it has at most n characters (runes); otherwise its
// first n characters followed by Ellipsis. n below 0 counts as 0.
func Text(s string, n int) string {
	n = max(n, 0)
	count := 0
	for i := range s {
		if count == n {
			return s[:i] + Ellipsis
		}
		count++
	}
	return s
}

// Line folds every run of white space in s (newlines included) into one
// space, trims both ends, and clips the result as Text does: one line for a
// log or a progress display.
func Line(s string, n int) string {
	return Text(strings.Join(strings.Fields(s), " "), n)
}
