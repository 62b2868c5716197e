package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/lumen"
)

// live shows lumen's steps while their answers arrive. A step's answer is
// JSON for the kernel, not words for the person (the reply comes from the
// chat skill once DECIDE chose it), so what streams is shown as progress:
// on a terminal that takes escapes, one dim line that updates in place
// with the step and the newest words of its thinking or of what it
// writes; on a pipe or with NO_COLOR, one plain "STEP: thinking…" line
// when a step thinks. A tool call is one line, and so is each call once
// answered (model, tokens, cost with its cache share, seconds). Every piece
// is made inert (termtext). Nothing is shown at --quiet.
type live struct {
	mu    sync.Mutex
	w     io.Writer
	level cli.Output
	dim   bool       // w is a terminal that takes escapes
	step  string     // the step whose line is shown
	tail  string     // the newest words shown on it
	on    bool       // the dim line is on screen, or the plain line was said
	cols  func() int // w's width in columns (0: unknown), read at each redraw
}

// tailWidth is how much of a step's newest words the dim line shows.
const tailWidth = 70

func newLive(w io.Writer, level cli.Output) *live {
	return &live{w: w, level: level, dim: isTerminal(w) && os.Getenv("NO_COLOR") == "", cols: func() int { return cli.Width(w) }}
}

// progress shows a piece of a step's answer (lumen.Options.OnProgress).
func (l *live) progress(p lumen.Progress) {
	if l.level < cli.Normal {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	d := p.Delta
	switch d.Kind {
	case llm.DeltaThinking:
		l.show(p.Step, "thinking", d.Text)
	case llm.DeltaText, llm.DeltaToolInput:
		if l.dim {
			l.show(p.Step, "writing", d.Text)
		}
	case llm.DeltaBlockStart:
		if d.Block == llm.BlockToolUse || d.Block == "server_tool_use" {
			l.line(fmt.Sprintf("%s: → %s", p.Step, termtext.Line(d.Name)))
		}
	case llm.DeltaRestart:
		l.line(p.Step + ": the answer broke off and is asked for again; what was shown of it is void")
	}
}

// call shows a call once answered (lumen.Options.OnCall).
func (l *live) call(c lumen.CallReport) {
	if l.level < cli.Normal {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.line(c.Text())
}

// clear takes the dim line off the screen before other output.
func (l *live) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clearLine()
}

// show puts what a step is doing on its line; l.mu is held.
func (l *live) show(step, doing, piece string) {
	if step != l.step {
		l.clearLine()
		l.step = step
	}
	if !l.dim {
		if !l.on {
			fmt.Fprintf(l.w, "%s: %s…\n", termtext.Line(step), doing)
			l.on = true
		}
		return
	}
	l.tail = cli.Tail(strings.Join(strings.Fields(l.tail+" "+piece), " "), tailWidth)
	width := 0
	if l.cols != nil {
		width = l.cols()
	}
	// Carriage return, erase the line, dim, the text, normal: the line is
	// rewritten in place as the answer grows, within the terminal's width
	// (a wrapped line would leave its first rows behind).
	fmt.Fprintf(l.w, "\r\x1b[2K\x1b[2m%s\x1b[0m", cli.FitLine(termtext.Line(step)+": ", termtext.Line(l.tail), width))
	l.on = true
}

// line writes a line of its own; l.mu is held.
func (l *live) line(s string) {
	l.clearLine()
	fmt.Fprintln(l.w, termtext.Line(s))
}

// clearLine ends the step's line; l.mu is held.
func (l *live) clearLine() {
	if l.on && l.dim {
		fmt.Fprint(l.w, "\r\x1b[2K")
	}
	l.on, l.tail, l.step = false, "", ""
}
