package main

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import (
	"kylix/core"
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
		return handOut(name, s, ce, out, func() (*core.Comm, error) { return ce.c.Resize(int(minSize)) })
	})
}

//export kylixgo_members
func kylixgo_members(h C.uintptr_t, prev *C.int32_t, capacity C.int32_t, n *C.int32_t, eb *C.char, ecap C.size_t) (st C.int) {
	return onComm("kylix_members", h, eb, ecap, func(s *sink, ce *commEntry) C.int {
		return putRanks("kylix_members", s, ce.c.Members, "prev_ranks", "ranks", prev, capacity, n)
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
		return putString(name, s, addr, "the join address", buf, capacity, needed)
	})
}
