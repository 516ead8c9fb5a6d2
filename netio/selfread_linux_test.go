//go:build linux

package netio

import (
	"bytes"
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

// A driving Await claims its place and reads the frame into it itself (one lock to land it): the
// payload lands in place, a payload of another length fails the wait naming the sender with the
// place untouched, and a message large enough to go by reference over a ring (which the wait
// files as usual, having given its place back) lands too; over a ring and over a socket.
func TestDrivenAwaitLandsInPlace(t *testing.T) {
	defer func() { awaitClaimed = nil }()
	for _, mode := range []string{"auto", "off"} {
		t.Run("shm="+mode, func(t *testing.T) {
			ts := startShmJob(t, 2, mode)
			defer closeAll(ts)
			const small, large = 40, refMin + 4096
			for i, c := range []struct{ n, size int }{{small, small}, {small, small + 1}, {small, small - 1}, {large, large}} {
				seq := uint64(10 + i)
				for _, tr := range ts {
					tr.Receiver().Begin(seq, fpAll)
				}
				tag := kx.Tag{FP: fpAll, Seq: seq, Phase: kx.PhaseDown}
				whole, place := sentinelPlace(c.n)
				ts[0].Receiver().Post(1, tag, place, kx.Fold{})
				payload := bytes.Repeat([]byte{byte(i + 1)}, c.size)
				claimed := 0
				sent := make(chan error, 1)
				awaitClaimed = func() {
					claimed++
					if c.size < large {
						sent <- ts[1].Send(0, tag, payload)
					} else { // a send by reference returns once the receiver copied it
						go func() { sent <- ts[1].Send(0, tag, payload) }()
					}
				}
				before := ts[0].sr.driven.Load()
				got, err := ts[0].Receiver().Await(1, tag, kx.Whole)
				awaitClaimed = nil
				if claimed != 1 {
					t.Fatalf("size %d: the wait claimed its place %d times, want once", c.size, claimed)
				}
				if err := <-sent; err != nil {
					t.Fatal(err)
				}
				if c.size == c.n {
					if err != nil || got != c.n || !bytes.Equal(place, payload) {
						t.Fatalf("size %d: %d bytes landed, %v", c.size, got, err)
					}
				} else {
					wantErr(t, err, kx.CodeInternal, "rank 1 sent", "want")
					if !bytes.Equal(place, bytes.Repeat([]byte{0xA5}, c.n)) {
						t.Fatalf("size %d: the place was written: %v", c.size, place)
					}
				}
				sentinelsIntact(t, whole, c.n)
				if mode == "auto" && c.size < large && ts[0].sr.driven.Load() == before {
					t.Errorf("size %d: the frame was not read by the wait", c.size)
				}
			}
		})
	}
}
