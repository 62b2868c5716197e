//go:build race

package memory

// raceEnabled: the race detector slows every step ten times or more.
const raceEnabled = true
