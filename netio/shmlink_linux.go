//go:build linux

package netio

import (
	"errors"
	"io"
	"kylix/core/kx"
	"kylix/netio/lanes"
	"kylix/netio/mailbox"
	"kylix/netio/shm"
	"sync"
	"sync/atomic"
	"time"
)

// Shared memory between two ranks of one host (shm=auto, negotiated by netio/mesh after the
// handshake). Data, abort and bye frames then go through the ring (header and payload as one
// ring frame, written from the caller's buffers): the ring is the peer's data link (link.go),
// read and filed as a socket is, its payloads read through ringPayload.

// shmSpin is how long a wait on a ring spins before it sleeps, where cores allow it (a
// variable for tests). Zero: each rank's ring reader hands its frames to another goroutine, so
// a rank needs two threads and a spinning reader starves the very goroutine it waits for
// (docs/netio-notes.md, "Waits"); the waiting thread spins instead (selfread_linux.go).
var shmSpin time.Duration

// ringLink is a pair's segment as the transport holds it: the peer's data link.
type ringLink struct {
	linkRead
	p       *peer
	seg     *shm.Segment
	tcpGone chan struct{} // closed when the TCP reader ended without a bye: the ring reader stops once it drained
	gone    sync.Once

	// guarded by the peer's write lock
	hdr [HeaderSize]byte

	// The read side, guarded by the read token.
	pl     *ringPayload // the current frame's payload as a mailbox.Payload
	rdesc  []byte       // a reference frame's list as read (shmref_linux.go)
	refs   []memRef     // ... parsed
	ref    refPayload   // ... as the mailbox reads it
	refsIn uint64       // reference frames read so far (their number, for write-back)
	// For the stats: reference frames read, and bytes written back (refPayload.WriteBack).
	refsRead, wroteBack atomic.Uint64

	desc     []byte        // the reference list being written; guarded by the peer's write lock
	refsSent atomic.Uint64 // frames sent by reference (tests)
}

func newRingLink(p *peer, seg *shm.Segment) *ringLink {
	l := &ringLink{p: p, seg: seg, tcpGone: make(chan struct{})}
	l.pl = &ringPayload{r: seg.Reader(), w: shm.Wait{Abort: l.tcpGone}}
	return l
}

func (l *ringLink) rd() *linkRead     { return &l.linkRead }
func (l *ringLink) close()            { l.seg.Close() }
func (l *ringLink) kind() string      { return "shared-memory ring" }
func (l *ringLink) closeWrite()       {} // a frame cut short already leaves the ring unusable
func (l *ringLink) hidden() bool      { return false }
func (l *ringLink) setDirect(on bool) { l.seg.Reader().Direct(on) }
func (l *ringLink) pending() bool     { return l.seg.Reader().Ready() }
func (l *ringLink) awaitFrame() error { return l.seg.AwaitFrame(l.pl.w) }
func (l *ringLink) share() bool       { l.shared = l.seg.SetShared() == nil; return l.shared }

// buffered is pending, or the TCP connection's end, which the next read reports once the ring
// is drained.
func (l *ringLink) buffered() bool { return l.pending() || l.tcpEnded() }

func (l *ringLink) next(hb []byte) (mailbox.Payload, int, error) {
	n, err := l.seg.Reader().NextInto(l.pl.w, hb[:HeaderSize])
	if err != nil {
		return nil, 0, err
	}
	if n < HeaderSize {
		l.p.down(kx.Errorf(kx.CodeNet, "rank %d sent a ring frame of %d bytes", kx.RankRef(l.p.rank), n))
		return nil, 0, errDropped
	}
	return l.pl, n - HeaderSize, nil
}

func (l *ringLink) ended(err error) string {
	switch {
	case errors.Is(err, shm.ErrPeerDead):
		return "its process died (its shared-memory ring was abandoned)"
	case errors.Is(err, shm.ErrAborted):
		return "connection closed without a bye (process died?)"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, shm.ErrPeerClosed):
		return "shared memory closed without a bye (process died?)"
	}
	return err.Error()
}

// setSpin sets every link's spin once the mesh is up (before any call on the segments).
func setSpin(links []*ringLink, spin bool) {
	var d time.Duration
	if spin {
		d = shmSpin
	}
	for _, l := range links {
		if l != nil {
			l.seg.SetSpin(d)
		}
	}
}

// write writes one frame through the ring; the caller holds the write lock. hard bounds the
// whole frame, or (zero) the transport's timeout from when it first waits for room (a peer that
// stops reading is declared dead by liveness first).
func (l *ringLink) write(h Header, bufs [][]byte, hard time.Time) error {
	EncodeHeader(l.hdr[:], &h)
	err := l.seg.Writer().WriteFrameHead(shm.Wait{Deadline: hard, Timeout: l.p.t.timeout}, l.hdr[:], bufs)
	if err != nil {
		return l.p.writeFailed(&h, err)
	}
	return nil
}

// writeRaw writes an encoded frame (the late queue's) as one ring frame.
func (l *ringLink) writeRaw(b []byte) error {
	err := l.seg.Writer().WriteFrame(shm.Wait{Deadline: time.Now().Add(l.p.t.timeout)}, b)
	if err != nil {
		var h Header
		if len(b) >= HeaderSize {
			h, _ = DecodeHeader(b, MaxPayload)
		}
		return l.p.writeFailed(&h, err)
	}
	return nil
}

