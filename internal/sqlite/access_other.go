//go:build !unix

package sqlite

// dirWritable cannot ask the system without writing where access(2) does
// not exist (Windows): it says yes, so a read-only open uses mode=ro, which
// fails with SQLite's own error in a directory it cannot write.
func dirWritable(dir string) bool { return true }
