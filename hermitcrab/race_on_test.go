//go:build race

package hermitcrab

// raceEnabled: the race detector slows every exchange ten times or more.
const raceEnabled = true
