package trace

import (
	"kylix/core/kx"
	"sync/atomic"
)

// The timeline's clock. A small call reads it about six times (each phase's start, before and
// after each wait that can block), so it is kx.FastMono: the time-stamp counter on a line
// fitted to the runtime's monotonic clock where the kernel keeps time with the counter (about
// 9 ns a read here, against 22 for a vDSO clock_gettime), else that clock itself. FastMono never
// reads ahead of the monotonic clock, so a phase never ends after its call; and Now is never
// before the latest At, so a phase never starts before its call.

// now is the local clock: FastMono since Open, not before the latest At.
func (t *Tracer) now() int64 {
	return max(kx.FastMono()-t.baseMono, atomic.LoadInt64(&t.lastAt))
}

// at makes ns, the local clock as the caller just read it (a collective's start or end), the
// floor of Now.
func (t *Tracer) at(ns int64) {
	if ns > atomic.LoadInt64(&t.lastAt) {
		kx.StoreRelaxed(&t.lastAt, ns) // no fence: the floor needs none
	}
}
