// Package cfn calls C function pointers from Go without cgo trampolines (purego): the one place
// where the algorithms' user ops, which are Go functions, meet kylix_op_create's C callbacks.
package cfn

import (
	"kylix/core/kernels"
	"kylix/core/kx"
	"unsafe"

	"github.com/ebitengine/purego"
)

// UserFn wraps the C function `void fn(void *inout, const void *in, int64_t count, int dtype,
// void *ctx)` and its ctx as a kernels.UserFn. A call costs a few hundred nanoseconds, which is
// why the kernels hand it chunks of up to kernels.MaxUserChunk elements.
func UserFn(fn, ctx uintptr) kernels.UserFn {
	return func(inout, in []byte, count int, d kx.Dtype) {
		// SyscallN is go:uintptrescapes: the buffers stay alive and in place for the call.
		purego.SyscallN(fn, uintptr(unsafe.Pointer(unsafe.SliceData(inout))),
			uintptr(unsafe.Pointer(unsafe.SliceData(in))), uintptr(count), uintptr(d), ctx)
	}
}
