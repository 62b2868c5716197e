package cli

import (
	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/internal/termtext"
)

// Line is text the user did not write as one inert line of a listing: its
// white space folded and cut to n characters (clip.Line), then made safe
// for a terminal (termtext.Line).
func Line(s string, n int) string { return termtext.Line(clip.Line(s, n)) }
