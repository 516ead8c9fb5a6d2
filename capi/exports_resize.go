package main

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import (
	"time"
	"unsafe"
)

// kylixgo_resize makes the resized comm (core.Comm.Resize) and hands out a new handle for it,
// like kylix_shrink. A failure is reported on c; on CodeTimeout (min_size not met) c goes on
// unchanged.
//
//export kylixgo_resize
func kylixgo_resize(h C.uintptr_t, minSize C.int32_t, out *C.uintptr_t, eb *C.char, ecap C.size_t) (st C.int) {
	return onComm("kylix_resize", h, eb, ecap, func(s *sink, ce *commEntry) C.int {
		const name = "kylix_resize"
		switch {
		case out == nil:
			return fail(name, s, argErr("next is NULL"))
		case minSize < 0:
			return fail(name, s, argErr("min_size: %d is negative", int32(minSize)))
		}
		t0 := time.Now()
		oldRank, oldSize := ce.c.Rank(), ce.c.Size()
		nc, err := ce.c.Resize(int(minSize))
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
		logf(logInfo, ce.logLevel, nc.Rank(), "resized: rank %d of %d is now rank %d of %d (%d joiners) in %v",
			oldRank, oldSize, nc.Rank(), nc.Size(), joiners, time.Since(t0).Round(time.Millisecond))
		*out = C.uintptr_t(ne.id)
		return 0
	})
}

//export kylixgo_members
func kylixgo_members(h C.uintptr_t, prev *C.int32_t, capacity C.int32_t, n *C.int32_t, eb *C.char, ecap C.size_t) (st C.int) {
	return onComm("kylix_members", h, eb, ecap, func(s *sink, ce *commEntry) C.int {
		const name = "kylix_members"
		switch {
		case n == nil:
			return fail(name, s, argErr("n is NULL"))
		case capacity < 0:
			return fail(name, s, argErr("cap: %d is negative", int32(capacity)))
		case prev == nil && capacity > 0:
			return fail(name, s, argErr("prev_ranks is NULL but cap=%d", int32(capacity)))
		}
		ms := ce.c.Members()
		*n = C.int32_t(len(ms))
		if capacity > 0 {
			dst := unsafe.Slice((*int32)(unsafe.Pointer(prev)), int(capacity))
			for i := 0; i < len(ms) && i < len(dst); i++ {
				dst[i] = int32(ms[i])
			}
		}
		if int(capacity) < len(ms) {
			return fail(name, s, argErr("cap: %d is too small for %d ranks (see *n)", int32(capacity), len(ms)))
		}
		return 0
	})
}

//export kylixgo_join_address
func kylixgo_join_address(h C.uintptr_t, buf *C.char, capacity C.int64_t, needed *C.int64_t, eb *C.char, ecap C.size_t) (st C.int) {
	return onComm("kylix_join_address", h, eb, ecap, func(s *sink, ce *commEntry) C.int {
		const name = "kylix_join_address"
		switch {
		case capacity < 0:
			return fail(name, s, argErr("cap: %d is negative", int64(capacity)))
		case buf == nil && capacity > 0:
			return fail(name, s, argErr("buf is NULL but cap=%d", int64(capacity)))
		}
		addr, err := ce.c.JoinAddress()
		if err != nil {
			return fail(name, s, err)
		}
		n := int64(len(addr)) + 1
		if needed != nil {
			*needed = C.int64_t(n)
		}
		if int64(capacity) < n {
			return fail(name, s, argErr("cap: %d is too small for the join address: buf needs %d bytes (see *needed)", int64(capacity), n))
		}
		if err := checkSpan(unsafe.Pointer(buf), uint64(n), 1, "buf", "cap"); err != nil {
			return fail(name, s, err)
		}
		dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))
		copy(dst, addr)
		dst[n-1] = 0
		return 0
	})
}