// fits tells whether a frame of n payload bytes goes into the ring without waiting.
func (l *ringLink) fits(n int) bool { return l.seg.Writer().Fits(HeaderSize + n) }

// sendOrLeave is SendOrLeave through a ring. A ring write is a copy that waits only when the
// ring is full, so a frame that fits is written at once; one that does not goes whole to the
// late queue (a frame is never cut: the ring carries frames, not a byte stream).
func (l *ringLink) sendOrLeave(h Header, bufs [][]byte, n int, leave <-chan struct{}) error {
	p := l.p
	d := &detacher{}
	if leave == nil {
		d.lagBy = time.Now().Add(smallLag)
	}
	if !p.lockOrLeave(d, leave) {
		return p.enqueue(frameBytes(&h, bufs, n), false, n)
	}
	if err := p.writable(); err != nil {
		p.unlock()
		return err
	}
	if !l.fits(n) {
		return p.enqueue(frameBytes(&h, bufs, n), true, n) // the drain goroutine takes over the write lock
	}
	err := l.write(h, bufs, time.Time{}) // the timeout from when it has to wait
	p.unlock()
	if err == nil {
		p.t.count(p.rank, n, true)
	}
	return err
}

// ringPayload is mailbox.Payload over the current frame of a ring: Receive reads the payload
// straight from shared memory into its posted place.
type ringPayload struct {
	r *shm.Reader
	w shm.Wait
}

func (rp *ringPayload) Read(b []byte) (int, error) {
	n := min(len(b), rp.r.Remaining())
	if n == 0 && len(b) > 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if err := rp.r.ReadFull(rp.w, b[:n]); err != nil {
		return 0, err
	}
	return n, nil
}

func (rp *ringPayload) Discard(n int) (int, error) {
	if err := rp.r.Discard(rp.w, n); err != nil {
		return 0, err
	}
	return n, nil
}

// tcpEnded tells whether the TCP connection ended without a bye (tcpGone is closed).
func (l *ringLink) tcpEnded() bool {
	select {
	case <-l.tcpGone:
		return true
	default:
		return false
	}
}

// endTCP is the TCP reader's end for a peer on shared memory: the ring reader decides what
// it means, after draining what the peer published (a bye there, or a death).
func (l *ringLink) endTCP(bye bool) {
	if bye {
		return
	}
	l.gone.Do(func() {
		close(l.tcpGone)
		l.seg.Interrupt()
	})
}

// sayBye writes a bye into the ring (the caller holds the write lock) and closes this side:
// the peer reads everything sent before it, then the bye.
func (l *ringLink) sayBye(deadline time.Time) {
	var hb [HeaderSize]byte
	EncodeHeader(hb[:], &Header{Type: FrameBye, Job: l.p.t.job, Src: l.p.t.rank})
	l.seg.Writer().WriteFrame(shm.Wait{Deadline: deadline}, hb[:])
	l.seg.Close()
}

// ShmStats sums the waits on this rank's rings (netio/shm Stats): Spins stays 0 where the
// host's ranks outnumber its CPUs.
func (t *TCP) ShmStats() ShmStats {
	var s ShmStats
	for _, p := range t.peers {
		if p == nil || p.ring() == nil {
			continue
		}
		l := p.ring()
		st := l.seg.Stats()
		s.Peers++
		s.Spins += st.Spins
		s.SpinHits += st.SpinHits
		s.Sleeps += st.Sleeps
		s.WakesSent += st.WakesSent
		s.RefFrames += l.refsRead.Load()
		s.WrittenBack += l.wroteBack.Load()
	}
	// Waits that read their rings on their own thread (selfread_linux.go) spin and sleep there.
	s.Spins += t.sr.spins.Load()
	s.SpinHits += t.sr.spinHits.Load()
	s.Sleeps += t.sr.sleeps.Load()
	s.Yields += t.sr.yields.Load()
	s.LaneMsgs, s.LaneSleeps = t.Set.Counts()
	s.RanksOnHost = t.ranksOnHost
	s.SpinAllowed = t.spin
	return s
}

// makeLanes makes the transport's lanes over its rings' segments (netio/lanes), with the driving
// waits' windows and the mailbox's verdicts.
func (t *TCP) makeLanes() *lanes.Set {
	return lanes.New(lanes.Config{Size: t.size, Timeout: t.timeout, Spin: t.spin,
		Quiet: driveQuiet, SpinFor: driveSpin, YieldFor: driveYield,
		Check: t.laneCheck, Dead: t.mb.Dead, Closed: t.closedErr,
	}, func() []*shm.Segment {
		segs := make([]*shm.Segment, len(t.peers))
		for r, p := range t.peers {
			if p != nil && p.ring() != nil {
				segs[r] = p.ring().seg
			}
		}
		return segs
	})
}

// laneChecking runs, when set (tests), before a lane wait asks the mailbox, after a look that
// found nothing.
var laneChecking func()

// laneCheck is a lane wait's look at whether its message can still come: the transport's
// close, else the mailbox's verdict (Mailbox.Verdict).
func (t *TCP) laneCheck(from int, tag kx.Tag) error {
	if laneChecking != nil {
		laneChecking()
	}
	if t.closing.Load() {
		return t.closedErr()
	}
	return t.mb.Verdict(from, tag)
}
