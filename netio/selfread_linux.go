//go:build linux

package netio

import (
	"io"
	"kylix/core/kx"
	"kylix/netio/mailbox"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Caller-thread reads (docs/measurements.md, "Small steps through the C ABI"). A cgo call into
// Kylix runs on a goroutine locked to the C thread, so a wait that sleeps until a reader
// goroutine has filed its message pays two thread hand-offs per message, a large share of a
// small step's CPU. Here a wait reads its sources' sockets and rings itself: it
// takes their read tokens and, while it spins or yields (driveStep), files their frames through
// the mailbox as the reader goroutine does, until its own message is in. A reader goroutine
// only waits for readiness without the token, so a socket or ring has one reader at a time.
//
// A wait takes the tokens that are free (a reader goroutine in the middle of a frame keeps its
// own) and sleeps as before when none is. It does not while any send of this process runs on a
// goroutine of its own (kx.AsyncSends): with GOMAXPROCS=1 the driving thread keeps the only P,
// and the send would wait for the runtime's monitor to take it back (docs/netio-notes.md,
// "Waits").

// midFrameSlice bounds one poll(2) inside a frame, between looks at whether the transport
// closed or the peer was dropped.
const midFrameSlice = 100 * time.Millisecond

// selfReadOff turns caller-thread reads off (tests of the reader goroutines alone).
var selfReadOff bool

// driveSpin is how long a driving wait spins (looking at its rings and, now and then, its
// sockets) before it sleeps, where this host's ranks fit its CPUs (TCP.spin); a variable for
// tests and measurements.
var driveSpin = 100 * time.Microsecond

// driveQuiet is how long a driving wait spins without offering the CPU, where the host's ranks
// fit its CPUs: a small step's message comes well within it, so the steady state makes no system
// call. Past it the spin offers the CPU every 64 looks (sched_yield, Open MPI's yield_when_idle).
// A host busier than its rank count says (other work on the cores) shows in the yields: one
// that gave the CPU away (it returned late) means the peer may be queued on this very CPU, and
// the waits offer it from their first look at the clock until a yield comes back at once
// (crowdedYield).
var driveQuiet = 5 * time.Microsecond

// crowdedYield is how long a sched_yield takes when another thread ran meanwhile.
const crowdedYield = 2 * time.Microsecond

// driveYield is how long a driving wait yields the CPU between looks before it sleeps where the
// host's ranks outnumber its CPUs (a variable for tests and measurements).
var driveYield = 200 * time.Microsecond

// selfReads is the transport's side of it. One wait drives at a time (mu); the others sleep.
type selfReads struct {
	mu    sync.Mutex
	intr  int        // eventfd, readable once the transport closes (pollSocks, awaitMidFrame); -1 when closed
	held  []heldLink // the links whose read tokens the driving wait holds
	pfds  []unix.PollFd
	socks []*sockLink  // the held sockets, polled now and then
	srcs  []int        // the ranks the driving wait's message may come from
	want  mailbox.Want // the frame a driving Recv waits for

	// The driving wait's window: its looks, when it ends, when the spin starts to yield.
	looks      int
	end, quiet time.Time
	yield      bool
	crowded    bool // the last yield gave the CPU away: offer it at once (driveQuiet)

	// Counters, written by the driving wait only (under mu: kx.AddRelaxed, no locked
	// instruction on the call path), read by anyone.
	spins, spinHits, yields, sleeps atomic.Uint64 // for ShmStats: a spin never happens where it may not
	driven                          atomic.Uint64 // frames filed by waits (tests)
}

// startSelfRead marks the peers whose sockets or rings waits may read (plain TCP peers with
// raw access; links with doorbells).
func (t *TCP) startSelfRead() {
	t.sr.intr = -1
	if selfReadOff {
		return
	}
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return
	}
	any := false
	for _, p := range t.peers {
		if p != nil && p.data.share() {
			any = true
		}
	}
	if !any {
		unix.Close(fd)
		return
	}
	t.sr.intr = fd
}

// interruptSelfRead wakes every poll(2) of a driving wait for good (Close).
func (t *TCP) interruptSelfRead() {
	if t.sr.intr >= 0 {
		one := [8]byte{1}
		unix.Write(t.sr.intr, one[:])
	}
}

