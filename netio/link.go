package netio

import (
	"errors"
	"io"
	"kylix/core/kx"
	"kylix/netio/mailbox"
	"kylix/netio/mesh"
	"kylix/netio/shm"
	"sync"
	"time"
)

// A link carries frames between this rank and one peer: its socket (sockLink) or a shared-memory
// ring (ringLink, shmlink_linux.go). A peer's data, aborts and bye go through one link, its data
// link; a peer on a ring keeps its socket too, for the heartbeats and as the first to tell of its
// process's death (liveness.go). Everything above a link is written once: the read loop, filing
// a frame, the hand-over of a wait's own frame, what a failure means for the peer, the late queue
// and the heartbeats.
//
// Reading takes the link's read token (linkRead.tok): whoever holds it reads frames and files
// them, the link's reader goroutine or a wait that reads on its own thread (selfread_linux.go).
// Writing takes the peer's write lock.
type link interface {
	rd() *linkRead
	// next reads the next frame's header into hb and returns where its payload is read from and
	// the payload's length as the carrier knows it (-1: only the header says).
	next(hb []byte) (pl mailbox.Payload, carried int, err error)
	// buffered tells the token holder that a frame, or the link's end, can be read now without
	// waiting and without a system call; pending may look at the kernel too.
	buffered() bool
	pending() bool
	// awaitFrame waits, without the token, until a frame may be there (or the link ends).
	awaitFrame() error
	// hidden tells whether bytes this side already took from the kernel wait unread: a reader
	// goroutine that learns of frames from the kernel alone would never look at them, so whoever
	// gives the token back files them first.
	hidden() bool
	// share lets waits read the link on their own thread; it reports whether they may.
	share() bool
	// setDirect switches the link's reads to the holder's own thread (a wait) or back.
	setDirect(bool)

	// write sends one frame, header h and payload bufs, straight from bufs; the caller holds
	// the write lock. (Headers go by value: a pointer through an interface call escapes, and a
	// small step would allocate.) hard bounds the whole frame, or (zero) the timeout from when it first
	// has to wait.
	write(h Header, bufs [][]byte, hard time.Time) error
	// writeRaw writes an encoded frame (the late queue's) under the write lock.
	writeRaw(b []byte) error
	// fits tells, under the write lock, whether a frame of n payload bytes goes out now.
	fits(n int) bool
	// sendOrLeave is TCP.SendOrLeave's write on this link (latesend.go).
	sendOrLeave(h Header, bufs [][]byte, n int, leave <-chan struct{}) error
	// closeWrite tells the peer no more frames come on this link after a failed write.
	closeWrite()
	// sayBye writes a bye behind everything sent (Close, under the write lock).
	sayBye(deadline time.Time)
	close()

	// kind names the link in messages ("connection", "shared-memory ring"); ended says why the
	// peer is gone after err ended the link's reading.
	kind() string
	ended(err error) string
}

// linkRead is a link's read side: the token and what its holder keeps.
type linkRead struct {
	tok    sync.Mutex
	done   bool             // guarded by tok: the link is finished with, its reader stops
	shared bool             // set at start: waits may read the link too (selfread_linux.go)
	hb     [HeaderSize]byte // the header being read; guarded by tok
}

// ring is p's ring link, or nil when p's data goes over its socket.
func (p *peer) ring() *ringLink {
	r, _ := p.data.(*ringLink)
	return r
}

// readLoop files every frame from l, one of p's links, until it ends. Where waits may read l
// themselves (shared), the loop waits for a frame without l's read token and reads only what is
// there once it holds it; else it keeps the token for good.
func (t *TCP) readLoop(p *peer, l link) {
	defer t.wg.Done()
	if l == link(p.sock) {
		defer close(p.readDone)
	}
	r := l.rd()
	r.tok.Lock()
	defer r.tok.Unlock()
	for !r.done {
		if !r.shared {
			r.done = t.readFrame(p, l, nil)
			continue
		}
		r.tok.Unlock()
		werr := l.awaitFrame()
		r.tok.Lock()
		if r.done || werr == nil && !l.pending() {
			continue // a waiting caller read what woke us, or ended the link
		}
		for !r.done {
			r.done = t.readFrame(p, l, nil)
			if !l.buffered() {
				break
			}
		}
	}
}

