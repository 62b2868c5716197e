//go:build !unix

package sqlite

import "os"

// dirWritable cannot ask the system without writing where access(2) does
// not exist (Windows): it says yes, so a read-only open uses mode=ro, which
// fails with SQLite's own error in a directory it cannot write.
func dirWritable(dir string) bool { return true }

// fileWritable says yes where access(2) does not exist, unless the file is
// missing or marked read-only; SQLite's own error says the rest.
func fileWritable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().Perm()&0o200 != 0
}
