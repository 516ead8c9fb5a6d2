package main

import (
	"kylix/capi/cfn"
	"kylix/core/kernels"
)

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

// kylixgo_op_create registers a kylix_user_fn. fn and ctx arrive as integers: cfn calls fn
// through purego and hands ctx back untouched, so neither is ever a Go pointer. Local, no comm:
// failures go to kylix_errmsg(NULL).
//
//export kylixgo_op_create
func kylixgo_op_create(fn, ctx C.uintptr_t, op *C.int, eb *C.char, ecap C.size_t) (st C.int) {
	const name = "kylix_op_create"
	s := &sink{buf: eb, size: ecap}
	defer rec(name, &st, s)
	if op == nil {
		return fail(name, s, argErr("op is NULL"))
	}
	if fn == 0 {
		return fail(name, s, argErr("fn is NULL"))
	}
	o, err := kernels.RegisterUserOp(cfn.UserFn(uintptr(fn), uintptr(ctx)))
	if err != nil {
		return fail(name, s, err)
	}
	*op = C.int(o)
	return 0
}
