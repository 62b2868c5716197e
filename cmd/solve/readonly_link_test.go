//go:build unix

package main_test

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/internal/rodir"
)

// TestADatabaseLinkedFromAReadOnlyDirectoryIsWritable pins that a
// kernel.db reached through a symbolic link in a directory this user
// cannot write, naming a file in one it can, is opened for writing:
// SQLite follows the link and keeps the -wal and -shm files beside the
// target, so the read-only check must look there too.
func TestADatabaseLinkedFromAReadOnlyDirectoryIsWritable(t *testing.T) {
	t.Parallel()
	bin := rodir.Executable(t, solveBin)
	base := rodir.TempDir(t)
	data, link := filepath.Join(base, "data"), filepath.Join(base, "link")
	for _, d := range []string{data, link} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	sc := writeScript(t, data, gatingSteps()...)
	// A command that writes creates kernel.db (then finds no such request).
	if r := runSolve(t, data, "hire", "x", "--decline"); r.code != 1 || !strings.Contains(r.stderr, `no capability request "x"`) {
		t.Fatalf("solve hire x --decline: exit %d\n%s", r.code, r.stderr)
	}
	db := filepath.Join(data, "kernel.db")
	if os.Geteuid() == 0 {
		for _, p := range []string{data, db, sc} {
			os.Chown(p, 65534, 65534)
		}
	}
	if err := os.Symlink(db, filepath.Join(link, "kernel.db")); err != nil {
		t.Fatal(err)
	}
	rodir.Lock(t, link)
	before := rodir.Snapshot(t, data)
	cmd := rodir.Command(t, bin, "run", runbookGoal, "--provider", "script", "--script", sc, "--db", "kernel.db")
	cmd.Dir = link
	// The run writes the database, then stops making its artifact store
	// beside the link (in the read-only directory): that is not the
	// database's check.
	out, _ := cmd.CombinedOutput()
	if strings.Contains(string(out), "read-only") || maps.Equal(before, rodir.Snapshot(t, data)) {
		t.Fatalf("solve run through a link to a writable database wrote nothing to it:\n%s", out)
	}
}
