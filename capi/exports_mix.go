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
		// Checked before narrowing to core.Dtype (a uint8): dtype 257 must not become F32.
		if dtype < C.int(kx.F32) || dtype > C.int(kx.U64) {
			return reject(name, s, argErr("dtype: %d is not a kylix_dtype", int(dtype)))
		}
		d := kx.Dtype(dtype)
		if !d.IsFloat() {
			return reject(name, s, argErr("dtype: mixing averages, so it needs KYLIX_F32 or KYLIX_F64, not %s", d))
		}
		if step < 0 {
			return reject(name, s, argErr("step: %d is negative", int64(step)))
		}
		b, err := byteSlice(buf, int64(count), uint64(d.Size()), "buf", "count")
		if err != nil {
			return reject(name, s, err)
		}
		return status(name, s, ce.c.Mix(b, d, int64(step)))
	})
}
