package shm

import (
	"sync/atomic"
	"unsafe"
)

// storeRelease stores v in *p with release order: every store before it is seen first.
// On amd64 (TSO) that is a plain move; sync/atomic's Store is a locked exchange, a full fence
// that waits for the frame's cache lines to be taken from the core that polls them, so a
// frame written with three such stores waited for its lines one after the other. A frame's
// publication (Writer.publish) still stores the tail with a full fence, which the sleep
// protocol needs (await). Go's compiler keeps stores in program order and does not move them
// across the atomic that follows.
func storeRelease(p *atomic.Uint64, v uint64) { *(*uint64)(unsafe.Pointer(p)) = v }
