package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Terminal reports whether w is a terminal (a file whose terminal
// settings can be read), which escapes for color and redrawing reach.
func Terminal(w io.Writer) bool {
	if c, ok := w.(*checkedWriter); ok {
		w = c.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Width is the number of columns of the terminal w is, or 0 when w is no
// terminal or does not say: a line redrawn in place must fit it, since a
// carriage return and an erase reach back to the start of the last row
// only.
func Width(w io.Writer) int {
	if c, ok := w.(*checkedWriter); ok {
		w = c.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
