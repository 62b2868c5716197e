package lumen

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Helper modes: the test binary runs again as a helper process when one
// of these is set (TestMain).
const (
	readOnlyHelperEnv = "LUMEN_TEST_READ_ONLY" // the instance root to read as another user
	killHelperEnv     = "LUMEN_TEST_KILL"      // the instance root to run until killed
)

func TestMain(m *testing.M) {
	if root := os.Getenv(readOnlyHelperEnv); root != "" {
		if err := readEverything(root); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if root := os.Getenv(killHelperEnv); root != "" {
		os.Exit(runUntilKilled(root))
	}
	os.Exit(m.Run())
}

// asAnotherUser makes the instance at root read-only for the check: as an
// ordinary user, by taking write permission away; as root (which ignores
// permissions), by running the check as nobody, to whom root's files are
// read-only, as they are to another user of a shared machine.
func asAnotherUser(t *testing.T, root string) {
	t.Helper()
	if os.Geteuid() != 0 {
		lockDown(t, root)
		if err := readEverything(root); err != nil {
			t.Fatal(err)
		}
		return
	}
	// nobody must be able to reach and read the instance and the binary.
	for dir := root; dir != "/" && dir != os.TempDir(); dir = filepath.Dir(dir) {
		os.Chmod(dir, 0o755)
	}
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil {
			if info.IsDir() {
				os.Chmod(p, 0o755)
			} else {
				os.Chmod(p, 0o644)
			}
		}
		return nil
	})
	bin := filepath.Join(t.TempDir(), "lumen.test")
	for dir := filepath.Dir(bin); dir != "/" && dir != os.TempDir(); dir = filepath.Dir(dir) {
		os.Chmod(dir, 0o755)
	}
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(dst, src)
	src.Close()
	dst.Close()
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), readOnlyHelperEnv+"="+root, "HOME=/tmp")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("reading the instance as nobody: %v: %s", err, out.String())
	}
}
