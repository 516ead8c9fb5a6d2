//go:build linux

package netio

import (
	"bytes"
	"kylix/core/kx"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A wait on one peer is not held up by a flood from another. Rank 2 sends rank 0 a long stream
// of 64 KiB messages, which a goroutine of rank 0 takes in turn; once the stream runs, rank 1
// sends one small message and rank 0 waits for it. That wait must return while the stream is
// still going: a reader that served one link until it ran dry, or a wait that could not read
// its own peer while another wait holds the links, would see the whole stream through first.
// Over sockets (shm=off), rings (shm=auto) and in memory.
func TestWaitNotHeldUpByFlood(t *testing.T) {
	jobs := map[string]func(t *testing.T) []kx.Transport{
		"socket": func(t *testing.T) []kx.Transport { return tcpTransports(startShmJob(t, 3, "off")) },
		"ring":   func(t *testing.T) []kx.Transport { return tcpTransports(startShmJob(t, 3, "auto")) },
		"memory": func(t *testing.T) []kx.Transport { return memTransports(NewMemJob(3, 10*time.Second)) },
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
	const frames, size = 1500, 64 << 10
	for _, tr := range ts {
		tr.Receiver().Begin(9, fpAll)
	}
	floodTag := kx.Tag{FP: fpAll, Seq: 9, Layer: 1, Phase: kx.PhaseDense}
	smallTag := kx.Tag{FP: fpAll, Seq: 9, Layer: 2, Phase: kx.PhaseSmall}
	big := bytes.Repeat([]byte{0xb1, 0x6d}, size/2)
	small := []byte("the small message")

	var taken atomic.Int64 // flood messages rank 0 has taken
	running := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // rank 2 floods rank 0
		defer wg.Done()
		for i := 0; i < frames; i++ {
			if err := ts[2].Sender().Send(0, floodTag, big); err != nil {
				t.Errorf("flood message %d: %v", i, err)
				return
			}
		}
	}()
	go func() { // rank 0 takes the flood in turn
		defer wg.Done()
		for i := 0; i < frames; i++ {
			b, err := ts[0].Receiver().Recv(2, floodTag)
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
	within(t, 60*time.Second, func() {
		<-running
		if err := ts[1].Sender().Send(0, smallTag, small); err != nil {
			t.Error(err)
		}
		got, err = ts[0].Receiver().Recv(1, smallTag)
		during = taken.Load()
	})
	if err != nil || !bytes.Equal(got, small) {
		t.Fatalf("small message: %q, %v", got, err)
	}
	if during >= frames {
		t.Errorf("the wait on rank 1 returned only after all %d messages of rank 2's flood were taken", frames)
	}
	within(t, 60*time.Second, wg.Wait)
	t.Logf("the small message came with %d of %d flood messages taken", during, frames)
}
