//go:build unix

// Package rodir lets a test run a child process in a directory the child
// cannot write, even when the tests run as root (root ignores chmod: as
// root the child runs as the unprivileged uid/gid 65534). Only tests
// import it.
//
// Lock proves the directory really is read-only for the child before the
// test relies on it: it runs a shell in the child's place that tries to
// create a file there, and fails the test if that succeeds. A test built on
// it therefore cannot pass by accident on a writable directory.
package rodir

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// nobody is the uid and gid a root test runs its child as.
const nobody = 65534

// TempDir is a new directory that another user can traverse (t.TempDir's
// parent is private to the test's user), removed at the end of the test.
func TempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "rodir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Give write permission back everywhere; a directory this misses
		// makes RemoveAll fail, and that is reported.
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("rodir: removing %s: %v", dir, err)
		}
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Executable copies the program at path into a directory the child can
// reach and returns the copy's path (a test binary or a built CLI usually
// sits in a directory private to the test's user).
func Executable(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(TempDir(t), filepath.Base(path))
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// Lock makes dir and every directory under it read-only and every file in
// it readable by the child, checks that the child cannot create a file in
// dir, and gives write permission back at the end of the test.
func Lock(t testing.TB, dir string) {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		return os.Chmod(p, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Errorf("rodir: giving write permission back to %s: %v", d, err)
			}
		}
	})
	for _, d := range dirs {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	probe := Command(t, "sh", "-c", `: > "$1/.rodir-probe"`, "sh", dir)
	if out, err := probe.CombinedOutput(); err == nil {
		_ = os.Remove(filepath.Join(dir, ".rodir-probe")) // the test fails below either way
		t.Fatalf("rodir: the child could create a file in %s after chmod -w (%s): the test would prove nothing", dir, out)
	}
}

// Command is exec.Command for the child: as root it runs as uid/gid
// 65534 with no supplementary groups, otherwise as the test's user.
func Command(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	}
	return cmd
}

// Snapshot is every file under dir (relative path) with the SHA-256 of its
// content; directories map to "dir". Compare two snapshots to show that
// nothing was created, removed or changed.
func Snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			snap[rel] = "dir"
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }() // read only: what was read is the answer
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		snap[rel] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}
