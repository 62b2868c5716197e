package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/llm"
)

// Live shows an answer as it streams (llm.Request.OnDelta): its text on
// out as it arrives, its thinking on errOut as one dim line that updates in
// place (one plain "thinking…" line when errOut is not a terminal or
// NO_COLOR is set; nothing at Quiet), and progress lines between. Every
// piece is made inert first (termtext): a delta is foreign text. It is
// safe for concurrent use.
type Live struct {
	mu      sync.Mutex
	out     io.Writer
	errOut  io.Writer
	level   Output
	dim     bool       // errOut is a terminal that takes escapes: the thinking line updates in place
	outTerm bool       // out is a terminal: a progress line first ends the text line on it
	midLine bool       // out holds text not ended by a newline
	cr      bool       // a text piece ended with \r, held until the next says whether \n follows
	think   string     // the tail of the thinking shown
	thinkOn bool       // the thinking line is on screen (dim), or was said (plain)
	text    bool       // text was written since the last End
	tried   bool       // text of the call under way was written: a restart cuts it off
	cols    func() int // errOut's width in columns (0: unknown), read at each redraw: a terminal may be resized
}

// CutOff is the line that ends the text of an answer that broke off and is
// asked for again, so that the partial text and the answer that follows
// are never run together, on a terminal or in a file.
const CutOff = "[the answer was cut off; asking again]"

// thinkWidth is how much of the thinking the dim line shows: its newest
// characters, so that it fits a narrow terminal's line.
const thinkWidth = 70

// NewLive returns a Live writing text to out and thinking and progress to
// errOut, as level says.
func NewLive(out, errOut io.Writer, level Output) *Live {
	return &Live{out: out, errOut: errOut, level: level,
		dim: Terminal(errOut) && os.Getenv("NO_COLOR") == "", outTerm: Terminal(out),
		cols: func() int { return Width(errOut) }}
}

// width is errOut's width in columns, 0 when unknown.
func (l *Live) width() int {
	if l.cols == nil {
		return 0
	}
	return l.cols()
}

// Delta shows one piece of an answer; give it as the request's OnDelta.
func (l *Live) Delta(d llm.Delta) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch d.Kind {
	case llm.DeltaText:
		l.clearThinking()
		s := d.Text
		if l.cr {
			s, l.cr = "\r"+s, false
		}
		if strings.HasSuffix(s, "\r") {
			s, l.cr = s[:len(s)-1], true
		}
		if s == "" {
			return
		}
		fmt.Fprint(l.out, termtext.Block(s))
		l.midLine, l.text, l.tried = !strings.HasSuffix(s, "\n"), true, true
	case llm.DeltaThinking:
		l.thinking(d.Text)
	case llm.DeltaBlockStop:
		l.clearThinking()
	case llm.DeltaBlockStart:
		if d.Block == "server_tool_use" && l.level >= Normal {
			l.line("→ " + termtext.Line(d.Name) + " (run by the provider)")
		}
	case llm.DeltaRestart:
		// Said on out at every level: out holds the partial text, and a
		// file of it must show where the answer starts again.
		l.clearThinking()
		l.endText()
		if l.tried {
			fmt.Fprintln(l.out, CutOff)
			l.tried = false
		}
	}
}

// Line prints a progress line on errOut (nothing at Quiet), after ending a
// line of text left open on the terminal.
func (l *Live) Line(s string) {
	if l.level < Normal {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clearThinking()
	l.line(termtext.Line(s))
}

// Answered says a call's answer is complete (llm.EventResponse): a later
// restart belongs to the next call and cuts off none of the text shown.
func (l *Live) Answered() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tried = false
}

// End ends an answer: it closes the line its text left open and reports
// whether any text was shown since the last End.
func (l *Live) End() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clearThinking()
	l.endText()
	shown := l.text
	l.text, l.tried = false, false
	return shown
}

// endText ends the line the text left open on out; l.mu is held.
func (l *Live) endText() {
	if l.cr {
		fmt.Fprint(l.out, termtext.Block("\r"))
		l.cr, l.midLine = false, true
	}
	if l.midLine {
		fmt.Fprintln(l.out)
		l.midLine = false
	}
}

// line writes an inert line on errOut; l.mu is held. It ends the text
// line first, on a pipe too: the text after it (the next turn of a tool
// loop) must not run on from the text before it.
func (l *Live) line(s string) {
	l.endText()
	fmt.Fprintln(l.errOut, s)
}

// thinking shows a piece of thinking; l.mu is held.
func (l *Live) thinking(piece string) {
	if l.level < Normal {
		return
	}
	if !l.dim {
		if !l.thinkOn {
			l.thinkOn = true
			l.line("thinking…")
		}
		return
	}
	if l.midLine && l.outTerm {
		fmt.Fprintln(l.out)
		l.midLine = false
	}
	l.think = Tail(strings.Join(strings.Fields(l.think+" "+piece), " "), thinkWidth)
	// Carriage return, erase the line, dim, the tail, normal: the line is
	// rewritten in place as the thinking grows.
	fmt.Fprintf(l.errOut, "\r\x1b[2K\x1b[2m%s\x1b[0m", FitLine("thinking: ", termtext.Line(l.think), l.width()))
	l.thinkOn = true
}

// clearThinking takes the dim thinking line off the screen; l.mu is held.
func (l *Live) clearThinking() {
	if l.thinkOn && l.dim {
		fmt.Fprint(l.errOut, "\r\x1b[2K")
	}
	l.thinkOn, l.think = false, ""
}

// Tail is the last n characters of s, "…" first when it was cut.
func Tail(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return "…" + string(r[len(r)-n+1:])
}

// FitLine is prefix then the end of text (both inert already), cut to fit
// a terminal of width columns (0: unknown, nothing cut) with a column to
// spare, so a line redrawn in place never wraps: a wrapped line's first
// rows would stay on the screen at each redraw. text loses its start
// first, then prefix its end.
func FitLine(prefix, text string, width int) string {
	if width <= 0 {
		return prefix + text
	}
	room := width - 1
	p := utf8.RuneCountInString(prefix)
	if p >= room {
		return string([]rune(prefix)[:max(room-1, 0)]) + "…"
	}
	return prefix + Tail(text, room-p)
}
