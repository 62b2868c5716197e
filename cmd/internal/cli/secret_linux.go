package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// noEcho turns a terminal's echo off and returns what turns it back on; on
// a file that is not a terminal it fails and changes nothing.
func noEcho(f *os.File) (restore func(), err error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ECHONL // the newline still shows, so the next line starts clean
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil // nothing left to do if the terminal has gone
}
