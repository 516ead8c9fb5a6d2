package kx

import (
	"sync/atomic"
	"unsafe"
)

// Relaxed stores: for a word that one goroutine at a time writes (its writers are ordered by a
// lock, or the value is a timestamp where the last writer may win) and others read with an
// atomic load. sync/atomic's stores and adds are locked instructions on amd64 (XCHG, LOCK XADD):
// about 5 ns each, and each waits for the store buffer to drain; a small call made a dozen of
// them for counters and stamps alone. A relaxed store is a plain move there (relaxed_amd64.s),
// atomic for an aligned word and seen in program order (total store order); elsewhere it is
// sync/atomic's store. It is written in assembly so that the compiler cannot split or drop it
// and the race detector, which does not see it, does not flag the atomic loads that read it.

// StoreRelaxed stores v at p.
func StoreRelaxed(p *int64, v int64) { storeRelaxed(p, v) }

// StoreRelaxedInt64 stores v in c.
func StoreRelaxedInt64(c *atomic.Int64, v int64) { storeRelaxed((*int64)(unsafe.Pointer(c)), v) }

// AddRelaxed adds n to c, a counter whose writers are ordered by a lock.
func AddRelaxed(c *atomic.Uint64, n uint64) {
	storeRelaxed((*int64)(unsafe.Pointer(c)), int64(c.Load()+n))
}
