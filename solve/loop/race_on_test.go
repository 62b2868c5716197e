//go:build race

package loop_test

// raceDetector is on: the long randomized tests run fewer rounds (the
// detector slows SQLite tenfold); make bench runs them all.
const raceDetector = true
