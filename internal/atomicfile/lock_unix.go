//go:build unix

package atomicfile

import (
	"os"
	"syscall"
)

// LockFile takes an exclusive lock on the open file f, waiting for other
// holders: other processes, and other open files of the same path in this
// process. Closing f releases it.
func LockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR { // a signal arrived while waiting: wait again
			return err
		}
	}
}

// tryLockFile takes the lock LockFile takes if it is free; false when
// another holder has it.
func tryLockFile(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch err {
		case nil:
			return true, nil
		case syscall.EWOULDBLOCK:
			return false, nil
		case syscall.EINTR:
			continue
		}
		return false, err
	}
}
