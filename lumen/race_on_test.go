//go:build race

package lumen

// raceEnabled: the race detector slows every step ten times or more.
const raceEnabled = true
