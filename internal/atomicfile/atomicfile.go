// Package atomicfile replaces files atomically and takes exclusive file
// locks, so that two processes sharing files lose nothing (Lumen instances,
// Hermitcrab exports and key files).
//
// Locks are advisory on Unix (flock) and taken with LockFileEx on Windows,
// where they cover one byte far past any real data so that readers of the
// file are never blocked (Windows locks are mandatory). On other systems
// LockFile returns an error saying so.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces path with data: it writes a temporary file in the same
// directory, syncs it, renames it over path and syncs the directory, so a
// reader sees the old content or the new, never a mix, a crash leaves the
// old file whole, and once Write returns the new file survives a power loss
// (the rename itself is only durable after the directory is synced).
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := fill(tmp, data, perm); err != nil {
		// The temporary file is ours and half written: removing it is all
		// that is left to do, and the write error is the one to report.
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name()) // as above: the rename error is the news
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("write %s: sync directory: %w", path, err)
	}
	return nil
}

// fill writes, chmods, syncs and closes tmp.
func fill(tmp *os.File, data []byte, perm os.FileMode) error {
	_, err := tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	return errors.Join(err, tmp.Close())
}

// TryLock takes the lock Lock takes if no one holds it, without waiting:
// ok is false (and unlock nil) when another holder has it.
func TryLock(path string) (unlock func(), ok bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	ok, err = tryLockFile(f)
	if err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("lock %s: %w", path, err)
		}
		return nil, false, errors.Join(err, f.Close())
	}
	return func() { _ = f.Close() }, true, nil
}

// Lock takes an exclusive flock on path (created if missing), waiting for
// other holders, processes or goroutines alike. The returned function
// releases it.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := LockFile(f); err != nil {
		return nil, errors.Join(fmt.Errorf("lock %s: %w", path, err), f.Close())
	}
	// Closing the file releases the lock; a close error on a lock file we
	// never wrote to has nothing to report.
	return func() { _ = f.Close() }, nil
}
