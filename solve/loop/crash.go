//go:build solvecrash

package loop

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
)

// The crash tests' fault injection, built only with -tags solvecrash (the
// tests of cmd/solve build their binary so; a release binary has none):
// SOLVE_CRASH_AFTER=N makes the process SIGKILL itself at its N-th crash
// point (after a resolver call's settlement and after each commit).

var (
	crashAfter = crashAfterEnv()
	crashes    atomic.Int64
)

func crashAfterEnv() int64 {
	v := os.Getenv("SOLVE_CRASH_AFTER")
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		fmt.Fprintf(os.Stderr, "SOLVE_CRASH_AFTER=%q: give a whole number\n", v)
		os.Exit(2)
	}
	return n
}

// crashPoint kills the process at the crashAfter-th call.
func (e *engine) crashPoint() {
	if crashAfter > 0 && crashes.Add(1) == crashAfter {
		// os.Process.Kill is SIGKILL on Unix and TerminateProcess on
		// Windows: the process dies as abruptly as a kill -9.
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Kill() // should it fail, select{} below hangs and the crash test times out
		}
		select {}
	}
}
