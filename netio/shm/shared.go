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
// Next, ReadFull and Discard. The token holder's sleeps in the middle of a frame drain the read
// doorbell as usual; AwaitFrame watches a second descriptor of it and never drains it, so it can
// never take the wake-up the token holder sleeps for. Neither takes back its sleep announcement
// (wait.go, unannounce): only the writer clears it.

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

// framePublished tells, without the read token, whether the peer published bytes past the
// last frame the reader finished: a frame waits. (The gap left by a finished frame is its
// padding, under 16 bytes; the smallest frame is longer.) Under the token, mid-frame, it may say
// yes falsely. The caller has entered the segment.
func (s *Segment) framePublished() bool { return s.r.tail.Load()-s.r.head.Load() >= prefix }

// AwaitFrame sleeps, without the read token, until a frame is published (framePublished). It fails as Next does (ErrClosed,
// ErrPeerClosed, *PeerDeadError, ErrAborted, ErrTimeout); the token holder's Next then tells
// what is left to read.
func (s *Segment) AwaitFrame(wt Wait) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	return s.await(&wt, s.r.rsleep, s.framePublished, s.watcher != nil)
}

// Ready tells the token holder whether Next would return a frame (or an error) without
// waiting.
func (r *Reader) Ready() bool {
	entered, err := r.use()
	if err != nil {
		return true // closing: Next reports it
	}
	if entered {
		defer r.s.exit()
	}
	return r.left > 0 || r.peek()
}
