package netio

import (
	"sync/atomic"
	"time"
)

// wlock is a peer's write lock: one frame at a time on a link. Taking it is usually
// uncontended (a collective's sends go to distinct peers, one at a time), and a small step
// takes it once a message, so the uncontended path is one compare-and-swap and the release
// one store and one load. A writer that finds it held waits with a deadline or until a
// channel fires (a heartbeat gives up at once, a late send when it may leave), which a
// sync.Mutex cannot do; a channel used as a semaphore can, at several times the cost.
type wlock struct {
	held    atomic.Bool
	waiters atomic.Int32
	// wake carries a token from unlock to one waiter; a token nobody takes only makes the
	// next waiter look again.
	wake chan struct{}
}

func newWlock() wlock { return wlock{wake: make(chan struct{}, 1)} }

// tryLock takes the lock if it is free.
func (l *wlock) tryLock() bool { return l.held.CompareAndSwap(false, true) }

// unlock releases the lock and wakes a waiter if there is one.
func (l *wlock) unlock() {
	l.held.Store(false)
	if l.waiters.Load() > 0 {
		select {
		case l.wake <- struct{}{}:
		default: // a token is already there
		}
	}
}

// lockUntil waits for the lock until deadline; it reports whether it got it.
func (l *wlock) lockUntil(deadline time.Time) bool {
	if l.tryLock() {
		return true
	}
	tm := time.NewTimer(time.Until(deadline))
	defer tm.Stop()
	return l.lockOr(tm.C, nil)
}

// lockOr waits for the lock until lag or leave fires (a nil channel never does); it reports
// whether it got it.
func (l *wlock) lockOr(lag <-chan time.Time, leave <-chan struct{}) bool {
	if l.tryLock() {
		return true
	}
	// Counted before the look that follows: an unlock after that look sees the count and
	// leaves a token, so the wait below cannot miss it.
	l.waiters.Add(1)
	defer l.waiters.Add(-1)
	for {
		if l.tryLock() {
			return true
		}
		select {
		case <-l.wake:
		case <-lag:
			return l.tryLock()
		case <-leave:
			return l.tryLock()
		}
	}
}
