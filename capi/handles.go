package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"kylix/core/kx"
	"maps"
	"sync"
	"sync/atomic"
	"unsafe"

	"kylix/core"
)

// Handles given to C are ids, never Go pointers (cgo forbids C keeping Go pointers, and a
// stale pointer would be a use-after-free). Ids are never reused, so a call on a finalized comm
// or a freed plan finds nothing and fails cleanly with KYLIX_ERR_STATE.
//
// A comm handle is its id (1, 2, ...). A plan handle is commID<<32 | n with n counting the
// plans of that comm from 1: a call on a freed plan still knows which comm to report to.

const planShift = 32

type commEntry struct {
	id       uint64
	c        *core.Comm
	plans    map[uint32]*planEntry // guarded by tab.mu
	nextPlan uint32                // guarded by tab.mu; 0 is never a plan
	logLevel int
	// errmsg is the C copy of the last failure's message, returned by kylix_errmsg(c). Only the
	// thread using the comm touches it (include/kylix.h: one thread per comm at a time).
	errmsg *C.char
	// sink is where the call on the comm running now reports its failure (useSink).
	sink sink
	// ex is the comm's express allreduce, lent to C between calls (express.go)
	ex express
}

// useSink makes the comm's sink the running call's, reporting into buf (cap bytes) too.
func (ce *commEntry) useSink(buf *C.char, size C.size_t) *sink {
	ce.sink = sink{ce: ce, buf: buf, size: size}
	return &ce.sink
}

type planEntry struct {
	h         uint64
	ce        *commEntry
	p         *core.Plan
	nOut, nIn int64
}

var tab = struct {
	mu    sync.Mutex
	comms map[uint64]*commEntry
	next  uint64 // the next comm id; every id below it was handed out once
	// live is a copy of comms, replaced whole when a comm comes or goes: every call on a comm
	// looks it up, and reads it without the lock.
	live atomic.Pointer[map[uint64]*commEntry]
}{comms: map[uint64]*commEntry{}, next: 1}

// publishComms replaces tab.live by a copy of tab.comms; the caller holds tab.mu.
func publishComms() {
	live := maps.Clone(tab.comms)
	tab.live.Store(&live)
}

func addComm(c *core.Comm, logLevel int) (*commEntry, error) {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	if tab.next >= 1<<31 {
		return nil, kx.Errorf(kx.CodeNoMem, "too many comms created in this process")
	}
	ce := &commEntry{id: tab.next, c: c, plans: map[uint32]*planEntry{}, nextPlan: 1, logLevel: logLevel}
	tab.next++
	tab.comms[ce.id] = ce
	publishComms()
	return ce, nil
}

// lookupComm finds a live comm; arg names the C argument for the message.
func lookupComm(h uint64, arg string) (*commEntry, error) {
	if h == 0 {
		return nil, kx.Errorf(kx.CodeArg, "%s is NULL", arg)
	}
	if live := tab.live.Load(); live != nil {
		if ce := (*live)[h]; ce != nil {
			ce.disarm() // Go runs nothing on a comm while C may
			return ce, nil
		}
	}
	tab.mu.Lock()
	defer tab.mu.Unlock()
	if ce := tab.comms[h]; ce != nil {
		ce.disarm()
		return ce, nil
	}
	if h < tab.next {
		return nil, kx.Errorf(kx.CodeState, "%s: comm was finalized", arg)
	}
	return nil, kx.Errorf(kx.CodeArg, "%s (%#x) is not a kylix_comm handle", arg, h)
}

// removeComm takes the comm and its plans out of the table; it returns the plans so the caller
// can free them outside the lock.
func removeComm(ce *commEntry) []*planEntry {
	ce.dropExpress()
	tab.mu.Lock()
	defer tab.mu.Unlock()
	delete(tab.comms, ce.id)
	publishComms()
	ps := make([]*planEntry, 0, len(ce.plans))
	for _, pe := range ce.plans {
		ps = append(ps, pe)
	}
	ce.plans = nil
	return ps
}

func addPlan(ce *commEntry, p *core.Plan, nOut, nIn int64) (uint64, error) {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	if ce.plans == nil {
		return 0, kx.Errorf(kx.CodeState, "comm was finalized")
	}
	if ce.nextPlan == 1<<32-1 {
		return 0, kx.Errorf(kx.CodeNoMem, "too many plans created on this comm")
	}
	n := ce.nextPlan
	ce.nextPlan++
	pe := &planEntry{h: ce.id<<planShift | uint64(n), ce: ce, p: p, nOut: nOut, nIn: nIn}
	ce.plans[n] = pe
	return pe.h, nil
}

