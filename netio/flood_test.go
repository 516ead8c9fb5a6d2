//go:build linux

package netio

import (
	"bytes"
	"kylix/core/kx"
	"kylix/netio/memnet"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A wait on one peer is not held up by a flood from another. Rank 2 sends rank 0 a stream of
// 64 KiB messages, which a goroutine of rank 0 takes in turn; once the stream runs, rank 1
// sends one small message and rank 0 waits for it. The stream goes on until that wait returns
// (or, bounded, until maxFlood messages): a reader that served one link until it ran dry, or a
// wait that could not read its own peer while another wait holds the links, would see the
// stream through to its bound first. (A stream of fixed length would make this a race
// against the clock: on a loaded machine the small message's goroutine may not run at all
// before a short stream ends.) Over sockets (shm=off), rings (shm=auto) and in memory.
func TestWaitNotHeldUpByFlood(t *testing.T) {
	jobs := map[string]func(t *testing.T) []kx.Transport{
		"socket": func(t *testing.T) []kx.Transport { return tcpTransports(startShmJob(t, 3, "off")) },
		"ring":   func(t *testing.T) []kx.Transport { return tcpTransports(startShmJob(t, 3, "auto")) },
		"memory": func(t *testing.T) []kx.Transport { return memTransports(memnet.NewJob(3, 10*time.Second)) },
	}
	for name, start := range jobs {
		t.Run(name, func(t *testing.T) {
			ts := start(t)
			defer func() {
				for _, tr := range ts {
					tr.Close()
				}
			}()
			floodOver(t, ts)
		})
	}
}

func floodOver(t *testing.T, ts []kx.Transport) {
	const maxFlood, size = 200000, 64 << 10
	for _, tr := range ts {
		tr.Receiver().Begin(9, fpAll)
	}
	floodTag := kx.Tag{FP: fpAll, Seq: 9, Layer: 1, Phase: kx.PhaseDense}
	smallTag := kx.Tag{FP: fpAll, Seq: 9, Layer: 2, Phase: kx.PhaseSmall}
	big := bytes.Repeat([]byte{0xb1, 0x6d}, size/2)
	last := []byte{0xe} // the stream's end: a message of another length
	small := []byte("the small message")

	var taken, sent atomic.Int64 // flood messages rank 0 has taken, rank 2 has sent
	var stop atomic.Bool         // the small message is in: the stream may end
	running := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // rank 2 floods rank 0 until told to stop, then ends the stream
		defer wg.Done()
		for !stop.Load() && sent.Load() < maxFlood {
			if err := ts[2].Sender().Send(0, floodTag, big); err != nil {
				t.Errorf("flood message %d: %v", sent.Load(), err)
				return
			}
			sent.Add(1)
		}
		if err := ts[2].Sender().Send(0, floodTag, last); err != nil {
			t.Errorf("the flood's last message: %v", err)
		}
	}()
	go func() { // rank 0 takes the flood in turn, to its end
		defer wg.Done()
		for i := 0; ; i++ {
			b, err := ts[0].Receiver().Recv(2, floodTag)
			if err == nil && bytes.Equal(b, last) {
				return
			}
			if err != nil || !bytes.Equal(b, big) {
				t.Errorf("flood message %d: %d bytes, %v", i, len(b), err)
				return
			}
			ts[0].Receiver().Release(b)
			if taken.Add(1) == 8 {
				close(running)
			}
		}
	}()

	var got []byte
	var err error
	var during int64
	within(t, 120*time.Second, func() {
		<-running
		if err := ts[1].Sender().Send(0, smallTag, small); err != nil {
			t.Error(err)
		}
		got, err = ts[0].Receiver().Recv(1, smallTag)
		during = taken.Load()
		stop.Store(true)
	})
	if err != nil || !bytes.Equal(got, small) {
		t.Fatalf("small message: %q, %v", got, err)
	}
	within(t, 120*time.Second, wg.Wait)
	if during >= maxFlood {
		t.Errorf("the wait on rank 1 returned only after all %d messages of rank 2's flood were taken", maxFlood)
	}
	t.Logf("the small message came with %d flood messages taken (%d sent in all)", during, sent.Load())
}
