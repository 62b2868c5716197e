//go:build !solvecrash

package loop

// crashPoint is where the crash tests' build (-tags solvecrash, crash.go)
// may kill the process; in every other build it does nothing.
func (e *engine) crashPoint() {}
