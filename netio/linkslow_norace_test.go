//go:build !race

package netio_test

// slow scales the death tests' liveness and timeouts (4 under the race detector).
const slow = 1
