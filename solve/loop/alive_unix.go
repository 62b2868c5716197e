//go:build unix

package loop

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process of this host runs: signal 0
// checks it exists (EPERM: it exists, owned by another user).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
