// Package wlock is a peer's write lock in netio: one frame at a time on a link.
package wlock

import (
	"sync/atomic"
	"time"
)

// Lock is a peer's write lock: one frame at a time on a link. Taking it is usually
// uncontended (a collective's sends go to distinct peers, one at a time), and a small step
// takes it once a message, so the uncontended path is one compare-and-swap and the release
// one store and one load. A writer that finds it held waits with a deadline or until a
// channel fires (a heartbeat gives up at once, a late send when it may leave), which a
// sync.Mutex cannot do; a channel used as a semaphore can, at several times the cost.
type Lock struct {
	held    atomic.Bool
	waiters atomic.Int32
	// wake carries a token from Unlock to one waiter; a token nobody takes only makes the
	// next waiter look again.
	wake chan struct{}
}

// New returns a free lock.
func New() Lock { return Lock{wake: make(chan struct{}, 1)} }

// TryLock takes the lock if it is free.
func (l *Lock) TryLock() bool { return l.held.CompareAndSwap(false, true) }

// Unlock releases the lock and wakes a waiter if there is one.
func (l *Lock) Unlock() {
	l.held.Store(false)
	if l.waiters.Load() > 0 {
		select {
		case l.wake <- struct{}{}:
		default: // a token is already there
		}
	}
}

// LockUntil waits for the lock until deadline; it reports whether it got it.
func (l *Lock) LockUntil(deadline time.Time) bool {
	if l.TryLock() {
		return true
	}
	tm := time.NewTimer(time.Until(deadline))
	defer tm.Stop()
	return l.LockOr(tm.C, nil)
}

// LockOr waits for the lock until lag or leave fires (a nil channel never does); it reports
// whether it got it.
func (l *Lock) LockOr(lag <-chan time.Time, leave <-chan struct{}) bool {
	if l.TryLock() {
		return true
	}
	// Counted before the look that follows: an Unlock after that look sees the count and
	// leaves a token, so the wait below cannot miss it.
	l.waiters.Add(1)
	defer l.waiters.Add(-1)
	for {
		if l.TryLock() {
			return true
		}
		select {
		case <-l.wake:
		case <-lag:
			return l.TryLock()
		case <-leave:
			return l.TryLock()
		}
	}
}
