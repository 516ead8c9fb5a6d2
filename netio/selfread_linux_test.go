//go:build linux

package netio

import (
	"kylix/core/kx"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Every message arrives whole and in place whoever reads it: waits that read their sockets and
// rings on their own thread, or the reader goroutines alone (selfReadOff), over TCP and over
// shared memory, for sizes from empty to several times a ring and a socket buffer, with
// messages for other sources and later collectives arriving while a wait reads.
func TestSelfReadPaths(t *testing.T) {
	defer func(off bool) { selfReadOff = off }(selfReadOff)
	base := runtime.NumGoroutine()
	for _, off := range []bool{false, true} {
		for _, mode := range []string{"off", "auto"} {
			selfReadOff = off
			ts := startShmJob(t, 3, mode)
			exchangeAll(t, tcpTransports(ts), []int{0, 1, 100, 4095, 4097, 70000, 1 << 20, 3 << 20})
			testExpect(t, tcpTransports(ts))
			rounds(t, ts, 300)
			var driven uint64
			for _, tr := range ts {
				driven += tr.sr.driven.Load()
			}
			if off && driven != 0 || !off && driven == 0 {
				t.Errorf("selfReadOff=%v shm=%s: %d frames filed by waits", off, mode, driven)
			}
			closeAll(ts)
		}
	}
	noLeak(t, base)
}

// rounds runs n collectives of an all-to-all of small messages on every rank at once, each
// rank's messages to the others carrying its rank and the round, checked on arrival.
func rounds(t *testing.T, ts []*TCP, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(ts))
	for r, tr := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				seq := uint64(100 + i)
				tr.Receiver().Begin(seq, fpAll)
				tag := kx.Tag{FP: fpAll, Seq: seq, Phase: kx.PhaseDown}
				for to := range ts {
					if to != r {
						if err := tr.Send(to, tag, []byte{byte(r), byte(i)}); err != nil {
							errs <- err
							return
						}
					}
				}
				for from := range ts {
					if from == r {
						continue
					}
					b, err := tr.Receiver().Recv(from, tag)
					if err != nil {
						errs <- err
						return
					}
					if len(b) != 2 || b[0] != byte(from) || b[1] != byte(i) {
						errs <- kx.Errorf(kx.CodeInternal, "rank %d round %d: from %d got %v", r, i, from, b)
						return
					}
					tr.Receiver().Release(b)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A wait that reads its peer's socket itself still ends promptly when the transport closes
// under it: the close interrupt wakes its poll(2).
func TestSelfReadCloseWakesWait(t *testing.T) {
	ts := startShmJob(t, 2, "off")
	defer closeAll(ts)
	ts[0].Receiver().Begin(1, fpAll)
	done := make(chan error, 1)
	go func() {
		_, err := ts[0].Receiver().Recv(1, kx.Tag{FP: fpAll, Seq: 1, Phase: kx.PhaseDown})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // the wait is in its poll(2) by now
	ts[0].Close()
	// CodeState "closed" is the Close ending the wait (the job's timeout is 10 s); a wait that
	// missed the interrupt would still see the close within a poll slice (100 ms): 5 s is a
	// fail-safe.
	select {
	case err := <-done:
		wantErr(t, err, kx.CodeState, "closed")
	case <-time.After(5 * time.Second):
		t.Fatal("the wait did not end after Close")
	}
}

// Large frames between ranks of one process go by reference (shmref_linux.go) and arrive whole,
// several buffers to a message, while every rank sends to every other at once; the buffers are
// the test's own, freed by nothing but the collector once Send returned.
func TestShmByReference(t *testing.T) {
	ts := startShmJob(t, 3, "auto")
	defer closeAll(ts)
	exchangeAll(t, tcpTransports(ts), []int{refMin - 1, refMin, 3 << 20, 9 << 20})
	runtime.GC()
	exchangeAll(t, tcpTransports(ts), []int{refMin, 5 << 20})
	var refs uint64
	for _, tr := range ts {
		for _, p := range tr.peers {
			if p != nil && p.ring() != nil {
				refs += p.ring().refsSent.Load()
			}
		}
	}
	if want := uint64(3 * 2 * 5); refs != want {
		t.Errorf("%d frames went by reference, want %d", refs, want)
	}
}
