//go:build race

package pipeline_test

// raceEnabled reports that the tests were built with -race: the race
// runtime allocates more for the same work (sync.Pool drops a random
// quarter of what is put back, the tiny allocator is off) and runs
// several times slower.
const raceEnabled = true
