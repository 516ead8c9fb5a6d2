//go:build linux

package shm

import (
	"errors"
	"fmt"
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
	offProbeAddr = 8
	offReadsPeer = 16
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
func (s *Segment) PeerReadsMine() bool {
	return s.u32(offSide+(1-s.side)*line+offReadsPeer).Load() == 1
}

// ReadPeer copies len(dst) bytes from address addr of the peer's memory. A peer that is gone
// gives *PeerDeadError.
func (s *Segment) ReadPeer(dst []byte, addr uint64) error {
	pid := s.PeerPid()
	for len(dst) > 0 {
		local := []unix.Iovec{{Base: &dst[0]}}
		local[0].SetLen(len(dst))
		remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(dst)}}
		n, err := unix.ProcessVMReadv(pid, local, remote, 0)
		switch {
		case errors.Is(err, unix.ESRCH):
			return &PeerDeadError{Pid: pid}
		case err == unix.EINTR:
			continue
		case err != nil:
			return fmt.Errorf("shm: reading %d bytes of pid %d at %#x: %w", len(dst), pid, addr, err)
		case n == 0:
			return fmt.Errorf("shm: reading pid %d at %#x: nothing copied", pid, addr)
		}
		dst = dst[n:]
		addr += uint64(n)
	}
	return nil
}

// Pos is the ring position just past everything written so far (the tail once published).
func (w *Writer) Pos() uint64 { return w.pos }

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
