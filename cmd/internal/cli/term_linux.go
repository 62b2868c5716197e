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
