//go:build race

package shm

import (
	"os"
	"sync"
	"sync/atomic"
)

// The race detector does not see the ring's memory (a mapping outside Go's heap), so a frame's
// publication there orders nothing for it: a buffer a rank sent from and then received into
// (its peer's answer landing in the place its message left from) looks like a race between
// the send's copy and the reader's. In race builds each ring also has a counter on Go's heap
// that the writer adds to before it publishes and the reader loads once it sees a frame, so
// the detector sees what the ring orders. Both sides of a ring in one process (tests) find the
// same counter by the segment's key. A peer in another process (the tests' child processes)
// adds to none here: there a reader also loads the counter of this side's own sends, which
// says that what it reads comes after what this side sent before, as the peer's answers do.
// Other builds have none of it (race_sync_off.go).

var raceSyncs sync.Map // [2]uint64{segment key, ring} -> *uint64

func raceSyncOf(key uint64, ring int) *uint64 {
	v, _ := raceSyncs.LoadOrStore([2]uint64{key, uint64(ring)}, new(uint64))
	return v.(*uint64)
}

// raceRelease is the writer's, before it publishes.
func (v *ringView) raceRelease() { atomic.AddUint64(v.raceSync, 1) }

// raceAcquire is the reader's, once it saw what was published.
func (r *Reader) raceAcquire() {
	atomic.LoadUint64(r.raceSync)
	if pid := r.s.sidePid(1 - r.s.side).Load(); pid != 0 && int(pid) != os.Getpid() {
		atomic.LoadUint64(r.s.w.raceSync)
	}
}
