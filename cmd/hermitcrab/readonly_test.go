//go:build unix

package main

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/internal/rodir"
)

// readOnlyDataDirs makes, under base, an instance (data) and a directory
// with no store yet (empty), both read-only for bin, the binary a child
// runs (rodir).
func readOnlyDataDirs(t *testing.T) (bin, base, data, empty string) {
	bin = rodir.Executable(t, binary)
	base = rodir.TempDir(t)
	data = filepath.Join(base, "data")
	mustHC(t, data, "", "blocks", "import", "testdata/localstorage.json")
	empty = filepath.Join(base, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	rodir.Lock(t, base)
	return bin, base, data, empty
}

// TestReadCommandsOnAReadOnlyDataDir pins that the commands that only read
// (blocks list, show and export, bsp, prompt, tools list, wake status) work in a data directory the process cannot write (as root, the
// binary runs as an unprivileged user) and change nothing there, for an
// instance and for a directory with no store yet.
func TestReadCommandsOnAReadOnlyDataDir(t *testing.T) {
	bin, base, data, empty := readOnlyDataDirs(t)
	before := rodir.Snapshot(t, base)
	for _, c := range []struct {
		dir  string
		args []string
		want string
	}{
		{data, []string{"blocks", "list"}, "purpose"},
		{data, []string{"blocks", "show", "purpose"}, "Help the person build kernels."},
		{data, []string{"bsp", "purpose"}, "Help the person build kernels."},
		{data, []string{"blocks", "export"}, "Help the person build kernels."},
		{data, []string{"prompt"}, "characters"},
		{data, []string{"tools", "list"}, "tools; definitions"},
		{data, []string{"wake", "status"}, "caps: 48 wakes"},
		{empty, []string{"wake", "status"}, "no triggers"},
		{empty, []string{"blocks", "list"}, "touchstone"},
		{empty, []string{"blocks", "show", "wake", "0.9"}, "tier"},
	} {
		cmd := rodir.Command(t, bin, append([]string{"--data", c.dir}, c.args...)...)
		cmd.Env = append(os.Environ(), "HERMITCRAB_DATA=")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("hermitcrab %v in a read-only %s: %v\n%s", c.args, filepath.Base(c.dir), err, out)
		}
	}
	if after := rodir.Snapshot(t, base); !maps.Equal(before, after) {
		t.Fatalf("the read-only directory changed:\nbefore %v\nafter  %v", before, after)
	}
}

// TestWakeHooksOnAReadOnlyDataDir pins that wake hooks prints the paths
// and the secret made before, in a data directory the process cannot
// write, changing nothing there. The child runs as another user (rodir),
// so the secret is given to that user, 0600 as the kernel requires: this
// needs root.
func TestWakeHooksOnAReadOnlyDataDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the secret must belong to the child's user: run as root")
	}
	bin := rodir.Executable(t, binary)
	base := rodir.TempDir(t)
	data := filepath.Join(base, "data")
	mustHC(t, data, "", "wake", "hooks") // makes the secret (and the directory) on first use
	secret := filepath.Join(data, "webhook_secret")
	rodir.Lock(t, base)
	if err := os.Chown(secret, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(secret, 0o600); err != nil {
		t.Fatal(err)
	}
	before := rodir.Snapshot(t, base)
	cmd := rodir.Command(t, bin, "--data", data, "wake", "hooks")
	cmd.Env = append(os.Environ(), "HERMITCRAB_DATA=")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "secret: ") {
		t.Fatalf("wake hooks in a read-only data directory: %v\n%s", err, out)
	}
	if after := rodir.Snapshot(t, base); !maps.Equal(before, after) {
		t.Fatalf("the read-only directory changed:\nbefore %v\nafter  %v", before, after)
	}
}

// TestWritingCommandsOnAReadOnlyDataDirSaySo pins that serve and the other
// commands that write, given a data directory the process cannot write,
// fail saying so plainly and naming the commands that work there (it was
// SQLite's "attempt to write a readonly database (1544)"), and change
// nothing.
func TestWritingCommandsOnAReadOnlyDataDirSaySo(t *testing.T) {
	bin, base, data, empty := readOnlyDataDirs(t)
	before := rodir.Snapshot(t, base)
	for _, dir := range []string{data, empty} {
		for _, args := range [][]string{{"serve", "--addr", "127.0.0.1:0"}, {"tools", "reset"}, {"blocks", "import", "testdata/localstorage.json"},
			{"boot", "--provider", "script", "--script", "testdata/boot.json"}} {
			cmd := rodir.Command(t, bin, append([]string{"--data", dir}, args...)...)
			cmd.Env = append(os.Environ(), "HERMITCRAB_DATA=", "ANTHROPIC_API_KEY=")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// serve would run until stopped: a minute is a failure.
			timer := time.AfterFunc(time.Minute, func() { _ = cmd.Process.Kill() })
			err := cmd.Wait()
			timer.Stop()
			msg := out.String()
			if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(msg, dir+" is read-only") || !strings.Contains(msg, "blocks list") ||
				strings.Contains(msg, "readonly database") {
				t.Errorf("hermitcrab %v in a read-only %s: %v\n%s", args, filepath.Base(dir), err, msg)
			}
		}
	}
	if after := rodir.Snapshot(t, base); !maps.Equal(before, after) {
		t.Fatalf("the read-only directory changed:\nbefore %v\nafter  %v", before, after)
	}
}