// stopSelfRead closes the eventfd once no wait can be driving.
func (t *TCP) stopSelfRead() {
	t.sr.mu.Lock()
	defer t.sr.mu.Unlock()
	if t.sr.intr >= 0 {
		unix.Close(t.sr.intr)
		t.sr.intr = -1
	}
}

// recvDriven is a Recv that reads the links of the ranks its message may come from on the
// waiting thread, while it spins (where the host's ranks fit its CPUs) or yields the CPU between
// looks (where they do not), until the message is there (ok) or the window ends, the transport
// closes or no token could be taken (not ok: the Recv then sleeps as it would otherwise, and the
// reader goroutines take over). The frame it waits for is handed over whole, not filed.
//
// It never sleeps in poll(2) holding the tokens: a wait asleep in poll(2) keeps the only P
// (GOMAXPROCS=1) in a system call while the other peers' reader goroutines wait for the
// runtime's poller to run, and their writers for ring space (docs/netio-notes.md, "Waits"). A
// small step's message comes within the window; a long wait is a hand-off's cost many times
// over anyway.
func (t *TCP) recvDriven(from int, tag kx.Tag) (b []byte, ok bool, err error) {
	if !t.beginDrive(from, tag) {
		return nil, false, nil
	}
	sr := &t.sr
	want := &sr.want
	var hand bool
	if *want, hand = t.mb.WantOf(from, tag); !hand {
		want = nil
		if b, ok, err = t.mb.TryRecv(from, tag); ok { // filed before the tokens were taken
			t.endDrive(true)
			return b, true, err
		}
	}
	for {
		filed, over := t.driveStep(want)
		switch {
		case over:
			t.endDrive(false)
			return nil, false, nil
		case !filed:
			continue
		case want != nil && want.Data != nil:
			data := want.Data
			want.Data = nil
			if t.mb.HandOver(want, data) {
				t.endDrive(true)
				return data, true, nil
			}
		}
		if b, ok, err = t.mb.TryRecv(from, tag); ok {
			t.endDrive(true)
			return b, true, err
		}
	}
}

// awaitDriven is Await as recvDriven is Recv. Its first look (TryAwaitWant) claims the posted
// place when the message has not landed, so that the frame is read into it and landed with one
// lock (LandWant); once another frame was filed first, it looks after each frame as a Recv does.
func (t *TCP) awaitDriven(from int, tag kx.Tag, n int) (got int, ok bool, err error) {
	if !t.beginDrive(from, tag) {
		return 0, false, nil
	}
	want := &t.sr.want
	if got, ok, err = t.mb.TryAwaitWant(from, tag, n, want); ok {
		t.endDrive(true)
		return got, true, err
	}
	if awaitClaimed != nil && want.Claimed() {
		awaitClaimed()
	}
	for {
		var w *mailbox.Want
		if want.Claimed() {
			w = want
		}
		filed, over := t.driveStep(w)
		switch {
		case over:
			t.mb.Unwant(want) // before the tokens go: a reader goroutine lands it as any post
			t.endDrive(false)
			return 0, false, nil
		case !filed:
			continue
		case want.Data != nil:
			got, err = t.mb.LandWant(want)
			t.endDrive(true)
			return got, true, err
		}
		t.mb.Unwant(want)
		if got, ok, err = t.mb.TryAwait(from, tag, n); ok {
			t.endDrive(true)
			return got, true, err
		}
	}
}

// awaitClaimed runs, when set (tests), once a driving Await claimed its place and before it
// reads: a frame sent then is read by the wait itself (TestDrivenAwaitLandsInPlace).
var awaitClaimed func()

// beginDrive takes the driver (one wait drives at a time) and the free read tokens of the data
// links of the ranks the message from `from` with tag may come from. It does not while any send
// of this process runs on a goroutine of its own (kx.AsyncSends).
func (t *TCP) beginDrive(from int, tag kx.Tag) bool {
	sr := &t.sr
	if kx.AsyncSends.Load() > 0 || !sr.mu.TryLock() {
		return false
	}
	sr.srcs = t.mb.Sources(from, tag, sr.srcs)
	if sr.intr < 0 || t.closing.Load() || !t.takeTokens(sr.srcs) {
		sr.mu.Unlock()
		return false
	}
	// Spin where cores allow it, else yield the CPU at every look (Open MPI's
	// yield_when_idle); either for a bounded time, which counts from the first look at the
	// clock (a fast wait reads none).
	sr.looks, sr.end, sr.quiet, sr.yield = 0, time.Time{}, time.Time{}, !t.spin
	if sr.yield {
		kx.AddRelaxed(&sr.yields, 1)
	} else {
		kx.AddRelaxed(&sr.spins, 1)
	}
	return true
}

