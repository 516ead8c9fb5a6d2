//go:build !race

package core_test

// raceOn: built with the race detector (race_on_test.go).
const raceOn = false
