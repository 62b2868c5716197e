package solve

import (
	"strings"
	"testing"

	"github.com/llmkernels/kernels/internal/exporttest"
)

// No package beneath the kernel's public API exports a name only tests
// use: such a name goes unexported, or into the package's export_test.go
// (this package's own names are the API offered to users outside the
// module).
func TestNoSubpackageExportsANameOnlyTestsUse(t *testing.T) {
	leaks, err := exporttest.TestOnly("..", "solve")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leaks {
		if !strings.HasPrefix(l, "github.com/llmkernels/kernels/solve: ") {
			t.Errorf("%s is used only by tests: unexport it or move it to export_test.go", l)
		}
	}
}
