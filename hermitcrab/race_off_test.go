//go:build !race

package hermitcrab

const raceEnabled = false
