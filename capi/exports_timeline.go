package main

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import (
	"fmt"
	"kylix/core"
	"kylix/core/kx"
	"kylix/core/trace"
	"os"
	"sync"
)

// The timeline (option timeline=DIR, core/trace): opened by kylix_init, shared by the comms a
// shrink or resize makes from that one, closed with the last of them; kylix_mark records the
// caller's spans on it.

// tlRefs counts the live comms of each timeline.
var tlRefs = struct {
	mu sync.Mutex
	n  map[*trace.Tracer]int
}{n: map[*trace.Tracer]int{}}

// startTimeline opens c's timeline when o asks for one. Every original rank aligns its clock
// to rank 0's (a collective: the option is the job's, as kylixrun --timeline sets it for every
// rank); a joiner, which the members do not wait for, keeps its wall clock and records the
// error as unknown.
func startTimeline(c *core.Comm, o kx.Options) error {
	if o.Timeline == "" {
		return nil
	}
	t, err := trace.Open(o.Timeline, c.Rank(), o.Join != "")
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	if o.Join != "" {
		t.SetClock(0, -1, c.Rank(), host)
	} else if err := t.AlignWith(c, host); err != nil {
		t.Close()
		return err
	}
	c.ResetStats() // the clock rounds are not the caller's collectives
	c.SetTimeline(t)
	tlRefs.mu.Lock()
	tlRefs.n[t]++
	tlRefs.mu.Unlock()
	return nil
}

// passTimeline gives next, made from prev by a shrink or resize, prev's timeline, and marks the
// moment on it.
func passTimeline(prev, next *core.Comm, what string, joiners int) {
	t := prev.Timeline()
	if t == nil {
		return
	}
	next.SetTimeline(t)
	tlRefs.mu.Lock()
	tlRefs.n[t]++
	tlRefs.mu.Unlock()
	next.TimelineNote(what, fmt.Sprintf("rank %d of %d is now rank %d of %d (%d joiners)",
		prev.Rank(), prev.Size(), next.Rank(), next.Size(), joiners))
}

// endTimeline releases c's share of its timeline: the last comm closes the file.
func endTimeline(c *core.Comm) {
	t := c.Timeline()
	if t == nil {
		return
	}
	if js, err := c.StatsJSON(); err == nil {
		t.WriteStats(js)
	}
	tlRefs.mu.Lock()
	tlRefs.n[t]--
	last := tlRefs.n[t] <= 0
	if last {
		delete(tlRefs.n, t)
	}
	tlRefs.mu.Unlock()
	if last {
		t.Close()
	}
}

// markFail reports a kylix_mark failure in kylix_errmsg only: a mark is local bookkeeping, so
// unlike a collective's failure it is not logged nor told to kylixrun as a cause of the job's end.
func markFail(s *sink, err error) C.int {
	s.set("kylix_mark: " + err.Error())
	return C.int(kx.CodeOf(err))
}

// maxMarkName bounds how much of a mark's name is read.
const maxMarkName = 256

//export kylixgo_mark
func kylixgo_mark(h C.uintptr_t, name *C.char, kind C.int, eb *C.char, ecap C.size_t) (st C.int) {
	return onComm("kylix_mark", h, eb, ecap, func(s *sink, ce *commEntry) C.int {
		const fn = "kylix_mark"
		if name == nil {
			return markFail(s, argErr("name is NULL"))
		}
		n := cStrLen(name, maxMarkName)
		if n == 0 {
			return markFail(s, argErr("name is empty"))
		}
		if kind < trace.MarkInstant || kind > trace.MarkEnd {
			return markFail(s, argErr("kind: %d is not KYLIX_MARK_INSTANT, KYLIX_MARK_BEGIN or KYLIX_MARK_END", int(kind)))
		}
		t := ce.c.Timeline()
		if t == nil {
			return 0 // timeline off: nothing to record
		}
		if err := t.Mark(C.GoStringN(name, C.int(n)), int(kind)); err != nil {
			return markFail(s, err)
		}
		return 0
	})
}
