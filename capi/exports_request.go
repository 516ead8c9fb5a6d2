package main

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import (
	"kylix/core/kx"
	"unsafe"
)

// Non-blocking calls. ireduce/iallreduce check their arguments like the blocking forms (a bad
// one on a live comm goes through Reject, so the ranks stay in step) and queue the collective on
// the comm's executor (core/request.go), which runs it on its own goroutine. The buffers are C
// memory, so that goroutine may read and write them after the call returns; the header makes
// the caller keep them until wait/test reports completion.

//export kylixgo_ireduce
func kylixgo_ireduce(h C.uintptr_t, outVals, inVals unsafe.Pointer, dtype, op C.int, width C.int32_t,
	req *C.uintptr_t, eb *C.char, ecap C.size_t) (st C.int) {
	return onPlan("kylix_ireduce", h, eb, ecap, func(s *sink, pe *planEntry, ce *commEntry) C.int {
		const name = "kylix_ireduce"
		if req == nil {
			return reject(name, s, argErr("req is NULL"))
		}
		d, o, w, ob, ib, err := reduceBufs(pe, outVals, inVals, dtype, op, width)
		if err != nil {
			return reject(name, s, err)
		}
		r, err := pe.p.IReduce(ob, ib, d, o, w)
		if err != nil {
			return fail(name, s, err)
		}
		*req = C.uintptr_t(addRequest(ce, r, name))
		if ce.debug() {
			debugf(ce, "%s: plan %#x %s/%s width %d -> request %#x", name, pe.h, d, o, w, uint64(*req))
		}
		return 0
	})
}

//export kylixgo_iallreduce
func kylixgo_iallreduce(h C.uintptr_t, send, recv unsafe.Pointer, count C.int64_t, dtype, op C.int,
	req *C.uintptr_t, eb *C.char, ecap C.size_t) (st C.int) {
	return onComm("kylix_iallreduce", h, eb, ecap, func(s *sink, ce *commEntry) C.int {
		const name = "kylix_iallreduce"
		if req == nil {
			return reject(name, s, argErr("req is NULL"))
		}
		d, o, sb, rb, err := denseBufs(send, recv, count, dtype, op)
		if err != nil {
			return reject(name, s, err)
		}
		r, err := ce.c.IAllreduce(sb, rb, d, o)
		if err != nil {
			return fail(name, s, err)
		}
		*req = C.uintptr_t(addRequest(ce, r, name))
		if ce.debug() {
			debugf(ce, "%s: count %d %s/%s -> request %#x", name, int64(count), d, o, uint64(*req))
		}
		return 0
	})
}

// opStatus reports a finished request: the operation's status, its message (prefixed with the
// call that started it) in kylix_errmsg of the request's comm.
func opStatus(name string, s *sink, re *reqEntry, err error) C.int {
	if err == nil {
		return 0
	}
	return fail(name, s, kx.Errorf(kx.CodeOf(err), "%s: %v", re.name, err))
}

//export kylixgo_wait
func kylixgo_wait(h C.uintptr_t, eb *C.char, ecap C.size_t) (st C.int) {
	const name = "kylix_wait"
	s := &sink{buf: eb, size: ecap}
	defer rec(name, &st, s)
	re, err := lookupRequest(uint64(h), "r", true)
	if err != nil {
		return fail(name, s, err)
	}
	s.ce = re.ce
	return opStatus(name, s, re, re.r.Wait())
}

//export kylixgo_test
func kylixgo_test(h C.uintptr_t, done *C.int, eb *C.char, ecap C.size_t) (st C.int) {
	const name = "kylix_test"
	s := &sink{buf: eb, size: ecap}
	defer rec(name, &st, s)
	re, err := lookupRequest(uint64(h), "r", false)
	if err != nil {
		return fail(name, s, err)
	}
	s.ce = re.ce
	if done == nil {
		return fail(name, s, argErr("done is NULL"))
	}
	fin, err := re.r.Test()
	if !fin {
		*done = 0
		return 0
	}
	if !removeRequest(re) { // completed by a call on another thread meanwhile (a misuse)
		*done = 0
		return fail(name, s, kx.Errorf(kx.CodeState, "r: request was already completed and freed"))
	}
	*done = 1
	return opStatus(name, s, re, err)
}
