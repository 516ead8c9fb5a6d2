package main

/*
#include <stdint.h>
#include <stddef.h>
*/
import "C"

import (
	"kylix/core/kx"
	"unsafe"
)

// ---- butterfly mixing ----------------------------------------------------------------------

//export kylixgo_mix
func kylixgo_mix(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dtype C.int, step C.int64_t,
	eb *C.char, ecap C.size_t) (st C.int) {
	return onComm("kylix_mix", h, eb, ecap, func(s *sink, ce *commEntry) C.int {
		const name = "kylix_mix"
		// Checked before narrowing to kx.Dtype (a uint8): dtype 257 must not become F32.
		if dtype < C.int(kx.F32) || dtype > C.int(kx.U64) {
			return reject(name, s, argErr("dtype: %d is not a kylix_dtype", int(dtype)))
		}
		d := kx.Dtype(dtype)
		b, err := byteSlice(buf, int64(count), uint64(d.Size()), "buf", "count")
		if err != nil {
			return reject(name, s, err)
		}
		// The float dtype and the step are core's checks (Comm.Mix), which reject the call.
		return status(name, s, ce.c.Mix(b, d, int64(step)))
	})
}