// lookupPlan finds a live plan. When it fails, ce is the plan's comm if that comm still lives
// (so the message can go to kylix_errmsg(comm)), else nil.
func lookupPlan(h uint64, arg string) (pe *planEntry, ce *commEntry, err error) {
	if h == 0 {
		return nil, nil, kx.Errorf(kx.CodeArg, "%s is NULL", arg)
	}
	cid, n := h>>planShift, uint32(h)
	tab.mu.Lock()
	defer tab.mu.Unlock()
	if cid == 0 || cid >= tab.next || n == 0 {
		return nil, nil, kx.Errorf(kx.CodeArg, "%s (%#x) is not a kylix_plan handle", arg, h)
	}
	ce = tab.comms[cid]
	if ce == nil {
		return nil, nil, kx.Errorf(kx.CodeState, "%s: plan was freed (kylix_finalize of its comm frees its plans)", arg)
	}
	if n >= ce.nextPlan {
		return nil, ce, kx.Errorf(kx.CodeArg, "%s (%#x) is not a kylix_plan handle", arg, h)
	}
	ce.disarm()
	if pe = ce.plans[n]; pe == nil {
		return nil, ce, kx.Errorf(kx.CodeState, "%s: plan was freed", arg)
	}
	return pe, ce, nil
}

func removePlan(pe *planEntry) {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	if pe.ce.plans != nil {
		delete(pe.ce.plans, uint32(pe.h))
	}
}

// ---- requests ------------------------------------------------------------------------------

// A request handle is reqBit | n, n counting the requests of the process from 1, never reused.
// Bit 63 keeps the space apart from comm ids and plan handles (commID<<32|n, commID < 2^31).
// A request leaves the table exactly once: when kylix_wait takes it, when kylix_test sees it
// done, or when kylix_finalize of its comm drops it. A handle below the counter that is not in
// the table was freed: KYLIX_ERR_STATE, never a second free.
const reqBit = 1 << 63

type reqEntry struct {
	h    uint64
	ce   *commEntry
	r    *core.Request
	name string // the call that started it, for messages
}

var reqs = struct {
	mu   sync.Mutex
	live map[uint64]*reqEntry
	next uint64
}{live: map[uint64]*reqEntry{}, next: 1}

func addRequest(ce *commEntry, r *core.Request, name string) uint64 {
	reqs.mu.Lock()
	defer reqs.mu.Unlock()
	re := &reqEntry{h: reqBit | reqs.next, ce: ce, r: r, name: name}
	reqs.next++
	reqs.live[re.h] = re
	return re.h
}

// lookupRequest finds a live request; with take it also removes it from the table, so that
// only this caller completes it.
func lookupRequest(h uint64, arg string, take bool) (*reqEntry, error) {
	if h == 0 {
		return nil, kx.Errorf(kx.CodeArg, "%s is NULL", arg)
	}
	reqs.mu.Lock()
	defer reqs.mu.Unlock()
	if re := reqs.live[h]; re != nil {
		re.ce.disarm()
		if take {
			delete(reqs.live, h)
		}
		return re, nil
	}
	if h&reqBit != 0 && h&^reqBit != 0 && h&^reqBit < reqs.next {
		return nil, kx.Errorf(kx.CodeState, "%s: request was already completed and freed (by kylix_wait, by kylix_test reporting done, or by kylix_finalize of its comm)", arg)
	}
	return nil, kx.Errorf(kx.CodeArg, "%s (%#x) is not a kylix_request handle", arg, h)
}

// removeRequest takes re out of the table; false if someone else already did.
func removeRequest(re *reqEntry) bool {
	reqs.mu.Lock()
	defer reqs.mu.Unlock()
	if reqs.live[re.h] != re {
		return false
	}
	delete(reqs.live, re.h)
	return true
}

// removeCommRequests drops the requests of a finalized comm (Comm.Close has finished them).
func removeCommRequests(ce *commEntry) {
	reqs.mu.Lock()
	defer reqs.mu.Unlock()
	for h, re := range reqs.live {
		if re.ce == ce {
			delete(reqs.live, h)
		}
	}
}

// ---- messages ----------------------------------------------------------------------------

// sink is where a call's failure message goes: the comm's errmsg when there is a live comm,
// otherwise the thread-local buffer the shim passed (kylix_errmsg(NULL)).
type sink struct {
	ce   *commEntry
	buf  *C.char
	size C.size_t
}

func (s sink) set(msg string) {
	if s.ce != nil {
		old := s.ce.errmsg
		s.ce.errmsg = C.CString(msg)
		if old != nil {
			C.free(unsafe.Pointer(old))
		}
		return
	}
	putC(s.buf, s.size, msg)
}

// putC copies msg into a C buffer of size bytes, NUL-terminated, cut at a rune boundary.
func putC(buf *C.char, size C.size_t, msg string) {
	if buf == nil || size == 0 {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(size))
	n := len(msg)
	if n > len(b)-1 {
		n = len(b) - 1
		for n > 0 && msg[n]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			n--
		}
	}
	copy(b, msg[:n])
	b[n] = 0
}

// ---- logging -----------------------------------------------------------------------------

// The log levels and line format are core's (core/kx/logging.go).
const (
	logOff   = kx.LogOff
	logError = kx.LogError
	logWarn  = kx.LogWarn
	logInfo  = kx.LogInfo
	logDebug = kx.LogDebug
)

func parseLogLevel(s string) int { return kx.ParseLogLevel(s) }

// logf prints one line to stderr, prefixed with the time and the rank, when the comm's level
// allows.
func logf(level, cur, rank int, format string, args ...any) {
	kx.Logf(level, cur, rank, format, args...)
}
