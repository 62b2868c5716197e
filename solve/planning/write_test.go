package planning

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The plan file is written last, with an earlier one set aside first: a
// write that fails half way leaves no earlier plan.json beside this run's
// report and pictures, says where the earlier plan is, and a write that
// succeeds leaves nothing else behind.
func TestWriteFilesNeverLeavesAnEarlierPlanBesideNewPictures(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "plan.json")
	p := completed(t)
	if _, err := WriteFiles(p, out); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteFiles(p, out); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 4 {
		t.Fatalf("%d files after two writes, want 4", len(entries))
	}
	// The Gantt chart cannot be written: the earlier plan.json must not
	// stay beside the new report.
	if err := os.Remove(filepath.Join(dir, "plan.svg")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "plan.svg"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := WriteFiles(p, out)
	if err == nil || !strings.Contains(err.Error(), "the earlier plan is at") {
		t.Fatalf("error %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("the earlier plan.json is still at --out beside this run's report")
	}
}
