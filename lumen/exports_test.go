package lumen

import (
	"strings"
	"testing"

	"github.com/llmkernels/kernels/internal/exporttest"
)

// offered are names of lumen's subpackages that only tests use here but
// that the package documents for its users.
var offered = map[string]bool{
	// The index is a cache of the day files: memory's package doc offers
	// Rebuild to recreate it from the files alone.
	"github.com/llmkernels/kernels/lumen/memory: Store.Rebuild": true,
}

// No package beneath the kernel's public API exports a name only tests
// use: such a name goes unexported, or into the package's export_test.go
// (this package's own names are the API offered to users outside the
// module).
func TestNoSubpackageExportsANameOnlyTestsUse(t *testing.T) {
	leaks, err := exporttest.TestOnly("..", "lumen")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leaks {
		if !strings.HasPrefix(l, "github.com/llmkernels/kernels/lumen: ") && !offered[l] {
			t.Errorf("%s is used only by tests: unexport it or move it to export_test.go", l)
		}
	}
}
