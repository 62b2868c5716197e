//go:build windows

package atomicfile

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockOffsetHigh places the one locked byte sits: far past any real data,
// because a Windows lock is mandatory and would otherwise stop other
// processes from reading the bytes it covers.
const lockOffsetHigh = 0x7fffffff

// LockFile takes an exclusive lock on the open file f, waiting for other
// holders: other processes, and other open files of the same path in this
// process. Closing f releases it.
func LockFile(f *os.File) error {
	ol := &windows.Overlapped{OffsetHigh: lockOffsetHigh}
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, ol)
}

// tryLockFile takes the lock LockFile takes if it is free; false when
// another holder has it.
func tryLockFile(f *os.File) (bool, error) {
	ol := &windows.Overlapped{OffsetHigh: lockOffsetHigh}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return false, nil
	}
	return err == nil, err
}
