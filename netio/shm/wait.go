//go:build linux

package shm

import (
	"bytes"
	"os"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Not the _PRIVATE variants: the words live in memory shared with another process.
const (
	futexWaitOp = 0 // FUTEX_WAIT
	futexWakeOp = 1 // FUTEX_WAKE
)

// futexWait sleeps while *w == val, at most d. Every outcome (woken, EAGAIN because the
// word changed, EINTR, ETIMEDOUT) sends the caller back to look at the ring.
// Syscall6, not RawSyscall6: the thread blocks, so the runtime must be told.
func futexWait(w *atomic.Uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWaitOp, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWake wakes the waiters on w; it never blocks, hence the raw call.
func futexWake(w *atomic.Uint32) {
	unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWakeOp, 1<<30, 0, 0, 0)
}

// wake is the publishing side's half of the sleep protocol: it runs after the position
// store and costs one load unless the other side announced that it sleeps.
func (s *Segment) wake(w *atomic.Uint32) {
	if w.Load() != 0 && w.CompareAndSwap(1, 0) {
		s.ring(w)
		s.stats.wakes.Add(1)
	}
}

// await blocks until ready() holds. The sleep protocol is Dekker's: the waiter stores 1 in
// its sleep word and then loads the peer's position; the peer stores its position and then
// loads the sleep word. Go's atomics are sequentially consistent, so at least one of them
// sees the other: either the waiter sees the new position, or the peer sees 1 and wakes it
// (FUTEX_WAIT refuses to sleep once the word is no longer 1).
//
// watch (AwaitFrame only) sleeps on the read doorbell's watcher, which never drains it.
//
// It returns ErrPeerClosed when the peer closed its side and ready() still fails after
// that (the peer publishes before it closes, so nothing sent is lost), *PeerDeadError,
// ErrClosed, ErrAborted or ErrTimeout.
func (s *Segment) await(wt *Wait, sleep *atomic.Uint32, ready func() bool, watch bool) error {
	if ready() {
		return nil
	}
	if wt.Deadline.IsZero() && wt.Timeout > 0 {
		wt.Deadline = time.Now().Add(wt.Timeout)
	}
	if s.spin > 0 {
		s.stats.spins.Add(1)
		start := time.Now()
		for i := 1; ; i++ {
			if ready() {
				s.stats.spinHits.Add(1)
				return nil
			}
			// Time and closing are checked every 64 loads, and the CPU is offered to
			// another thread (sched_yield, Open MPI's yield_when_idle, not runtime.Gosched,
			// which leaves the thread on the CPU): when the host is busier than it looked,
			// the peer may be queued on this very CPU (docs/netio-notes.md, "Waits").
			if i&63 == 0 {
				if s.closing() || time.Since(start) > s.spin {
					break
				}
				unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			}
		}
	}
	peer := 1 - s.side
	for {
		sleep.Store(1)
		if ready() {
			s.unannounce(sleep)
			return nil
		}
		if err := s.stopWaiting(wt, peer, ready); err != nil {
			s.unannounce(sleep)
			return err
		}
		d := s.poll
		if !wt.Deadline.IsZero() {
			if rem := time.Until(wt.Deadline); rem < d {
				d = rem
			}
		}
		start := time.Now()
		s.stats.sleeps.Add(1)
		if watch {
			s.watchFrames(d)
		} else {
			s.sleepOn(sleep, d)
		}
		if ready() {
			s.unannounce(sleep)
			return nil
		}
		// Nobody wakes us if the peer died, so the poll timeout is where death shows; a
		// spurious wake (a wake for a smaller need, Interrupt) does not pay for the check.
		if time.Since(start) >= d {
			if pid, gone := s.peerGone(); gone {
				s.unannounce(sleep)
				if ready() { // it may have published everything before it died
					return nil
				}
				return &PeerDeadError{Pid: pid}
			}
		}
	}
}

// unannounce takes back a sleep announcement, except on a read side shared with a polling
// thread (shared.go): two parties announce on that word, and one taking it back could take back
// the other's, which then sleeps through the next publication. Only the writer clears it there
// (its CAS when it rings), at the price of a ring nobody needed now and then.
func (s *Segment) unannounce(sleep *atomic.Uint32) {
	if s.watcher == nil || sleep != s.r.rsleep {
		sleep.Store(0)
	}
}

func (s *Segment) stopWaiting(wt *Wait, peer int, ready func() bool) error {
	if s.closing() {
		return ErrClosed
	}
	if s.sideClosed(peer).Load() != 0 && !ready() {
		return ErrPeerClosed
	}
	if wt.Abort != nil {
		select {
		case <-wt.Abort:
			return ErrAborted
		default:
		}
	}
	if !wt.Deadline.IsZero() && !time.Now().Before(wt.Deadline) {
		return ErrTimeout
	}
	return nil
}

// pidAlive is the fallback where pidfd_open is missing (Linux < 5.3): kill(pid, 0) plus
// the state letter, since an unreaped child that died is a zombie that kill still finds.
func pidAlive(pid int) bool {
	if err := unix.Kill(pid, 0); err == unix.ESRCH {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err)
	}
	// The state follows the last ')' (the command name may contain one).
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		switch b[i+2] {
		case 'Z', 'X', 'x':
			return false
		}
	}
	return true
}
