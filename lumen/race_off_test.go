//go:build !race

package lumen

const raceEnabled = false
