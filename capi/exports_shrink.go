package main

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import "time"

// kylixgo_shrink makes the comm of c's survivors (core.Comm.Shrink) and hands out a new handle
// for it, with its own kylix_errmsg and plans, at c's log level. A failure is reported on c.
// c keeps its handle: it stays broken and must still be finalized; the two handles are
// finalized independently and the connections close with the last of them.
//
//export kylixgo_shrink
func kylixgo_shrink(h C.uintptr_t, out *C.uintptr_t, eb *C.char, ecap C.size_t) (st C.int) {
	return onComm("kylix_shrink", h, eb, ecap, func(s *sink, ce *commEntry) C.int {
		const name = "kylix_shrink"
		if out == nil {
			// Not a collective slot of c (c is normally broken): nothing to keep in step.
			return fail(name, s, argErr("survivors is NULL"))
		}
		t0 := time.Now()
		oldRank, oldSize := ce.c.Rank(), ce.c.Size()
		nc, err := ce.c.Shrink()
		if err != nil {
			return fail(name, s, err)
		}
		ne, err := addComm(nc, ce.logLevel)
		if err != nil {
			nc.Close()
			return fail(name, s, err)
		}
		logf(logInfo, ce.logLevel, nc.Rank(), "shrunk: rank %d of %d is now rank %d of %d (%d ranks left) in %v",
			oldRank, oldSize, nc.Rank(), nc.Size(), oldSize-nc.Size(), time.Since(t0).Round(time.Millisecond))
		*out = C.uintptr_t(ne.id)
		return 0
	})
}
