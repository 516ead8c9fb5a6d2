// Package main is libkylix.so: the C ABI of include/kylix.h. The public kylix_* names live in
// shim.c (const-correct prototypes); the Go functions here are exported as kylixgo_* and are
// hidden from the library's dynamic symbol table by kylix.map.
//
// Every export recovers panics into KYLIX_ERR_INTERNAL: a Go panic would kill the host
// process. Argument errors found here on a live comm go through core's Comm.Reject, which takes
// the collective's slot and tells the peers, so ranks stay in step.
package main

/*
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"kylix/core/kx"
	"kylix/core/planning"
	"kylix/netio/rendezvous"
	"math"
	"math/bits"
	"os"
	"runtime/debug"
	"sync"
	"time"
	"unsafe"

	"kylix/core"
	"kylix/netio"
)

func main() {}

// ---- helpers -------------------------------------------------------------------------------

func argErr(format string, args ...any) error { return kx.Errorf(kx.CodeArg, format, args...) }

// fail records err as the failure of call name and returns its status.
func fail(name string, s *sink, err error) C.int {
	code := kx.CodeOf(err)
	msg := name + ": " + err.Error()
	s.set(msg)
	// log=error reports what the job cannot recover from (peers lost, timeouts, refused
	// handshakes, internal faults). Bad arguments, misuse and mismatches are the caller's to
	// handle from the status; they show at log=info.
	level := logError
	if code == kx.CodeArg || code == kx.CodeState || code == kx.CodeMismatch {
		level = logInfo
	}
	if s.ce != nil {
		logf(level, s.ce.logLevel, s.ce.c.Rank(), "%s", msg)
		// Under kylixrun the launcher hears why, to name the rank that started a job's end.
		rendezvous.ReportFailure(s.ce.c.Rank(), msg, err)
	}
	return C.int(code)
}

// rec turns a panic into KYLIX_ERR_INTERNAL with the panic text as the message. Deferred by
// every export.
func rec(name string, st *C.int, s *sink) {
	r := recover()
	if r == nil {
		return
	}
	*st = C.int(kx.CodeInternal)
	msg := fmt.Sprintf("%s: internal error: panic: %v", name, r)
	s.set(msg)
	if s.ce == nil || s.ce.logLevel >= logError {
		fmt.Fprintf(os.Stderr, "[kylix] %s\n%s", msg, debug.Stack())
	}
}

// reject reports an argument error of a collective on a live comm, keeping ranks in step.
func reject(name string, s *sink, err error) C.int {
	return fail(name, s, s.ce.c.Reject(err))
}

func status(name string, s *sink, err error) C.int {
	if err != nil {
		return fail(name, s, err)
	}
	return 0
}

// idxSlice views n int64 indices at p (C memory) without copying.
func idxSlice(p *C.int64_t, n C.int64_t, name, nName string) ([]int64, error) {
	if n < 0 {
		return nil, argErr("%s: %d is negative", nName, int64(n))
	}
	if n == 0 {
		return []int64{}, nil
	}
	if p == nil {
		return nil, argErr("%s is NULL but %s=%d", name, nName, int64(n))
	}
	if err := checkSpan(unsafe.Pointer(p), uint64(n), 8, name, nName); err != nil {
		return nil, err
	}
	return unsafe.Slice((*int64)(unsafe.Pointer(p)), int(n)), nil
}

// valSlice views n rows of width elements of dtype d at p (C memory) without copying.
func valSlice(p unsafe.Pointer, n int64, width int, d kx.Dtype, name, nName string) ([]byte, error) {
	hi, es := bits.Mul64(uint64(width), uint64(d.Size()))
	if hi != 0 {
		return nil, argErr("%s: width %d x %d bytes overflows", name, width, d.Size())
	}
	return byteSlice(p, n, es, name, nName)
}

// byteSlice views n elements of es bytes at p (C memory) as bytes, without copying.
func byteSlice(p unsafe.Pointer, n int64, es uint64, name, nName string) ([]byte, error) {
	if n < 0 {
		return nil, argErr("%s: %d is negative", nName, n)
	}
	hi, total := bits.Mul64(uint64(n), es)
	if hi != 0 || total > math.MaxInt64 {
		return nil, argErr("%s: %s=%d elements of %d bytes overflow", name, nName, n, es)
	}
	if total == 0 {
		return []byte{}, nil
	}
	if p == nil {
		return nil, argErr("%s is NULL but %s=%d", name, nName, n)
	}
	if err := checkSpan(p, total, 1, name, nName); err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), int(total)), nil
}

// checkSpan refuses n elements of size bytes at p that overflow or run past the end of the
// address space (unsafe.Slice would panic).
func checkSpan(p unsafe.Pointer, n, size uint64, name, nName string) error {
	hi, total := bits.Mul64(n, size)
	if hi != 0 || total > math.MaxInt64 || total > ^uint64(0)-uint64(uintptr(p)) {
		return argErr("%s: %s=%d elements of %d bytes do not fit in memory", name, nName, n, size)
	}
	return nil
}

// reduceArgs checks dtype, op and width as far as the C integer types allow before they are
// narrowed to core's types (op 65537 must not become op 1). core checks the rest.
func reduceArgs(dtype, op C.int, width C.int32_t) (kx.Dtype, kx.Op, int, error) {
	// Only what the conversion to Go needs is checked here (C integer ranges); whether the
	// dtype, op and width make sense is core's to say, once.
	if dtype < 0 || dtype > math.MaxUint8 {
		return 0, 0, 0, argErr("dtype: %d is not a kylix_dtype", int(dtype))
	}
	if op < 0 || op > math.MaxUint16 {
		return 0, 0, 0, argErr("op: %d is not a kylix_op", int(op))
	}
	return kx.Dtype(dtype), kx.Op(op), int(width), nil
}

// viewable reports whether buffers of rows of w elements of d can be sized; when not, capi
// passes no buffers and core rejects the dtype or width, naming it.
func viewable(d kx.Dtype, w int) bool { return d.Valid() && w >= 1 }

func debugf(ce *commEntry, format string, args ...any) {
	if ce.debug() {
		logf(logDebug, ce.logLevel, ce.c.Rank(), format, args...)
	}
}

// debug tells whether the comm logs at debug level. The calls made in loops test it before
// debugf: its arguments are boxed (allocated) before debugf can look, and an allocation a call
// brings the garbage collector's pauses into a loop of small steps.
func (ce *commEntry) debug() bool { return ce.logLevel >= logDebug }

// ---- membership ----------------------------------------------------------------------------

// envOnce: a misspelled KYLIX_ variable is reported at the first kylix_init of the process, by
// one process of the job (kx.ReportsUnknownEnv).
var envOnce sync.Once

//export kylixgo_init
func kylixgo_init(options *C.char, out *C.uintptr_t, eb *C.char, ecap C.size_t) (st C.int) {
	const name = "kylix_init"
	s := &sink{buf: eb, size: ecap}
	defer rec(name, &st, s)
	if out == nil {
		return fail(name, s, argErr("out is NULL"))
	}
	str := ""
	if options != nil {
		str = C.GoString(options)
	}
	o, err := kx.ParseOptions(str, os.Getenv)
	if err != nil {
		return fail(name, s, err)
	}
	lvl := parseLogLevel(o.Log)
	envOnce.Do(func() {
		if !kx.ReportsUnknownEnv(o.Rank, os.Getenv) {
			return
		}
		for _, w := range kx.UnknownEnv(os.Environ()) {
			logf(logWarn, lvl, o.Rank, "%s", w)
		}
	})
	failLog := func(err error) C.int {
		if kx.CodeOf(err) != kx.CodeArg {
			logf(logError, lvl, o.Rank, "%s: %v", name, err)
		}
		return fail(name, s, err)
	}
	t0 := time.Now()
	c, err := connectComm(o)
	if err != nil {
		return failLog(err)
	}
	if err := startTimeline(c, o); err != nil { // exports_timeline.go
		c.Close()
		return failLog(err)
	}
	ce, err := addComm(c, lvl)
	if err != nil {
		c.Close()
		return failLog(err)
	}
	logf(logInfo, lvl, c.Rank(), "joined: rank %d of %d, degrees=%s, timeout %v, connected in %v",
		c.Rank(), c.Size(), o.Degrees, o.Timeout, time.Since(t0).Round(time.Millisecond))
	*out = C.uintptr_t(ce.id)
	return 0
}

// connectComm makes the comm of o: connected at start-up, or, with join=, admitted to a running
// elastic job by its members' next resize. An elastic comm gets the join client.
func connectComm(o kx.Options) (*core.Comm, error) {
	var g *netio.Grower
	if o.Elastic {
		var err error
		if g, err = netio.NewGrower(o); err != nil {
			return nil, err
		}
	}
	if o.Join != "" {
		t, a, err := netio.Join(o)
		if err != nil {
			return nil, err
		}
		return core.NewJoinedComm(t, o, a, g)
	}
	t, err := netio.Connect(o)
	if err != nil {
		return nil, err
	}
	c, err := core.NewComm(t, o)
	if err != nil {
		t.Close()
		return nil, err
	}
	if g != nil {
		c.SetGrower(g)
	}
	return c, nil
}

//export kylixgo_finalize
func kylixgo_finalize(h C.uintptr_t, eb *C.char, ecap C.size_t) (st C.int) {
	const name = "kylix_finalize"
	s := &sink{buf: eb, size: ecap}
	defer rec(name, &st, s)
	ce, err := lookupComm(uint64(h), "c")
	if err != nil {
		return fail(name, s, err)
	}
	for _, pe := range removeComm(ce) {
		pe.p.Free()
	}
	err = ce.c.Close() // finishes the requests in flight first
	endTimeline(ce.c)  // exports_timeline.go
	removeCommRequests(ce)
	logf(logInfo, ce.logLevel, ce.c.Rank(), "finalized")
	if ce.errmsg != nil {
		m := ce.errmsg
		ce.errmsg = nil
		C.free(unsafe.Pointer(m))
	}
	// The comm is gone: a close failure can only be reported through kylix_errmsg(NULL).
	s.ce = nil
	return status(name, s, err)
}

// kylixgo_rank returns the rank (which == 0) or the size (which == 1), or -1.
//
//export kylixgo_rank
func kylixgo_rank(h C.uintptr_t, which C.int, eb *C.char, ecap C.size_t) (r C.int) {
	name := "kylix_rank"
	if which != 0 {
		name = "kylix_size"
	}
	s := &sink{buf: eb, size: ecap}
	defer func() {
		var st C.int
		rec(name, &st, s)
		if st != 0 {
			r = -1
		}
	}()
	ce, err := lookupComm(uint64(h), "c")
	if err != nil {
		fail(name, s, err)
		return -1
	}
	if which != 0 {
		return C.int(ce.c.Size())
	}
	return C.int(ce.c.Rank())
}

//export kylixgo_errmsg
func kylixgo_errmsg(h C.uintptr_t, found *C.int) (m *C.char) {
	defer func() {
		if recover() != nil {
			*found, m = 0, nil
		}
	}()
	tab.mu.Lock()
	ce := tab.comms[uint64(h)]
	tab.mu.Unlock()
	if ce == nil {
		*found = 0
		return nil
	}
	*found = 1
	return ce.errmsg
}

// onComm runs body as call name on the comm of handle h: the preamble every comm call shares.
// Errors go to the comm's message sink, a panic in body becomes KYLIX_ERR_INTERNAL (rec), and
// a NULL, finalized or foreign handle fails here with its status.
//
// The sink of a call on a live comm is the comm's own (commEntry.sink): one thread at a time
// uses a comm (include/kylix.h), and a sink made per call would cost a small step an
// allocation. The handle lookup, which cannot panic, runs before rec is deferred.
func onComm(name string, h C.uintptr_t, eb *C.char, ecap C.size_t, body func(s *sink, ce *commEntry) C.int) (st C.int) {
	ce, err := lookupComm(uint64(h), "c")
	if err != nil {
		return fail(name, &sink{buf: eb, size: ecap}, err)
	}
	s := ce.useSink(eb, ecap)
	defer rec(name, &st, s)
	return body(s, ce)
}

// onPlan is onComm for calls on a plan handle. A freed plan of a live comm goes through
// Reject, so the peers of a collective on it fail with a mismatch instead of waiting.
func onPlan(name string, h C.uintptr_t, eb *C.char, ecap C.size_t, body func(s *sink, pe *planEntry, ce *commEntry) C.int) (st C.int) {
	pe, ce, err := lookupPlan(uint64(h), "p")
	if ce == nil {
		return fail(name, &sink{buf: eb, size: ecap}, err)
	}
	s := ce.useSink(eb, ecap)
	defer rec(name, &st, s)
	if err != nil {
		return reject(name, s, err)
	}
	return body(s, pe, ce)
}

// reduceBufs checks the arguments of kylix_reduce and kylix_ireduce and views their C buffers.
func reduceBufs(pe *planEntry, outVals, inVals unsafe.Pointer, dtype, op C.int, width C.int32_t) (d kx.Dtype, o kx.Op, w int, ob, ib []byte, err error) {
	if d, o, w, err = reduceArgs(dtype, op, width); err != nil || !viewable(d, w) {
		return
	}
	if ob, err = valSlice(outVals, pe.nOut, w, d, "out_vals", "n_out"); err != nil {
		return
	}
	ib, err = valSlice(inVals, pe.nIn, w, d, "in_vals", "n_in")
	return
}

// denseBufs checks the arguments of kylix_allreduce and kylix_iallreduce and views their C
// buffers.
func denseBufs(send, recv unsafe.Pointer, count C.int64_t, dtype, op C.int) (d kx.Dtype, o kx.Op, sb, rb []byte, err error) {
	if d, o, _, err = reduceArgs(dtype, op, 1); err != nil || !viewable(d, 1) {
		return
	}
	// The common case in one check (a repeated small allreduce): a positive count, both
	// buffers given, and neither running past the end of the address space. Anything else
	// takes byteSlice's checks, which name what is wrong.
	if hi, total := bits.Mul64(uint64(count), uint64(d.Size())); count > 0 && hi == 0 && total <= math.MaxInt64 &&
		send != nil && recv != nil && total <= ^uint64(0)-uint64(max(uintptr(send), uintptr(recv))) {
		return d, o, unsafe.Slice((*byte)(send), int(total)), unsafe.Slice((*byte)(recv), int(total)), nil
	}
	if sb, err = byteSlice(send, int64(count), uint64(d.Size()), "send", "count"); err != nil {
		return
	}
	rb, err = byteSlice(recv, int64(count), uint64(d.Size()), "recv", "count")
	return
}

// ---- sparse allreduce ----------------------------------------------------------------------

//export kylixgo_config
func kylixgo_config(h C.uintptr_t, outIdx *C.int64_t, nOut C.int64_t, inIdx *C.int64_t, nIn C.int64_t,
	plan *C.uintptr_t, eb *C.char, ecap C.size_t) (st C.int) {
	return onComm("kylix_config", h, eb, ecap, func(s *sink, ce *commEntry) C.int {
		const name = "kylix_config"
		out, err := idxSlice(outIdx, nOut, "out_idx", "n_out")
		var in []int64
		if err == nil {
			in, err = idxSlice(inIdx, nIn, "in_idx", "n_in")
		}
		if err == nil && plan == nil {
			err = argErr("plan is NULL")
		}
		if err != nil {
			return reject(name, s, err)
		}
		t0 := time.Now()
		p, err := ce.c.Config(out, in)
		if err != nil {
			return fail(name, s, err)
		}
		ph, err := addPlan(ce, p, int64(nOut), int64(nIn))
		if err != nil {
			p.Free()
			return fail(name, s, err)
		}
		debugf(ce, "%s: n_out=%d n_in=%d degrees=%v -> plan %#x in %v", name, nOut, nIn, p.Degrees(), ph, time.Since(t0))
		*plan = C.uintptr_t(ph)
		return 0
	})
}

//export kylixgo_reduce
func kylixgo_reduce(h C.uintptr_t, outVals, inVals unsafe.Pointer, dtype, op C.int, width C.int32_t,
	eb *C.char, ecap C.size_t) (st C.int) {
	return onPlan("kylix_reduce", h, eb, ecap, func(s *sink, pe *planEntry, ce *commEntry) C.int {
		const name = "kylix_reduce"
		d, o, w, ob, ib, err := reduceBufs(pe, outVals, inVals, dtype, op, width)
		if err != nil {
			return reject(name, s, err)
		}
		if !ce.debug() {
			return status(name, s, pe.p.Reduce(ob, ib, d, o, w))
		}
		t0 := time.Now()
		err = pe.p.Reduce(ob, ib, d, o, w)
		debugf(ce, "%s: plan %#x %s/%s width %d: %v in %v", name, pe.h, d, o, w, kx.CodeOf(err), time.Since(t0))
		return status(name, s, err)
	})
}

//export kylixgo_config_reduce
func kylixgo_config_reduce(h C.uintptr_t, outIdx *C.int64_t, nOut C.int64_t, outVals unsafe.Pointer,
	inIdx *C.int64_t, nIn C.int64_t, inVals unsafe.Pointer, dtype, op C.int, width C.int32_t,
	plan *C.uintptr_t, eb *C.char, ecap C.size_t) (st C.int) {
	return onComm("kylix_config_reduce", h, eb, ecap, func(s *sink, ce *commEntry) C.int {
		const name = "kylix_config_reduce"
		out, err := idxSlice(outIdx, nOut, "out_idx", "n_out")
		var in []int64
		var ob, ib []byte
		var d kx.Dtype
		var o kx.Op
		var w int
		if err == nil {
			in, err = idxSlice(inIdx, nIn, "in_idx", "n_in")
		}
		if err == nil {
			d, o, w, err = reduceArgs(dtype, op, width)
		}
		if err == nil && viewable(d, w) {
			ob, err = valSlice(outVals, int64(nOut), w, d, "out_vals", "n_out")
		}
		if err == nil && viewable(d, w) {
			ib, err = valSlice(inVals, int64(nIn), w, d, "in_vals", "n_in")
		}
		if err != nil {
			return reject(name, s, err)
		}
		t0 := time.Now()
		p, err := ce.c.ConfigReduce(out, ob, in, ib, d, o, w, plan != nil)
		if err != nil {
			return fail(name, s, err)
		}
		if plan == nil {
			debugf(ce, "%s: n_out=%d n_in=%d %s/%s width %d in %v", name, nOut, nIn, d, o, w, time.Since(t0))
			return 0
		}
		ph, err := addPlan(ce, p, int64(nOut), int64(nIn))
		if err != nil {
			p.Free()
			return fail(name, s, err)
		}
		debugf(ce, "%s: n_out=%d n_in=%d %s/%s width %d -> plan %#x in %v", name, nOut, nIn, d, o, w, ph, time.Since(t0))
		*plan = C.uintptr_t(ph)
		return 0
	})
}

//export kylixgo_plan_free
func kylixgo_plan_free(h C.uintptr_t, eb *C.char, ecap C.size_t) (st C.int) {
	const name = "kylix_plan_free"
	s := &sink{buf: eb, size: ecap}
	defer rec(name, &st, s)
	pe, ce, err := lookupPlan(uint64(h), "p")
	s.ce = ce
	if err != nil {
		return fail(name, s, err)
	}
	removePlan(pe)
	pe.p.Free()
	return 0
}

// ---- dense collectives ---------------------------------------------------------------------

//export kylixgo_bcast
func kylixgo_bcast(h C.uintptr_t, buf unsafe.Pointer, n C.int64_t, root C.int, eb *C.char, ecap C.size_t) (st C.int) {
	return onComm("kylix_bcast", h, eb, ecap, func(s *sink, ce *commEntry) C.int {
		const name = "kylix_bcast"
		b, err := byteSlice(buf, int64(n), 1, "buf", "bytes")
		if err != nil {
			return reject(name, s, err)
		}
		return status(name, s, ce.c.Bcast(b, int(root)))
	})
}

//export kylixgo_barrier
func kylixgo_barrier(h C.uintptr_t, eb *C.char, ecap C.size_t) (st C.int) {
	return onComm("kylix_barrier", h, eb, ecap, func(s *sink, ce *commEntry) C.int {
		const name = "kylix_barrier"
		return status(name, s, ce.c.Barrier())
	})
}

//export kylixgo_allreduce
func kylixgo_allreduce(h C.uintptr_t, send, recv unsafe.Pointer, count C.int64_t, dtype, op C.int,
	eb *C.char, ecap C.size_t) (st C.int) {
	return onComm("kylix_allreduce", h, eb, ecap, func(s *sink, ce *commEntry) C.int {
		const name = "kylix_allreduce"
		d, o, sb, rb, err := denseBufs(send, recv, count, dtype, op)
		if err != nil {
			return reject(name, s, err)
		}
		if err := ce.c.Allreduce(sb, rb, d, o); err != nil {
			return status(name, s, err)
		}
		ce.arm() // the next small allreduces run in C (express.go)
		return 0
	})
}

// ---- failures ------------------------------------------------------------------------------

//export kylixgo_failed_ranks
func kylixgo_failed_ranks(h C.uintptr_t, ranks *C.int32_t, capacity C.int32_t, n *C.int32_t,
	eb *C.char, ecap C.size_t) (st C.int) {
	return onComm("kylix_failed_ranks", h, eb, ecap, func(s *sink, ce *commEntry) C.int {
		return putRanks("kylix_failed_ranks", s, ce.c.FailedRanks, "ranks", "failed ranks", ranks, capacity, n)
	})
}

// putRanks is a rank-list getter's answer: after its argument checks, *n gets the length of the
// list and dst the first cap entries; a cap below the length is ARG (the call can be repeated
// with a larger buffer).
func putRanks(name string, s *sink, list func() []int, dstName, what string, dst *C.int32_t, capacity C.int32_t, n *C.int32_t) C.int {
	switch {
	case n == nil:
		return fail(name, s, argErr("n is NULL"))
	case capacity < 0:
		return fail(name, s, argErr("cap: %d is negative", int32(capacity)))
	case dst == nil && capacity > 0:
		return fail(name, s, argErr("%s is NULL but cap=%d", dstName, int32(capacity)))
	}
	vals := list()
	*n = C.int32_t(len(vals))
	if capacity > 0 {
		out := unsafe.Slice((*int32)(unsafe.Pointer(dst)), int(capacity))
		for i := 0; i < len(vals) && i < len(out); i++ {
			out[i] = int32(vals[i])
		}
	}
	if int(capacity) < len(vals) {
		return fail(name, s, argErr("cap: %d is too small for %d %s (see *n)", int32(capacity), len(vals), what))
	}
	return 0
}

// ---- planning ------------------------------------------------------------------------------

//export kylixgo_plan_degrees
func kylixgo_plan_degrees(nFeatures C.int64_t, density C.double, ranks C.int32_t, alpha C.double,
	minPacket C.int64_t, bytesPerValue C.int32_t, degrees *C.int32_t, capacity C.int32_t, layers *C.int32_t,
	eb *C.char, ecap C.size_t) (st C.int) {
	const name = "kylix_plan_degrees"
	s := &sink{buf: eb, size: ecap}
	defer rec(name, &st, s)
	switch {
	case layers == nil:
		return fail(name, s, argErr("layers is NULL"))
	case capacity < 0:
		return fail(name, s, argErr("cap: %d is negative", int32(capacity)))
	case degrees == nil && capacity > 0:
		return fail(name, s, argErr("degrees is NULL but cap=%d", int32(capacity)))
	case nFeatures < 1:
		return fail(name, s, argErr("n_features: %d must be at least 1", int64(nFeatures)))
	case ranks < 1:
		return fail(name, s, argErr("ranks: %d must be at least 1", int32(ranks)))
	case minPacket < 1:
		return fail(name, s, argErr("min_packet_bytes: %d must be at least 1", int64(minPacket)))
	case bytesPerValue < 1:
		return fail(name, s, argErr("bytes_per_value: %d must be at least 1", int32(bytesPerValue)))
	}
	ds, _, err := planning.PlanDegrees(int64(nFeatures), float64(density), int(ranks), float64(alpha),
		int64(minPacket), int(bytesPerValue))
	if err != nil {
		return fail(name, s, err)
	}
	*layers = C.int32_t(len(ds))
	if capacity > 0 {
		dst := unsafe.Slice((*int32)(unsafe.Pointer(degrees)), int(capacity))
		for i := 0; i < len(ds) && i < len(dst); i++ {
			dst[i] = int32(ds[i])
		}
	}
	if int(capacity) < len(ds) {
		return fail(name, s, argErr("cap: %d is too small for %d layers (%s)", int32(capacity), len(ds), kx.FormatDegrees(ds)))
	}
	return 0
}
