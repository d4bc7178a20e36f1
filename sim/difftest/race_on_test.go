//go:build race

package difftest

// raceDetector reports whether the tests run with -race.
const raceDetector = true
