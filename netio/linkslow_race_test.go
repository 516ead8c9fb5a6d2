//go:build race

package netio_test

// slow scales the death tests' liveness and timeouts: the race detector makes every goroutine
// several times slower, and a live peer's heartbeats must still come within liveness_ms.
const slow = 4
