//go:build linux

// Package shm is a shared-memory byte transport between two processes of one host: one
// segment per pair of processes, holding two single-producer single-consumer rings (one per
// direction) of frames, each opened by a check word and its length (ring.go).
//
// The shape follows Open MPI's vader FIFOs, NCCL's shm transport, Aeron IPC and the LMAX
// ring: one writer per ring, head and tail on cache lines of their own, a bounded spin then
// a futex sleep, and a wake only when the other side said it sleeps, so a busy stream costs
// no syscall per message. The segment is an anonymous memfd handed to the peer over a unix
// socket (SendFDs/RecvFDs), so nothing is left behind after a kill -9 of either side; it is
// sealed against shrinking, so a peer cannot make our mapping fault.
//
// With doorbells (AddDoorbells/UseDoorbells: four eventfds sent along with the memfd) a sleep
// parks the goroutine in the runtime's poller instead of holding a thread in futex(2); Go
// callers that hand frames to other goroutines want them (doorbell.go says why).
//
// A sleeping wait wakes every Options.Poll to check the peer's pid (pidfd) and the caller's
// abort channel: a peer killed mid-frame is reported as *PeerDeadError within about Poll.
//
// Use, once per pair of ranks of one host, in the handshake over a unix socket:
//
//	creator:  s, err := shm.Create(1<<18, shm.Options{Spin: spin}) // spin only if cpus.SpinAllowed
//	          err = shm.SendFDs(uc, s.Fd()); s.CloseFD()
//	attacher: fds, err := shm.RecvFDs(uc, 1); s, err := shm.Open(fds[0], opt); then an ack
//	creator:  reads the ack: the peer's pid is now in the segment (PeerAttached), so its
//	          death is seen; before that only the handshake's deadline covers it
//	send:     s.Writer().WriteFrame(shm.Wait{Deadline: d, Abort: stop}, hdr, payload)
//	receive:  n, err := r.Next(w); r.ReadFull(w, hdrBuf); r.ReadFull(w, dst) // dst: in place
//
// errors.Is(err, ErrPeerDead) maps to "PEER: rank N died" (the transport knows N);
// ErrPeerClosed and io.EOF to an orderly close; ErrTimeout and ErrAborted to the call's
// own bounds. A stopped (SIGSTOP) peer is alive: the transport's liveness (heartbeats,
// liveness_ms) ends such a wait through Abort and Interrupt.
//
// A blocked wait holds its OS thread in futex(2) (the runtime starts another for the P).
//
// Endpoints: one goroutine at a time per Writer and per Reader; the Writer and the Reader of
// a segment may be used concurrently. Close may be called from any goroutine at any time:
// calls in flight return ErrClosed and the mapping goes away when the last one leaves.
package shm

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Segment layout. All offsets are fixed for a version; the data areas start page-aligned.
const (
	magic   = 0x314d48535849594b // "KYIXSHM1", little-endian
	version = 3                  // 3: lanes in the header page (lane.go)

	// line is two cache lines: x86's adjacent-line prefetcher moves 128-byte pairs, so a
	// field written by one side must not share 128 bytes with one written by the other.
	line = 128

	offMagic   = 0
	offVersion = 8
	offRingLog = 12
	offKey     = 16 // the rings' check key (ring.go), drawn by the creator

	// side s (0 creator, 1 attacher) at offSide + s*line: pid int32, closed uint32, then the
	// single-copy probe's fields (cma.go).
	offSide = 2 * line
	// ring r (written by side r) at offRing + r*ringHdr: tail, head, reader's sleep word,
	// writer's sleep word, each on its own line.
	offRing   = 4 * line
	ringHdr   = 4 * line
	offTail   = 0
	offHead   = line
	offRSleep = 2 * line
	offWSleep = 3 * line

	hdrSize = 4096

	// MinRing and MaxRing bound a ring's data area (a power of two).
	MinRing = 4096
	MaxRing = 1 << 30
	// MaxFrame bounds one frame's length; a larger prefix means a corrupted segment.
	MaxFrame = 1 << 46
)

