//go:build race

package core_test

// raceOn: built with the race detector, whose sync.Pool drops a quarter of what is put back
// (to shake out reuse bugs), so pooled buffers are allocated again now and then.
const raceOn = true
