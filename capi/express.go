package main

/*
#include <stdlib.h>
#include "express.h"
*/
import "C"

import (
	"kylix/core"
	"kylix/core/kx"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// The express allreduce (express.c, core/express.go): after a kylix_allreduce that ran in Go
// over the lanes, the comm's small allreduce is lent to C (arm), which runs the next ones
// without entering Go; any call on the comm that enters Go takes it back first (disarm, in the
// handle lookups), so Go never runs beside it and its counts are in every snapshot.

// patience: a wait in C hands the call to Go after this long, whose waits then go on with
// their spins, yields, sleeps and checks for failures (a late peer, a dead one).
const patience = 10 * time.Microsecond

// express is a comm's express state: the C struct (C memory, read by C without Go) and the
// loan it holds while lent.
type express struct {
	x    *C.kx_express
	loan core.Express
	lent bool
}

func stateOf(x *C.kx_express) *uint32 { return (*uint32)(unsafe.Pointer(&x.state)) }

// arm lends the comm's express allreduce to C where the comm can lend it.
func (ce *commEntry) arm() {
	e := &ce.ex
	if e.lent || ce.debug() || ce.c.Size() > C.KX_EXPRESS_NODES || !e.loan.Lend(ce.c) {
		return // (a comm that logs every call at debug level keeps its calls in Go)
	}
	if e.x == nil {
		e.x = (*C.kx_express)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kx_express{}))))
		if e.x == nil {
			e.loan.Return(ce.c)
			return
		}
		C.kx_express_publish(C.uintptr_t(ce.id), e.x)
	}
	x, l := e.x, &e.loan
	x.nodes, x.node, x.max = C.int32_t(l.Nodes), C.int32_t(l.Node), C.int32_t(min(l.Max, C.KX_EXPRESS_BYTES))
	x.spin = 0
	if l.Lanes[(l.Node+1)%l.Nodes].Spin {
		x.spin = 1
	}
	x.tsc, x.patience = 0, C.int64_t(patience)
	if ticks, ok := kx.TicksIn(int64(patience)); ok {
		x.tsc, x.patience = 1, C.int64_t(ticks)
	}
	x.kind = C.uint64_t(kx.KindAllreduce)
	x.seq, x.put_for, x.calls, x.time = C.uint64_t(l.Seq), 0, 0, 0
	for i := range l.Lanes {
		if i != l.Node {
			toC(&x.lane[i], &l.Lanes[i])
		}
	}
	e.lent = true
	atomic.StoreUint32(stateOf(x), C.KX_ARMED)
}

// disarm takes the comm's express allreduce back from C, with what C did meanwhile.
func (ce *commEntry) disarm() {
	e := &ce.ex
	if !e.lent {
		return
	}
	x := e.x
	for !atomic.CompareAndSwapUint32(stateOf(x), C.KX_ARMED, C.KX_GO) {
		// a call in C on another thread (include/kylix.h forbids it): it ends within its patience
		runtime.Gosched()
	}
	l := &e.loan
	l.Seq, l.PutFor, l.Calls = uint64(x.seq), uint64(x.put_for), uint64(x.calls)
	l.Time = time.Duration(x.time)
	if x.tsc != 0 {
		ns, _ := kx.TickNanos(int64(x.time))
		l.Time = time.Duration(ns)
	}
	for i := range l.Lanes {
		if i != l.Node {
			fromC(&l.Lanes[i], &x.lane[i])
		}
	}
	l.Return(ce.c)
	e.lent = false
}

// dropExpress ends the comm's express state: it is disarmed, and C no longer finds it.
func (ce *commEntry) dropExpress() {
	ce.disarm()
	if x := ce.ex.x; x != nil {
		C.kx_express_publish(C.uintptr_t(ce.id), nil)
		ce.ex.x = nil
		C.free(unsafe.Pointer(x))
	}
}

func toC(c *C.kx_lane, l *kx.LaneLoan) {
	for i := range 2 {
		c.put[i], c.look[i], c.seq[i] = C.uintptr_t(l.Put[i]), C.uintptr_t(l.Look[i]), C.uint64_t(l.Seq[i])
	}
	c.ack, c.peer_ack, c.peer_sleep = C.uintptr_t(l.AckWord), C.uintptr_t(l.PeerAckWord), C.uintptr_t(l.PeerSleepWord)
	c.peer_acked, c.acked = C.uint64_t(l.PeerAcked), C.uint64_t(l.Acked)
	c.sent, c.read, c.bytes_sent, c.bytes_read, c.wakes = 0, 0, 0, 0, 0
}

func fromC(l *kx.LaneLoan, c *C.kx_lane) {
	l.Seq = [2]uint64{uint64(c.seq[0]), uint64(c.seq[1])}
	l.PeerAcked, l.Acked = uint64(c.peer_acked), uint64(c.acked)
	l.Sent, l.Read, l.BytesSent, l.BytesRead, l.Wakes = uint64(c.sent), uint64(c.read), uint64(c.bytes_sent), uint64(c.bytes_read), uint64(c.wakes)
}
