//go:build linux

package shm

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Single copy for large frames, as Open MPI's vader does with CMA (cross-memory attach): the
// writer sends a small frame that says where its data is, and the reader copies the data
// straight out of the writer's memory into its destination with process_vm_readv(2), one copy
// instead of two (into the ring and out of it). The reader releases the frame's last bytes only
// after the copy, so the writer learns that its buffers are free from the ring's head alone
// (AwaitRead), with no message back.
//
// Whether the reader may read the writer's memory (same user, and no Yama or seccomp rule
// against it) is tried once when both have mapped the segment: each side publishes the address
// of a word holding a known value, the other reads it (ProbePeerMemory) and publishes whether
// it could. A writer uses single copy only toward a reader that could (PeerReadsMine).

const cmaMagic uint64 = 0x4b594c4958434d41

// cmaProbe is the word the peer reads to learn whether it may read this process's memory.
var cmaProbe = cmaMagic

// Side-line fields beyond pid and closed (segment.go's layout): the probe word's address and
// whether this side could read the peer's.
const (
	offProbeAddr     = 8
	offReadsPeer     = 16
	offRefsAbandoned = 24
)

// publishProbe writes the probe word's address on this side's line.
func (s *Segment) publishProbe() {
	s.u64(offSide + s.side*line + offProbeAddr).Store(uint64(uintptr(unsafe.Pointer(&cmaProbe))))
}

// ProbePeerMemory tries to read the peer's probe word and publishes the outcome for the peer's
// writer. Call it once the peer has mapped the segment (PeerAttached), before any frame.
func (s *Segment) ProbePeerMemory() bool {
	peer := 1 - s.side
	addr := s.u64(offSide + peer*line + offProbeAddr).Load()
	if addr == 0 || s.PeerPid() == 0 {
		return false
	}
	var v uint64
	if err := s.ReadPeer(unsafe.Slice((*byte)(unsafe.Pointer(&v)), 8), addr); err != nil || v != cmaMagic {
		return false
	}
	s.u32(offSide + s.side*line + offReadsPeer).Store(1)
	return true
}

// PeerReadsMine tells whether the peer could read this process's memory (its ProbePeerMemory).
// A closed segment says no (its mapping is gone).
func (s *Segment) PeerReadsMine() bool {
	if s.enter() != nil {
		return false
	}
	defer s.exit()
	return s.u32(offSide+(1-s.side)*line+offReadsPeer).Load() == 1
}

// ReadPeer copies len(dst) bytes from address addr of the peer's memory. A peer that is gone
// gives *PeerDeadError.
func (s *Segment) ReadPeer(dst []byte, addr uint64) error { return s.peerCopy(dst, addr, false) }

// WritePeer copies src over len(src) bytes at address addr of the peer's memory: a reader that
// folds a single-copy frame writes its result back over the writer's data (netio's write-back).
// The permission is the one ReadPeer needs (ptrace's attach check, both ways the same).
func (s *Segment) WritePeer(src []byte, addr uint64) error { return s.peerCopy(src, addr, true) }

// peerCopy moves b from (write: to) the peer's memory at addr with process_vm_readv(2)
// (process_vm_writev(2)).
func (s *Segment) peerCopy(b []byte, addr uint64, write bool) error {
	if err := s.enter(); err != nil { // the pid lives in the mapping
		return err
	}
	pid := s.PeerPid()
	s.exit()
	var local [1]unix.Iovec
	var remote [1]unix.RemoteIovec
	for len(b) > 0 {
		local[0] = unix.Iovec{Base: &b[0]}
		local[0].SetLen(len(b))
		remote[0] = unix.RemoteIovec{Base: uintptr(addr), Len: len(b)}
		var n int
		var err error
		if write {
			n, err = unix.ProcessVMWritev(pid, local[:], remote[:], 0)
		} else {
			n, err = unix.ProcessVMReadv(pid, local[:], remote[:], 0)
		}
		switch {
		case errors.Is(err, unix.ESRCH):
			return &PeerDeadError{Pid: pid}
		case err == unix.EINTR:
			continue
		case err != nil:
			op := "reading"
			if write {
				op = "writing"
			}
			return fmt.Errorf("shm: %s %d bytes of pid %d at %#x: %w", op, len(b), pid, addr, err)
		case n == 0:
			return fmt.Errorf("shm: pid %d at %#x: nothing copied", pid, addr)
		}
		b = b[n:]
		addr += uint64(n)
	}
	return nil
}

// AbandonRefs records that this side's writer gave up waiting on its first n single-copy
// frames (the peer stayed silent past the timeout): from now on the peer must not write back
// over their data, which the caller owns again.
func (s *Segment) AbandonRefs(n uint64) {
	if s.enter() != nil {
		return // closed: nobody reads the ring any more
	}
	defer s.exit()
	s.u64(offSide + s.side*line + offRefsAbandoned).Store(n)
}

// PeerAbandonedRefs is how many of the peer's single-copy frames it gave up on (AbandonRefs):
// the reader checks it before each write-back. A closed segment has given up on all of them.
func (s *Segment) PeerAbandonedRefs() uint64 {
	if s.enter() != nil {
		return math.MaxUint64
	}
	defer s.exit()
	return s.u64(offSide + (1-s.side)*line + offRefsAbandoned).Load()
}

// FrameEnd is the ring position just past the payload of the last frame written: the reader
// has read all of it once the head reaches it.
func (w *Writer) FrameEnd() uint64 { return w.end }

// AwaitRead waits until the reader has released the ring up to position end: it has read every
// byte written before end (a single-copy frame's data included, see above).
func (w *Writer) AwaitRead(wt Wait, end uint64) error {
	if err := w.s.enter(); err != nil {
		return err
	}
	defer w.s.exit()
	ready := func() bool { return w.head.Load() >= end }
	return w.s.await(&wt, w.wsleep, ready, false)
}