// Options tune waiting; the zero value never spins and polls every 20 ms.
type Options struct {
	// Spin is how long a wait spins before it sleeps; 0 never spins. Spin only when this
	// host's ranks fit its usable CPUs (cpus.SpinAllowed): an oversubscribed host must not
	// burn a core that the peer needs in order to make progress.
	Spin time.Duration
	// Poll is how often a sleeping wait wakes to check the peer's pid and the abort
	// channel: the bound on noticing a dead peer. 0 means 20 ms.
	Poll time.Duration
}

const defaultPoll = 20 * time.Millisecond

// Wait bounds one blocking call.
type Wait struct {
	Deadline time.Time // zero: no deadline (unless Timeout); else ErrTimeout once it passes
	// Timeout, with a zero Deadline, sets it to this long after the wait first has to wait: a
	// call that finds its room or frame at once reads no clock.
	Timeout time.Duration
	Abort   <-chan struct{} // closed: ErrAborted (promptly after Segment.Interrupt); nil: never
}

// Segment is this process's mapping of a two-ring segment.
type Segment struct {
	mem      []byte
	fd       int // creator's memfd until CloseFD; -1 otherwise
	side     int
	ringSize int
	spin     time.Duration
	poll     time.Duration

	w Writer
	r Reader

	// state: count of calls in flight, plus closingBit once Close began.
	state     atomic.Int64
	unmapOnce sync.Once

	stats struct{ spins, spinHits, sleeps, wakes atomic.Uint64 }

	bells   map[*atomic.Uint32]*bell // nil: futex sleeps (doorbell.go)
	watcher *bellWatcher             // shared reading: AwaitFrame's view of the read doorbell (shared.go)

	peerMu    sync.Mutex
	peerPid   int
	peerPidfd int // -1: not opened yet; -2: pidfd unavailable, fall back to kill(0)
	peerDead  bool
}

const closingBit = 1 << 62

// Create makes a segment with two rings of ringSize bytes each (a power of two in
// [MinRing, MaxRing]). Send Fd() to the peer (SendFDs), which calls Open; then CloseFD.
func Create(ringSize int, opt Options) (*Segment, error) {
	if ringSize < MinRing || ringSize > MaxRing || ringSize&(ringSize-1) != 0 {
		return nil, fmt.Errorf("shm: ring size %d is not a power of two in [%d, %d]", ringSize, MinRing, MaxRing)
	}
	fd, err := unix.MemfdCreate("kylix-shm", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("shm: memfd_create: %w", err)
	}
	total := hdrSize + 2*ringSize
	if err := unix.Ftruncate(fd, int64(total)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: ftruncate: %w", err)
	}
	// Sealed so that neither side can shrink the file under the other's mapping (SIGBUS).
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: seal: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, total, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: mmap: %w", err)
	}
	log := 0
	for 1<<log < ringSize {
		log++
	}
	*(*uint64)(unsafe.Pointer(&mem[offMagic])) = magic
	*(*uint32)(unsafe.Pointer(&mem[offVersion])) = version
	*(*uint32)(unsafe.Pointer(&mem[offRingLog])) = uint32(log)
	*(*uint64)(unsafe.Pointer(&mem[offKey])) = rand.Uint64()
	s := newSegment(mem, fd, 0, ringSize, opt)
	s.sidePid(0).Store(int32(unix.Getpid()))
	s.publishProbe()
	return s, nil
}

