//go:build linux

package shm

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Doorbells: an eventfd per sleep word, in place of the futex. A Go program that sleeps in
// futex(2) holds an OS thread and, through the runtime, a P in a system call; the goroutine its
// wake readies then waits for the scheduler to notice (docs/netio-notes.md, "Waits"). An
// eventfd read through the runtime's poller parks the goroutine instead, as a socket read does. The sleep protocol is
// unchanged: the waker still writes only when the sleeper announced it sleeps (one 8-byte
// write instead of FUTEX_WAKE); a wake that comes after the sleeper gave up leaves the counter
// set, which costs the next sleep one spurious turn.
type bell struct {
	f  *os.File
	fd int
}

// bellWords are the four sleep words, in the order their eventfds travel.
func (s *Segment) bellWords() [4]*atomic.Uint32 {
	var w [4]*atomic.Uint32
	for r := 0; r < 2; r++ {
		base := offRing + r*ringHdr
		w[2*r] = s.u32(base + offRSleep)
		w[2*r+1] = s.u32(base + offWSleep)
	}
	return w
}

// AddDoorbells makes the creator's four eventfds and returns them to send to the peer along
// with Fd() (SendFDs(uc, append([]int{s.Fd()}, bells...)...)); they stay open here too. Call it
// before any other call on the segment.
func (s *Segment) AddDoorbells() ([]int, error) {
	fds := make([]int, 4)
	for i := range fds {
		fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			for _, f := range fds[:i] {
				unix.Close(f)
			}
			return nil, fmt.Errorf("shm: eventfd: %w", err)
		}
		fds[i] = fd
	}
	s.useBells(fds)
	return fds, nil
}

// UseDoorbells takes the four eventfds the creator sent (ownership passes here; closed with
// the segment, or at once on error). Call it right after Open, before any other call.
func (s *Segment) UseDoorbells(fds []int) error {
	if len(fds) != 4 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return fmt.Errorf("%w: %d doorbells, want 4", ErrBadSegment, len(fds))
	}
	for _, fd := range fds {
		var st unix.Stat_t
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err != nil || unix.Fstat(fd, &st) != nil || fl&unix.O_NONBLOCK == 0 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return fmt.Errorf("%w: a doorbell is not a non-blocking fd", ErrBadSegment)
		}
	}
	s.useBells(fds)
	return nil
}

func (s *Segment) useBells(fds []int) {
	s.bells = map[*atomic.Uint32]*bell{}
	for i, w := range s.bellWords() {
		s.bells[w] = &bell{f: os.NewFile(uintptr(fds[i]), "kylix-shm-bell"), fd: fds[i]}
	}
}

// sleepOn sleeps at most d while w is 1: on its doorbell when there is one, else in futex.
func (s *Segment) sleepOn(w *atomic.Uint32, d time.Duration) {
	b := s.bells[w]
	if b == nil {
		futexWait(w, 1, d)
		return
	}
	b.f.SetReadDeadline(time.Now().Add(d))
	var buf [8]byte
	b.f.Read(buf[:]) // woken, timed out or closed: the caller looks at the ring in every case
}

// ring wakes the sleepers on w.
func (s *Segment) ring(w *atomic.Uint32) {
	b := s.bells[w]
	if b == nil {
		futexWake(w)
		return
	}
	one := [8]byte{1}
	unix.Write(b.fd, one[:]) // EAGAIN only when the counter is full: a wake is pending anyway
}

func (s *Segment) closeBells() {
	for _, b := range s.bells {
		b.f.Close()
	}
	if s.watcher != nil {
		s.watcher.f.Close()
	}
}
