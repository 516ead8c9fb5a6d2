package netio

import (
	"sync"
	"testing"
	"time"
)

// The write lock excludes: writers on many goroutines each add to a counter under it, with
// no other synchronisation, and none of the additions is lost (go test -race sees any overlap).
func TestWlockExcludes(t *testing.T) {
	l := newWlock()
	var n, inside int
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				switch i % 3 {
				case 0:
					if !l.lockUntil(time.Now().Add(time.Minute)) {
						t.Error("lockUntil gave up within a minute")
						return
					}
				case 1:
					if !l.lockOr(nil, nil) {
						t.Error("lockOr with no way out gave up")
						return
					}
				default:
					for !l.tryLock() {
					}
				}
				inside++
				if inside != 1 {
					t.Errorf("%d writers inside the lock", inside)
				}
				n++
				inside--
				l.unlock()
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
func TestWlockWaits(t *testing.T) {
	l := newWlock()
	if !l.tryLock() || l.tryLock() {
		t.Fatal("tryLock: the first must take the lock, the second must not")
	}
	if l.lockUntil(time.Now().Add(20 * time.Millisecond)) {
		t.Fatal("lockUntil took a held lock")
	}
	leave := make(chan struct{})
	close(leave)
	if l.lockOr(nil, leave) {
		t.Fatal("lockOr took a held lock after leave closed")
	}
	got := make(chan bool)
	go func() { got <- l.lockOr(nil, nil) }()
	for l.waiters.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	l.unlock()
	if !<-got {
		t.Fatal("the waiter did not get the released lock")
	}
	if l.tryLock() {
		t.Fatal("the lock is free while the waiter holds it")
	}
}
