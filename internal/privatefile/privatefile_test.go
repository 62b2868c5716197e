//go:build unix

package privatefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file its owner alone can read is read; one its group or others can
// read (0644, 0640) is refused naming the chmod that fixes it; a missing
// one says so.
func TestReadRefusesAFileOthersCanRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := Read(path); err != nil || string(data) != "s3cret\n" {
		t.Fatalf("a 0600 file: %q %v", data, err)
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		var exposed *ExposedError
		data, err := Read(path)
		if !errors.As(err, &exposed) || data != nil || !strings.Contains(err.Error(), "run chmod 600 "+path) {
			t.Errorf("a %04o file: %q %v", mode, data, err)
		}
	}
	if _, err := Read(filepath.Join(t.TempDir(), "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}
