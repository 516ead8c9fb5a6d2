//go:build linux

package netio_test

import (
	"bytes"
	"fmt"
	"kylix/core/kx"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A wait on peer A is not held up by a flood from peer B. Rank 0 takes a stream of large
// messages from rank 2 (B) on one goroutine while it waits for one small message from rank 1
// (A) on another; or, paused, stops taking B's stream after its first frames, so that only the
// engine reads B's link (into the mailbox) while rank 0 waits for A. B sends until the small message has been delivered, and only then stops: so
// an engine that served B's link for as long as B had data (peers strictly in order) would
// deliver A's message only once B's flood ran out, which happens only at the flood's cap, far
// past anything a fair engine needs. The assertion is on that event, not on a time: A's
// message must be delivered while B is still sending (B has not reached its cap).
//
// The cap is the fail-safe: 256 MiB of flood, where a fair engine delivers A's message within
// a few of B's frames (the log says how many).
func TestWaitOnANotHeldUpByFloodFromB(t *testing.T) {
	for _, lk := range linkKinds {
		for _, frame := range []int{64 << 10, 1 << 20} { // through a ring, and by reference on one
			for _, paused := range []bool{false, true} {
				name := fmt.Sprintf("%s/%dKiB", lk.name, frame>>10)
				if paused {
					name += "/paused"
				}
				t.Run(name, func(t *testing.T) {
					ts := lk.start(t, 3, kx.Options{Timeout: 30 * time.Second})
					defer closeTransports(ts)
					f := newFlood(frame)
					f.paused = paused
					if err := f.run(ts); err != nil {
						t.Fatal(err)
					}
					t.Logf("A's message delivered with %d of B's frames sent, %d taken (cap %d)", f.sentAtA, f.takenAtA, f.cap)
				})
			}
		}
	}
}

// The check can fail: over a receiver that serves peers strictly in order (a model of such an
// engine: a wait on A returns only once B has nothing more to send), it reports the failure.
func TestFloodCheckCatchesInOrderEngine(t *testing.T) {
	ts := linkKinds[2].start(t, 3, kx.Options{Timeout: 30 * time.Second}) // in memory
	defer closeTransports(ts)
	f := newFlood(64 << 10)
	f.cap = 200 // the model makes the flood run to its cap: keep it short
	ts[0] = inOrder{ts[0], f}
	err := f.run(ts)
	if err == nil {
		t.Fatal("the check passed over a receiver that serves B before A")
	}
	t.Logf("as it should: %v", err)
}

// flood is one run of the fairness check.
type flood struct {
	frame, cap int
	paused     bool          // rank 0 stops taking B's frames after the first few until A's came
	sent       atomic.Int64  // B's frames sent
	taken      atomic.Int64  // B's frames rank 0 has taken
	bDone      chan struct{} // closed once B stopped sending (asked to, or at the cap)

	sentAtA, takenAtA int64 // when A's message was delivered
}

func newFlood(frame int) *flood {
	return &flood{frame: frame, cap: (256 << 20) / frame, bDone: make(chan struct{})}
}

var (
	floodFP  = kx.Fingerprint{Kind: kx.KindAllreduce, Dtype: uint8(kx.F32), Op: uint16(kx.Sum), Width: 1, Count: 9}
	floodTag = kx.Tag{FP: floodFP, Seq: 9, Layer: 1, Phase: kx.PhaseDense}
	aTag     = kx.Tag{FP: floodFP, Seq: 9, Layer: 2, Phase: kx.PhaseSmall}
)

// run floods rank 0 from rank 2 (B) and, once the flood runs, sends rank 0 a small message from
// rank 1 (A); it reports an error when A's message came only after B had stopped for good.
func (f *flood) run(ts []kx.Transport) error {
	for _, tr := range ts {
		tr.Receiver().Begin(9, floodFP)
	}
	big := bytes.Repeat([]byte{0xb1, 0x6d, 0x0f}, f.frame/3+1)[:f.frame]
	end := []byte{1} // B's last message: it has stopped
	small := []byte("A's small message")
	stop := make(chan struct{})    // A's message was delivered: B may stop
	running := make(chan struct{}) // B's flood is under way (or taking it failed)
	var runOnce sync.Once
	isRunning := func() { runOnce.Do(func() { close(running) }) }
	errs := make(chan error, 3)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // B floods rank 0 until told to stop, or up to the cap
		defer wg.Done()
		defer close(f.bDone)
		for i := 0; i < f.cap; i++ {
			select {
			case <-stop:
				i = f.cap
				continue
			default:
			}
			if err := ts[2].Sender().Send(0, floodTag, big); err != nil {
				errs <- fmt.Errorf("B's frame %d: %w", i, err)
				return
			}
			f.sent.Add(1)
			// B is a goroutine of this process, not a process of its own: let A's sender and
			// rank 0's wait have their turn between its frames, as the CPUs would between
			// processes. On the in-memory transport a send is a copy on this goroutine, and
			// with the CPUs busy elsewhere B could otherwise send its whole cap before the
			// goroutine that sends A's message ran again (seen once, in 14 runs of the netio
			// package under two busy loops). An engine that serves B first still fails the
			// check: it is the wait on A that returns late, not A's send.
			runtime.Gosched()
		}
		if err := ts[2].Sender().Send(0, floodTag, end); err != nil {
			errs <- fmt.Errorf("B's end: %w", err)
		}
	}()
	go func() { // rank 0 takes B's flood in turn
		defer wg.Done()
		for {
			b, err := ts[0].Receiver().Recv(2, floodTag)
			if err != nil {
				errs <- fmt.Errorf("taking B's frame %d: %w", f.taken.Load(), err)
				isRunning()
				return
			}
			if len(b) == len(end) {
				isRunning()
				return
			}
			if !bytes.Equal(b, big) {
				errs <- fmt.Errorf("B's frame %d: %d bytes, not the ones sent", f.taken.Load(), len(b))
			}
			ts[0].Receiver().Release(b)
			if f.taken.Add(1) == 8 {
				isRunning()
				if f.paused {
					<-stop
				}
			}
		}
	}()

	<-running
	var aErr error
	if err := ts[1].Sender().Send(0, aTag, small); err != nil {
		aErr = fmt.Errorf("A's send: %w", err)
	} else if got, err := ts[0].Receiver().Recv(1, aTag); err != nil || !bytes.Equal(got, small) {
		aErr = fmt.Errorf("A's message: %q, %v", got, err)
	}
	stopped := false
	select {
	case <-f.bDone:
		stopped = true
	default:
	}
	f.sentAtA, f.takenAtA = f.sent.Load(), f.taken.Load()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	if aErr != nil {
		return aErr
	}
	if stopped {
		return fmt.Errorf("A's message was delivered only after B's flood ran to its cap (%d frames of %d bytes): the wait on A was held up by B", f.cap, f.frame)
	}
	return nil
}

// inOrder models an engine that serves its peers strictly in order: rank 0's wait for A
// returns only after B has stopped sending (B's link has run dry).
type inOrder struct {
	kx.Transport
	f *flood
}

func (o inOrder) Receiver() kx.Receiver { return inOrderRecv{o.Transport.Receiver(), o.f} }

type inOrderRecv struct {
	kx.Receiver
	f *flood
}

func (r inOrderRecv) Recv(from int, tag kx.Tag) ([]byte, error) {
	if from == 1 {
		<-r.f.bDone
	}
	return r.Receiver.Recv(from, tag)
}
