package wlock

import (
	"sync"
	"testing"
	"time"
)

// The write lock excludes: writers on many goroutines each add to a counter under it, with
// no other synchronisation, and none of the additions is lost (go test -race sees any overlap).
func TestLockExcludes(t *testing.T) {
	l := New()
	var n, inside int
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				switch i % 3 {
				case 0:
					if !l.LockUntil(time.Now().Add(time.Minute)) {
						t.Error("lockUntil gave up within a minute")
						return
					}
				case 1:
					if !l.LockOr(nil, nil) {
						t.Error("lockOr with no way out gave up")
						return
					}
				default:
					for !l.TryLock() {
					}
				}
				inside++
				if inside != 1 {
					t.Errorf("%d writers inside the lock", inside)
				}
				n++
				inside--
				l.Unlock()
			}
		}()
	}
	wg.Wait()
	if n != 8*2000 {
		t.Fatalf("%d increments, want %d", n, 8*2000)
	}
}

// A held lock: tryLock fails, a wait gives up when its deadline passes or leave closes, and a
// waiter gets the lock once it is released.
func TestLockWaits(t *testing.T) {
	l := New()
	if !l.TryLock() || l.TryLock() {
		t.Fatal("tryLock: the first must take the lock, the second must not")
	}
	if l.LockUntil(time.Now().Add(20 * time.Millisecond)) {
		t.Fatal("lockUntil took a held lock")
	}
	leave := make(chan struct{})
	close(leave)
	if l.LockOr(nil, leave) {
		t.Fatal("lockOr took a held lock after leave closed")
	}
	got := make(chan bool)
	go func() { got <- l.LockOr(nil, nil) }()
	for l.waiters.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	l.Unlock()
	if !<-got {
		t.Fatal("the waiter did not get the released lock")
	}
	if l.TryLock() {
		t.Fatal("the lock is free while the waiter holds it")
	}
}
