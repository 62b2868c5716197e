//go:build race

package kerneltest

// Race is whether the race detector runs: it slows every exchange ten
// times or more.
const Race = true