// Open maps a segment received from its creator and takes ownership of fd (closed here,
// also on error: the mapping is all that is needed).
func Open(fd int, opt Options) (*Segment, error) {
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("shm: fstat: %w", err)
	}
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil || seals&unix.F_SEAL_SHRINK == 0 {
		return nil, fmt.Errorf("%w: not a sealed memfd", ErrBadSegment)
	}
	if st.Size < hdrSize+2*MinRing || st.Size > hdrSize+2*MaxRing {
		return nil, fmt.Errorf("%w: size %d", ErrBadSegment, st.Size)
	}
	mem, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm: mmap: %w", err)
	}
	m := *(*uint64)(unsafe.Pointer(&mem[offMagic]))
	v := *(*uint32)(unsafe.Pointer(&mem[offVersion]))
	log := *(*uint32)(unsafe.Pointer(&mem[offRingLog]))
	ringSize := 1 << (log & 63)
	if m != magic || v != version || ringSize < MinRing || ringSize > MaxRing || int64(hdrSize+2*ringSize) != st.Size {
		unix.Munmap(mem)
		return nil, fmt.Errorf("%w: magic %#x version %d ring 2^%d size %d", ErrBadSegment, m, v, log, st.Size)
	}
	s := newSegment(mem, -1, 1, ringSize, opt)
	if !s.sidePid(1).CompareAndSwap(0, int32(unix.Getpid())) {
		other := s.sidePid(1).Load()
		unix.Munmap(mem)
		return nil, fmt.Errorf("%w: already opened by pid %d", ErrBadSegment, other)
	}
	s.publishProbe()
	// The creator's pid is known now: pin it with a pidfd at once, so that a reused pid
	// cannot pass for the creator later.
	s.peerGone()
	return s, nil
}

func newSegment(mem []byte, fd, side, ringSize int, opt Options) *Segment {
	s := &Segment{mem: mem, fd: fd, side: side, ringSize: ringSize, spin: opt.Spin, poll: opt.Poll, peerPidfd: -1}
	if s.poll <= 0 {
		s.poll = defaultPoll
	}
	s.w.init(s, side)
	s.r.init(s, 1-side)
	return s
}

// Fd is the creator's memfd to send to the peer, or -1 (attacher, or after CloseFD).
func (s *Segment) Fd() int { return s.fd }

// CloseFD drops the creator's fd once it is sent: the mapping and the fd in flight keep the
// memory, and once both sides are gone nothing of it remains.
func (s *Segment) CloseFD() {
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
}

// Writer is this side's sending end; Reader its receiving end.
func (s *Segment) Writer() *Writer { return &s.w }
func (s *Segment) Reader() *Reader { return &s.r }

// SetSpin changes the spin bound (e.g. when ranks join the host); not concurrently with calls.
func (s *Segment) SetSpin(d time.Duration) { s.spin = d }

// PeerPid is the pid the peer wrote in the segment, 0 while it has not opened it.
func (s *Segment) PeerPid() int { return int(s.sidePid(1 - s.side).Load()) }

// PeerAttached reports whether the peer has opened the segment (the creator may then be
// sure the fd reached it and that Close of the fd loses nothing).
func (s *Segment) PeerAttached() bool { return s.PeerPid() != 0 }

// Stats counts the slow paths of this side's waits; a wait that finds its data at once
// counts nowhere. The transport can show from them that an oversubscribed host never
// spins (Spins stays 0), without a timing.
type Stats struct {
	Spins     uint64 // waits that spun
	SpinHits  uint64 // of those, satisfied while spinning
	Sleeps    uint64 // futex sleeps (a wait may sleep more than once)
	WakesSent uint64 // futex wakes sent to a peer that announced it sleeps
}

// Stats may be called from any goroutine, also after Close.
func (s *Segment) Stats() Stats {
	return Stats{s.stats.spins.Load(), s.stats.spinHits.Load(), s.stats.sleeps.Load(), s.stats.wakes.Load()}
}

// Interrupt wakes this process's sleeping waits on the segment so that they look at their
// abort channels now rather than at the next poll.
func (s *Segment) Interrupt() {
	if s.enter() != nil {
		return
	}
	defer s.exit()
	for _, w := range []*atomic.Uint32{s.r.rsleep, s.w.wsleep} {
		if w.CompareAndSwap(1, 0) {
			s.ring(w)
		}
	}
}

