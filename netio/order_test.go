//go:build linux

package netio

import (
	"encoding/binary"
	"kylix/core/kx"
	"testing"
	"time"
)

// A key's messages are taken in the order they were sent, also when a reader goroutine files
// one between a Recv's first look and its driving wait, which then reads the next one off the
// link: handed over, that one would come first (the wait takes the one filed instead, WantOf).
// The moment is made wide here (recvLooked); it came by chance as a stream message "not the
// ones sent" in TestLinkDeathStream.
func TestRecvKeepsKeyOrder(t *testing.T) {
	recvLooked = func() { time.Sleep(20 * time.Microsecond) }
	defer func() { recvLooked = nil }()
	for _, shm := range []string{"auto", "off"} {
		t.Run("shm="+shm, func(t *testing.T) {
			ts := startShmJob(t, 2, shm)
			defer closeAll(ts)
			const n = 5000
			tag := kx.Tag{FP: fpAll, Seq: 1, Layer: 1, Phase: kx.PhaseDense}
			for _, tr := range ts {
				tr.Receiver().Begin(1, fpAll)
			}
			sent := make(chan error, 1)
			go func() {
				var b [64]byte
				for i := range n {
					binary.LittleEndian.PutUint64(b[:], uint64(i))
					if err := ts[1].Sender().Send(0, tag, b[:]); err != nil {
						sent <- err
						return
					}
					if i%4 == 0 { // now and then behind the receiver, whose first look then finds nothing
						time.Sleep(time.Microsecond)
					}
				}
				sent <- nil
			}()
			out := 0
			within(t, 60*time.Second, func() {
				for i := range n {
					b, err := ts[0].Receiver().Recv(1, tag)
					if err != nil {
						t.Errorf("message %d: %v", i, err)
						return
					}
					if got := binary.LittleEndian.Uint64(b); got != uint64(i) {
						if out++; out <= 3 {
							t.Errorf("message %d taken where message %d was due", got, i)
						}
					}
					ts[0].Receiver().Release(b)
				}
			})
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			if out > 0 {
				t.Errorf("%d of %d messages out of order", out, n)
			}
		})
	}
}