// endDrive gives the tokens and the driver back; hit says the wait's message came.
func (t *TCP) endDrive(hit bool) {
	sr := &t.sr
	if hit && !sr.yield && sr.looks > 1 {
		kx.AddRelaxed(&sr.spinHits, 1)
	}
	t.releaseTokens()
	sr.mu.Unlock()
}

// driveStep reads one frame from a held link (filed) if one is there; else it spins or yields
// for one look. It reports over once the window ended, the transport closes or no link is left.
func (t *TCP) driveStep(want *mailbox.Want) (filed, over bool) {
	sr := &t.sr
	i := sr.looks
	sr.looks++
	if t.readSome(want) {
		return true, false
	}
	if len(sr.held) == 0 {
		return false, true
	}
	if !sr.yield && i&63 != 63 {
		return false, false
	}
	now := time.Now()
	if sr.end.IsZero() {
		window := driveSpin
		if sr.yield {
			window = driveYield
		}
		sr.end, sr.quiet = now.Add(window), now
		if !sr.crowded {
			sr.quiet = now.Add(driveQuiet)
		}
	}
	if !now.Before(sr.end) {
		kx.AddRelaxed(&sr.sleeps, 1) // the wait sleeps now, as without reading on its thread
		return false, true
	}
	if len(sr.socks) > 0 {
		if n, closing := t.pollSocks(want); closing || n > 0 {
			return n > 0, closing
		}
	}
	switch {
	case sr.yield: // whether the yield gave the CPU away matters only to a spin (crowded)
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	case !now.Before(sr.quiet):
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		sr.crowded = time.Since(now) > crowdedYield
	}
	return false, false
}

// heldLink is a data link whose read token a driving wait holds.
type heldLink struct {
	p *peer
	l link
}

// readSome files one frame from a held link with a frame (or its end) waiting; false when there
// is none. A frame that is want's goes to want.Data instead.
func (t *TCP) readSome(want *mailbox.Want) bool {
	sr := &t.sr
	for _, h := range sr.held {
		if r := h.l.rd(); !r.done && h.l.buffered() {
			r.done = t.readFrame(h.p, h.l, want)
			kx.AddRelaxed(&sr.driven, 1)
			sr.dropDone()
			return true
		}
	}
	return false
}

// pollSocks looks, without waiting, at the held sockets and the close interrupt and reads a
// frame from every socket that is readable (want's to want, as readSome). It reports the frames
// filed and the interrupt.
func (t *TCP) pollSocks(want *mailbox.Want) (filed int, closing bool) {
	sr := &t.sr
	sr.pfds = sr.pfds[:0]
	for _, l := range sr.socks {
		sr.pfds = append(sr.pfds, unix.PollFd{Fd: int32(l.stream.fd), Events: unix.POLLIN})
	}
	sr.pfds = append(sr.pfds, unix.PollFd{Fd: int32(sr.intr), Events: unix.POLLIN})
	n, err := unix.Poll(sr.pfds, 0)
	if err != nil || n <= 0 {
		return 0, false
	}
	if sr.pfds[len(sr.pfds)-1].Revents != 0 {
		return 0, true
	}
	for i, l := range sr.socks {
		if sr.pfds[i].Revents != 0 && !l.done {
			l.done = t.readFrame(l.p, l, want)
			kx.AddRelaxed(&sr.driven, 1)
			filed++
		}
	}
	sr.dropDone()
	return filed, false
}

