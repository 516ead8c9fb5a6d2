//go:build linux

package shm

import (
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Shared reading: the reading side of a segment may be driven by two parties in turn, a reader
// goroutine and a thread that reads the ring itself while it waits for a message (netio's
// caller-thread reads), exchanging a read token the caller of this package keeps. Without the
// token, the goroutine only waits for a frame (AwaitFrame); with it, either party calls Ready,
// Next, ReadFull and Discard. A thread that sleeps in poll(2) on the read doorbell (ReadBell)
// drains it afterwards (DrainReadBell); the goroutine's sleeps then only watch the doorbell
// through the runtime's poller and never drain it, so a wake-up is never taken from a thread
// asleep in poll(2) on the same eventfd.

// SetShared switches the reading side to shared reading; call it before any read. It needs the
// doorbells (AddDoorbells, UseDoorbells).
func (s *Segment) SetShared() error {
	b := s.bells[s.r.rsleep]
	if b == nil {
		return errors.New("shm: shared reading needs the doorbells")
	}
	fd, err := unix.FcntlInt(uintptr(b.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return err
	}
	w := &bellWatcher{f: os.NewFile(uintptr(fd), "kylix-shm-bell-watch")}
	if w.rc, err = w.f.SyscallConn(); err != nil {
		w.f.Close()
		return err
	}
	w.fn = func(uintptr) bool {
		if !w.called {
			w.called = true
			return false // the first look: go and wait for readiness
		}
		return true
	}
	s.watcher = w
	return nil
}

// bellWatcher is a second descriptor of the read doorbell, registered with the runtime's poller
// on its own, so that AwaitFrame learns of a ring as an edge without draining the counter that a
// thread polling the doorbell itself waits on (and the token holder's sleeps, on the first
// descriptor, never queue behind AwaitFrame's).
type bellWatcher struct {
	f      *os.File
	rc     syscall.RawConn
	called bool
	fn     func(uintptr) bool // made once: a closure per sleep would allocate
}

// watchFrames parks in the runtime's poller until the read doorbell rings (a ring since the
// last look counts too, costing one more look) or d passes.
func (s *Segment) watchFrames(d time.Duration) {
	w := s.watcher
	w.f.SetReadDeadline(time.Now().Add(d))
	w.called = false
	w.rc.Read(w.fn)
}

// HasFrame tells, without the read token, whether the peer published bytes past the last frame
// the reader finished: a frame waits. (The gap left by a finished frame is its padding, under
// 8 bytes; the smallest frame is longer.) Under the token, mid-frame, it may say yes falsely.
func (s *Segment) HasFrame() bool {
	if s.enter() != nil {
		return true // closing: let the reader find out
	}
	defer s.exit()
	return s.r.tail.Load()-s.r.head.Load() >= prefix
}

// AwaitFrame sleeps, without the read token, until HasFrame. It fails as Next does (ErrClosed,
// ErrPeerClosed, *PeerDeadError, ErrAborted, ErrTimeout); the token holder's Next then tells
// what is left to read.
func (s *Segment) AwaitFrame(wt Wait) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	ready := func() bool { return s.r.tail.Load()-s.r.head.Load() >= prefix }
	return s.await(&wt, s.r.rsleep, ready, s.watcher != nil)
}

// Ready tells the token holder whether Next would return a frame (or an error) without
// waiting.
func (r *Reader) Ready() bool {
	if r.s.enter() != nil {
		return true // closing: Next reports it
	}
	defer r.s.exit()
	if r.left > 0 {
		return true
	}
	r.tailSeen = r.tail.Load()
	return r.avail() >= r.pad+prefix
}

// ReadBell is the eventfd that rings when the peer publishes while this side announced a
// sleep (AnnounceRead), for poll(2); -1 without doorbells. It is closed with the segment.
func (s *Segment) ReadBell() int {
	if b := s.bells[s.r.rsleep]; b != nil {
		return b.fd
	}
	return -1
}

// AnnounceRead tells the peer that this side is about to sleep on the read doorbell: its next
// publication rings it. Look at Ready after announcing, before sleeping.
func (s *Segment) AnnounceRead() {
	if s.enter() != nil {
		return
	}
	s.r.rsleep.Store(1)
	s.exit()
}

// DrainReadBell resets the read doorbell after a poll(2) on it.
func (s *Segment) DrainReadBell() {
	if s.enter() != nil {
		return
	}
	defer s.exit()
	var buf [8]byte
	unix.Read(s.ReadBell(), buf[:])
}
