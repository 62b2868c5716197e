//go:build !linux

package cli

import "io"

// Terminal reports whether w is a terminal. It is only built for Linux:
// elsewhere output is always plain text.
func Terminal(io.Writer) bool { return false }

// Width is the number of columns of the terminal w is: 0 (unknown) where
// Terminal is always false.
func Width(io.Writer) int { return 0 }
