//go:build !race

package pipeline_test

// raceEnabled reports that the tests were built with -race (race_test.go).
const raceEnabled = false
