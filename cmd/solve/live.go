package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/solve"
)

// liveView is the live view of solve run, resume and worker on stderr:
// the loop's lines (and its questions) as they come, and on a terminal
// one more line, redrawn in place, showing the answer of the call in
// progress as it streams in. On a pipe, or with NO_COLOR, the lines are
// plain and the streaming line is left out (a pipe would keep every
// redraw); --quiet drops the loop's lines but keeps its questions.
// Everything shown passes through termtext: model text stays inert.
type liveView struct {
	mu     sync.Mutex
	w      io.Writer
	quiet  bool
	redraw bool // a terminal without NO_COLOR: the streaming line is drawn
	shown  bool // the streaming line is on screen
	drawn  time.Time
	chars  map[string]int // characters received per node and operation
	cols   func() int     // w's width in columns (0: unknown), read at each redraw
}

// newLiveView is the live view on w at the given output level.
func newLiveView(w io.Writer, level cli.Output) *liveView {
	return &liveView{w: w, quiet: level < cli.Normal, redraw: level >= cli.Normal && terminal(w) && os.Getenv("NO_COLOR") == "", chars: map[string]int{},
		cols: func() int { return cli.Width(w) }}
}

// terminal reports whether w is a character device (a terminal).
func terminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Write writes the loop's lines, inert, over the streaming line if shown.
// At --quiet the progress lines ("solve: …") are dropped.
func (v *liveView) Write(p []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.quiet && strings.HasPrefix(string(p), "solve: ") {
		return len(p), nil
	}
	v.clearLocked()
	if _, err := io.WriteString(v.w, termtext.Block(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// streamLine is how often the streaming line is redrawn at most.
const streamLine = 100 * time.Millisecond

// delta takes a piece of a call's streamed answer (claude-code-0's
// OnDelta).
func (v *liveView) delta(node, op string, d llm.Delta) {
	if !v.redraw {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	key := node + " " + op
	switch d.Kind {
	case llm.DeltaRestart:
		delete(v.chars, key) // the broken answer is void; it starts again
	case llm.DeltaText, llm.DeltaThinking, llm.DeltaToolInput:
		v.chars[key] += utf8.RuneCountInString(d.Text)
		if time.Since(v.drawn) < streamLine {
			return
		}
		what := "answer"
		if d.Kind == llm.DeltaThinking {
			what = "thinking"
		}
		tail := strings.Join(strings.Fields(d.Text), " ")
		if n := utf8.RuneCountInString(tail); n > 30 {
			tail = "…" + string([]rune(tail)[n-30:])
		}
		width := 0
		if v.cols != nil {
			width = v.cols()
		}
		// Dim, one line that is cleared before anything else is written,
		// and fits the terminal's width: a wrapped line would leave its
		// first rows behind at each redraw.
		prefix := fmt.Sprintf("solve: node %s %s: %s arriving, %d characters · ", solve.ShortID(node), op, what, v.chars[key])
		fmt.Fprintf(v.w, "\r\x1b[K\x1b[2m%s\x1b[0m", cli.FitLine(prefix, termtext.Line(tail), width))
		v.shown, v.drawn = true, time.Now()
	}
}

// clear takes the streaming line off the screen (before the run's result).
func (v *liveView) clear() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clearLocked()
}

func (v *liveView) clearLocked() {
	if v.shown {
		_, _ = io.WriteString(v.w, "\r\x1b[K") // best effort: the next line overwrites it anyway
		v.shown = false
	}
}
