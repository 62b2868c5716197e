// Package termtext makes text that the user did not write safe to print on
// a terminal: a model's answer, a peer's passport or message, a name or a
// goal read back from a file or a database.
//
// Such text may hold bytes a terminal obeys instead of showing: escape
// sequences (ESC [ … clears the screen, OSC ESC ] 0;… BEL sets the title,
// OSC 52 writes the clipboard), a carriage return that overwrites the line
// before it, C1 controls (U+009B is CSI on some terminals), bidirectional
// overrides that reorder what is shown (U+202E), and invalid UTF-8.
//
// Line and Block write every such character as a visible Go escape (\x1b,
// \r, \u009b, \u202e) rather than dropping it or showing U+FFFD: what the
// text held stays readable (a broken answer can be told from a hostile one)
// and the escape is plain ASCII, which no terminal acts on. Bytes that are
// not UTF-8 become U+FFFD, as encoding/json makes them: they are not
// characters, and a lone byte 0x9B is CSI to a terminal in an 8-bit mode.
//
// --json output needs none of this (encoding/json escapes control
// characters in strings), and files a kernel writes (reports, blocks) are
// not a terminal: they keep the text as it was.
package termtext

import (
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Control reports whether r can drive a terminal or reorder the text
// around it: a control character (C0 with \n and \t, DEL, C1) or a
// bidirectional control (U+200E, U+202A–U+202E, U+2066–U+2069 …).
func Control(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// Line makes s safe to print as part of one line (a listing's field, a
// progress line, an error): every control character, line breaks and tabs
// included, is written as a Go escape, so the text can neither drive the
// terminal nor forge a line of output.
func Line(s string) string { return escape(s, false) }

// Block makes s safe to print as text of several lines (a chat reply, a
// report, a block's body): as Line, but line breaks and tabs are kept,
// and a \r just before a \n is dropped (a line ending some models write).
func Block(s string) string { return escape(s, true) }

func escape(s string, multiline bool) string {
	kept := func(r rune) bool { return multiline && (r == '\n' || r == '\t') }
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return Control(r) && !kept(r) }) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], string(utf8.RuneError)):
			b.WriteRune(utf8.RuneError) // a byte that is not UTF-8
		case kept(r):
			b.WriteRune(r)
		case r == '\r' && multiline && strings.HasPrefix(s[i+1:], "\n"):
		case Control(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// NewWriter returns a writer that passes each Write on to w through Block:
// for a stream of lines such as a live progress view or interactive
// questions, where every writer writes whole text at once (as fmt.Fprintf
// does). A character split across two writes is valid UTF-8 in neither
// and shows as U+FFFD.
func NewWriter(w io.Writer) io.Writer { return writer{w} }

type writer struct{ w io.Writer }

func (t writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, Block(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
