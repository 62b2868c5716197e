//go:build !unix && !windows

package atomicfile

import (
	"fmt"
	"os"
	"runtime"
)

// LockFile reports that this system has no file locks the package knows how
// to take: two processes could not safely share these files here.
func LockFile(f *os.File) error {
	return fmt.Errorf("lock %s: file locking is not supported on %s", f.Name(), runtime.GOOS)
}

// tryLockFile reports, like LockFile, that there are no file locks here.
func tryLockFile(f *os.File) (bool, error) { return false, LockFile(f) }
