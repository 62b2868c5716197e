// Package privatefile reads the files a kernel keeps secrets in (an API
// key, a token, a private key, the MCP servers' headers): each must be
// readable by its owner only, and one that others can read is refused, with
// the chmod that fixes it, rather than used as if nothing were wrong.
package privatefile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
)

// ExposedError is a private file that its group or others can read.
type ExposedError struct {
	Path string
	Mode fs.FileMode
}

func (e *ExposedError) Error() string {
	return fmt.Sprintf("%s can be read by others (mode %v): run chmod 600 %s", e.Path, e.Mode.Perm(), e.Path)
}

// Read returns the file's contents, or an *ExposedError when its group or
// others may read or write it. A missing file is an error that wraps
// fs.ErrNotExist. Windows has no such mode bits: there the mode is not
// checked.
func Read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // opened for reading: nothing to report
	if runtime.GOOS != "windows" {
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		if st.Mode().Perm()&0o077 != 0 {
			return nil, &ExposedError{Path: path, Mode: st.Mode()}
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}
