package solve_test

import (
	"os"
	"testing"

	"github.com/llmkernels/kernels/internal/pgtest"
)

// The library's tests and benchmarks run on a throwaway PostgreSQL too
// (internal/pgtest), stopped after them.
func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }
