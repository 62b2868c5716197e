//go:build !race

package loop_test

const raceDetector = false