// takeTokens takes the read tokens of the data links of srcs that are free and switches them to
// reads on this thread; it reports whether it took any.
func (t *TCP) takeTokens(srcs []int) bool {
	sr := &t.sr
	sr.held, sr.socks = sr.held[:0], sr.socks[:0]
	for _, rank := range srcs {
		if rank < 0 || rank >= len(t.peers) || t.peers[rank] == nil {
			continue
		}
		p := t.peers[rank]
		r := p.data.rd()
		if !r.shared || !r.tok.TryLock() {
			continue
		}
		if r.done {
			r.tok.Unlock()
			continue
		}
		p.data.setDirect(true)
		sr.held = append(sr.held, heldLink{p, p.data})
		if l, ok := p.data.(*sockLink); ok {
			sr.socks = append(sr.socks, l)
		}
	}
	return len(sr.held) > 0
}

// releaseTokens gives the tokens back. Whole frames a link already took from the kernel are
// filed first: the reader goroutine learns of bytes only from the kernel, so it would never look
// at them.
func (t *TCP) releaseTokens() {
	sr := &t.sr
	for _, h := range sr.held {
		r := h.l.rd()
		for !r.done && h.l.hidden() {
			r.done = t.readFrame(h.p, h.l, nil)
		}
		h.l.setDirect(false)
		r.tok.Unlock()
	}
	clear(sr.held)
	clear(sr.socks)
	sr.held, sr.socks = sr.held[:0], sr.socks[:0]
}

// dropDone releases the held links that are finished with.
func (sr *selfReads) dropDone() {
	if !sr.anyDone() {
		return // the common case, after every frame filed
	}
	held := sr.held[:0]
	for _, h := range sr.held {
		if r := h.l.rd(); r.done {
			h.l.setDirect(false)
			r.tok.Unlock()
			continue
		}
		held = append(held, h)
	}
	clear(sr.held[len(held):])
	sr.held = held
	socks := sr.socks[:0]
	for _, l := range sr.socks {
		if !l.done {
			socks = append(socks, l)
		}
	}
	clear(sr.socks[len(socks):])
	sr.socks = socks
}

// anyDone tells whether a held link is finished with.
func (sr *selfReads) anyDone() bool {
	for _, h := range sr.held {
		if h.l.rd().done {
			return true
		}
	}
	for _, l := range sr.socks {
		if l.done {
			return true
		}
	}
	return false
}

// pollReadable tells whether fd has bytes (or an end) to read within ms milliseconds.
func pollReadable(fd, ms int) bool {
	pfd := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd[:], ms)
		if err == unix.EINTR {
			continue
		}
		return n > 0
	}
}

// rawRead is a direct read: read(2) under rc.Control (so Close never recycles the fd under
// it), and poll(2) on this thread while the socket is empty, as long as the transport is open
// and the peer not dropped.
func (s *sockStream) rawRead(b []byte) (int, error) {
	for {
		s.buf = b
		cerr := s.rc.Control(s.readFn)
		n, err := s.n, s.err
		s.buf, s.err = nil, nil
		if cerr != nil {
			return 0, cerr
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			if err := s.awaitMidFrame(); err != nil {
				return 0, err
			}
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// readFd is the read(2) of a direct read (rawRead), on rc.Control's fd.
func (s *sockStream) readFd(fd uintptr) { s.n, s.err = unix.Read(int(fd), s.buf) }

// awaitMidFrame sleeps in poll(2) until the socket is readable; it fails when the transport
// closes or the peer was dropped meanwhile.
func (s *sockStream) awaitMidFrame() error {
	t := s.p.t
	pfd := [2]unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}, {Fd: int32(t.sr.intr), Events: unix.POLLIN}}
	for {
		if t.closing.Load() {
			return t.closedErr()
		}
		if err := t.mb.Dead(s.p.rank); err != nil {
			return err
		}
		n, err := unix.Poll(pfd[:], int(midFrameSlice/time.Millisecond))
		if err != nil && err != unix.EINTR {
			return err
		}
		if n > 0 && pfd[0].Revents != 0 {
			return nil
		}
	}
}

// awaitReadable is the reader goroutine's wait, without the token: it parks in the runtime's
// poller until the socket is readable (or closed: the error).
func (s *sockStream) awaitReadable() error {
	return s.rc.Read(func(fd uintptr) bool { return pollReadable(int(fd), 0) })
}

// readable tells whether a read would find bytes now; the caller holds the token.
func (s *sockStream) readable() bool { return s.p.sock.br.Buffered() > 0 || pollReadable(s.fd, 0) }
