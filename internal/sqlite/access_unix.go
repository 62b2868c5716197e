//go:build unix

package sqlite

import "syscall"

// dirWritable reports whether this process may create files in dir
// (access(2), which also says no on a read-only mount).
func dirWritable(dir string) bool {
	const wOK = 0x2
	return syscall.Access(dir, wOK) == nil
}

// fileWritable reports whether this process may write the file at path
// (no when it does not exist).
func fileWritable(path string) bool {
	const wOK = 0x2
	return syscall.Access(path, wOK) == nil
}
