//go:build unix

package atomicfile

import (
	"errors"
	"os"
)

// syncDir makes a rename in dir durable: fsync of the directory writes its
// entries.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
