package main

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import (
	"kylix/core"
	"time"
)

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
		return handOut(name, s, ce, out, ce.c.Shrink)
	})
}

// handOut runs a call that makes the next comm of ce's (kylix_shrink, kylix_resize) and gives
// the new comm a handle of its own in *out, at ce's log level.
func handOut(name string, s *sink, ce *commEntry, out *C.uintptr_t, next func() (*core.Comm, error)) C.int {
	t0 := time.Now()
	oldRank, oldSize := ce.c.Rank(), ce.c.Size()
	nc, err := next()
	if err != nil {
		return fail(name, s, err)
	}
	ne, err := addComm(nc, ce.logLevel)
	if err != nil {
		nc.Close()
		return fail(name, s, err)
	}
	joiners := 0
	for _, p := range nc.Members() {
		if p < 0 {
			joiners++
		}
	}
	passTimeline(ce.c, nc, name, joiners) // exports_timeline.go
	logf(logInfo, ce.logLevel, nc.Rank(), "%s: rank %d of %d is now rank %d of %d (%d joiners) in %v",
		name, oldRank, oldSize, nc.Rank(), nc.Size(), joiners, time.Since(t0).Round(time.Millisecond))
	*out = C.uintptr_t(ne.id)
	return 0
}
