//go:build !unix

package atomicfile

// syncDir does nothing where a directory cannot be opened for fsync
// (Windows: a completed MoveFileEx is as durable as the file system makes
// it, and os.File.Sync on a directory fails).
func syncDir(string) error { return nil }
