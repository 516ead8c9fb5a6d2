package main

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import "unsafe"

// ---- statistics (kylix_stats_json, kylix_stats_reset) ---------------------------------------

// kylixgo_stats_json writes c's statistics as a NUL-terminated JSON object into buf[0..cap).
// *needed (when needed is not NULL) always receives the JSON length + 1. When cap is smaller,
// nothing is written to buf and the call fails with KYLIX_ERR_ARG naming cap. Local: no peer
// is involved, so failures never go through Reject.
//
//export kylixgo_stats_json
func kylixgo_stats_json(h C.uintptr_t, buf *C.char, capacity C.int64_t, needed *C.int64_t,
	eb *C.char, ecap C.size_t) (st C.int) {
	return onComm("kylix_stats_json", h, eb, ecap, func(s *sink, ce *commEntry) C.int {
		const name = "kylix_stats_json"
		switch {
		case capacity < 0:
			return fail(name, s, argErr("cap: %d is negative", int64(capacity)))
		case buf == nil && capacity > 0:
			return fail(name, s, argErr("buf is NULL but cap=%d", int64(capacity)))
		}
		js, err := ce.c.StatsJSON()
		if err != nil {
			return fail(name, s, err)
		}
		return putString(name, s, string(js), "the stats", buf, capacity, needed)
	})
}

// putString is a string getter's answer: *needed (if not NULL) gets the bytes str needs with
// its terminator, and str goes to buf only when all of it fits (nothing is written otherwise).
func putString(name string, s *sink, str, what string, buf *C.char, capacity C.int64_t, needed *C.int64_t) C.int {
	n := int64(len(str)) + 1
	if needed != nil {
		*needed = C.int64_t(n)
	}
	if int64(capacity) < n {
		return fail(name, s, argErr("cap: %d is too small for %s: buf needs %d bytes (see *needed)", int64(capacity), what, n))
	}
	if err := checkSpan(unsafe.Pointer(buf), uint64(n), 1, "buf", "cap"); err != nil {
		return fail(name, s, err)
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))
	copy(dst, str)
	dst[n-1] = 0
	return 0
}

// kylixgo_stats_reset zeroes c's counters and timers (local).
//
//export kylixgo_stats_reset
func kylixgo_stats_reset(h C.uintptr_t, eb *C.char, ecap C.size_t) (st C.int) {
	return onComm("kylix_stats_reset", h, eb, ecap, func(s *sink, ce *commEntry) C.int {
		const name = "kylix_stats_reset"
		ce.c.ResetStats()
		return 0
	})
}

// ---- kylix_reject ----------------------------------------------------------------------------

// kylixgo_reject gives up this rank's turn at the next collective with the caller's reason.
//
//export kylixgo_reject
func kylixgo_reject(h C.uintptr_t, reason *C.char, eb *C.char, ecap C.size_t) (st C.int) {
	return onComm("kylix_reject", h, eb, ecap, func(s *sink, ce *commEntry) C.int {
		const name = "kylix_reject"
		why := "no reason given"
		if reason != nil {
			why = C.GoStringN(reason, C.int(cStrLen(reason, maxReason)))
		}
		return status(name, s, ce.c.RejectCall(why))
	})
}

// maxReason bounds how much of a reason is read (a reason need not be NUL-terminated within
// reach of a buggy caller's buffer; what is longer is cut).
const maxReason = 4096

// cStrLen is strlen(p) but at most max.
func cStrLen(p *C.char, max int) int {
	b := unsafe.Slice((*byte)(unsafe.Pointer(p)), max)
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return max
}