// Close marks this side closed (the peer drains what was sent, then sees io.EOF or
// ErrPeerClosed), wakes every waiter of both sides and unmaps once no call is in flight.
func (s *Segment) Close() error {
	if s.enter() != nil {
		return nil
	}
	s.sideClosed(s.side).Store(1)
	// closingBit before the wakes: a local waiter woken by them must see it, or it sleeps
	// again. Our own count keeps the mapping until the wakes are done.
	s.state.Or(closingBit)
	for r := 0; r < 2; r++ {
		base := offRing + r*ringHdr
		s.ring(s.u32(base + offRSleep))
		s.ring(s.u32(base + offWSleep))
	}
	s.exit()
	return nil
}

// enter counts a call in flight, so that Close never unmaps under it.
func (s *Segment) enter() error {
	if s.state.Add(1)&closingBit != 0 {
		s.exit()
		return ErrClosed
	}
	return nil
}

func (s *Segment) exit() {
	if s.state.Add(-1) == closingBit {
		s.unmapOnce.Do(s.release)
	}
}

func (s *Segment) closing() bool { return s.state.Load()&closingBit != 0 }

func (s *Segment) release() {
	unix.Munmap(s.mem)
	s.CloseFD()
	s.closeBells()
	s.peerMu.Lock()
	if s.peerPidfd >= 0 {
		unix.Close(s.peerPidfd)
	}
	s.peerPidfd = -1
	s.peerMu.Unlock()
}

func (s *Segment) u32(off int) *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(&s.mem[off])) }
func (s *Segment) u64(off int) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&s.mem[off])) }
func (s *Segment) sidePid(side int) *atomic.Int32 {
	return (*atomic.Int32)(unsafe.Pointer(&s.mem[offSide+side*line]))
}
func (s *Segment) sideClosed(side int) *atomic.Uint32 { return s.u32(offSide + side*line + 4) }

// peerGone reports whether the peer process no longer exists. A pidfd refers to one
// process, not to a pid number, so a pid reused after the peer died is not mistaken for
// it, and an exited but unreaped peer (a zombie child) counts as gone.
func (s *Segment) peerGone() (pid int, gone bool) {
	s.peerMu.Lock()
	defer s.peerMu.Unlock()
	if s.peerDead {
		return s.peerPid, true
	}
	if s.peerPidfd == -1 {
		pid := int(s.sidePid(1 - s.side).Load())
		if pid == 0 {
			return 0, false // not attached yet: only the caller's deadline bounds this
		}
		s.peerPid = pid
		fd, err := unix.PidfdOpen(pid, 0)
		switch {
		case err == nil:
			s.peerPidfd = fd
		case err == unix.ESRCH:
			s.peerDead = true
			return pid, true
		default:
			s.peerPidfd = -2
		}
	}
	if s.peerPidfd >= 0 {
		fds := []unix.PollFd{{Fd: int32(s.peerPidfd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 0); err == nil && n > 0 {
			s.peerDead = true
		}
	} else {
		s.peerDead = !pidAlive(s.peerPid)
	}
	return s.peerPid, s.peerDead
}

// PinPeer pins the attached peer's process with a pidfd now, as Open does for the creator, and
// reports whether it is already gone. The creator calls it once the peer attached: otherwise
// its first wait that sleeps a whole poll opens the pidfd, so a reused pid could pass for a
// dead peer until then, and the process holds a descriptor more per same-host peer long after
// the set-up, which looks like a leak.
func (s *Segment) PinPeer() (gone bool) {
	if s.enter() != nil {
		return true
	}
	defer s.exit()
	_, gone = s.peerGone()
	return gone
}

// Supported reports whether shared-memory rings work on this platform.
const Supported = true
