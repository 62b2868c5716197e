//go:build !linux

package pgtest

import (
	"errors"
	"os"
	"testing"
)

// ErrNoPostgres is wrapped when the server binaries are not installed.
var ErrNoPostgres = errors.New("PostgreSQL tests run on Linux only here: they start Debian's server binaries with a parent-death signal")

// Main runs the tests and exits.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run runs the tests and returns the exit code.
func Run(m *testing.M) int { return m.Run() }

// New skips the test: there is no throwaway PostgreSQL on this system.
func New(t testing.TB) string {
	t.Helper()
	t.Skipf("pgtest: %v", ErrNoPostgres)
	return ""
}
