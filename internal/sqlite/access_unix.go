//go:build unix

package sqlite

import "syscall"

// dirWritable reports whether this process may create files in dir
// (access(2), which also says no on a read-only mount).
func dirWritable(dir string) bool {
	const wOK = 0x2
	return syscall.Access(dir, wOK) == nil
}