// readFrame reads and files one frame from l; the caller holds l's read token. It reports
// whether the link is finished with (a failure, a bad frame or a bye, each already told to the
// mailbox or, for the socket of a peer on a ring, to the ring). The data frame a wait wants
// (want, on the wait's own goroutine) is read into a pooled buffer and handed over in want.Data
// instead of filed.
func (t *TCP) readFrame(p *peer, l link, want *mailbox.Want) (done bool) {
	r := l.rd()
	pl, carried, err := l.next(r.hb[:])
	if err != nil {
		return t.readEnded(p, l, err)
	}
	h, ok := t.checkFrame(p, r.hb[:], carried)
	if !ok {
		return true
	}
	if h.Type == FrameData && want.Matches(p.rank, h.tag()) && (want.Into == nil || int(h.Len) == len(want.Into)) {
		return t.readWanted(p, l, want, &h, pl)
	}
	if want.Claimed() {
		// Any other frame is filed as usual, and it may be for the claimed place (by reference,
		// or of another length: the wait then fails naming p): the place is given back first.
		t.mb.Unwant(want)
	}
	bye, err := t.file(p, &h, pl)
	switch {
	case err != nil:
		return t.readEnded(p, l, err)
	case bye && l != p.data:
		p.ring().endTCP(true) // the bye in the ring, behind the data, is the one that counts
		return true
	case bye:
		p.t.mb.MarkFinalized(p.rank)
		p.down(mailbox.FinalizedError(p.rank))
		return true
	}
	return false
}

// readWanted reads the payload of want's frame: into its posted place (an Await's), or into a
// buffer of the mailbox's for a Recv.
func (t *TCP) readWanted(p *peer, l link, want *mailbox.Want, h *Header, pl io.Reader) (done bool) {
	data := want.Into
	if data == nil {
		data = t.mb.WantBuf(int(h.Len))
	}
	if _, err := io.ReadFull(pl, data); err != nil {
		if want.Into != nil {
			t.mb.FailWant(want)
		} else {
			t.mb.Release(data)
		}
		return t.readEnded(p, l, err)
	}
	t.mb.Took(p.rank, h.Seq)
	t.count(p.rank, int(h.Len), false)
	want.Data = data
	return false
}

// readEnded handles an error that ended reading l and reports the link finished with. The
// socket of a peer on a ring leaves the verdict to the ring, which drains what the peer
// published first (a bye there, or a death).
func (t *TCP) readEnded(p *peer, l link, err error) bool {
	switch {
	case err == errDropped:
	case l != p.data && !t.closing.Load():
		p.ring().endTCP(false)
	case t.closing.Load():
		p.down(t.closedErr())
	default:
		p.down(mailbox.LostError(p.rank, l.ended(err)))
	}
	return true
}

// errDropped: the reader dropped the peer itself (file, a link's next).
var errDropped = errors.New("peer dropped")

// writeFailed maps a failed write of h to p's data link to the error the sender gets. A frame
// cut short leaves the link unusable, so later writes fail with the same error.
func (p *peer) writeFailed(h *Header, err error) error {
	t := p.t
	if t.closing.Load() {
		return t.closedErr()
	}
	if derr := t.mb.Dead(p.rank); derr != nil {
		return derr
	}
	switch {
	case mesh.IsTimeout(err) || errors.Is(err, shm.ErrTimeout):
		p.down(mailbox.LostError(p.rank, p.data.kind()+" dropped after a send timed out"))
		return kx.Errorf(kx.CodeTimeout, "rank %d took no data for %v (sending %s frame of collective %d)", kx.RankRef(p.rank), t.timeout, h.Type, kx.SeqRef(h.Seq))
	case errors.Is(err, shm.ErrPeerDead):
		p.down(mailbox.LostError(p.rank, "its process died (shared memory)"))
		return t.mb.Dead(p.rank)
	}
	return p.writeBroken(p.data, err)
}

// writeBroken records that writing to p through l failed (the peer closed or reset the
// connection) and returns the error every later write gets. The read side stays open: what the peer sent before
// it went may still wait unread (a replica that finalized as soon as it had one copy of
// everything, while its siblings' peers still send to it), and the reader tells of its death
// once it has read up to the end.
func (p *peer) writeBroken(l link, err error) error {
	e := mailbox.LostError(p.rank, "send failed: "+err.Error())
	p.werr.CompareAndSwap(nil, &e)
	l.closeWrite()
	return *p.werr.Load()
}
