//go:build linux

package netio

import (
	"kylix/core/kx"
	"runtime"
	"sync"
	"testing"
	"time"
)

// A small step allocates nothing once warm, over either link: the send writes from the caller's
// buffer, the wait reads on its own thread and hands the payload over from the pool. Counted
// over both ranks (the count is the process's): an allocation a step would be thousands.
func TestSmallStepAllocatesNothing(t *testing.T) {
	for _, shm := range []string{"off", "auto", "lanes"} {
		t.Run("shm="+shm, func(t *testing.T) {
			lanes := shm == "lanes" // the shared-memory lanes (netio/lanes)
			if lanes {
				shm = "auto"
			}
			ts := startShmJob(t, 2, shm)
			defer closeAll(ts)
			for _, tr := range ts {
				if lanes && !tr.ClaimLanes() {
					t.Fatal("the lanes of a new transport were claimed already")
				}
			}
			const calls = 2000
			// An allocation a step would show in every attempt; other goroutines of the test
			// process (a loaded machine's timers, the package's other jobs) only in some.
			var n uint64
			for attempt := uint64(0); attempt < 3; attempt++ {
				var mallocs [2]uint64
				var wg sync.WaitGroup
				errs := make([]error, 2)
				for r := range ts {
					wg.Add(1)
					go func() {
						defer wg.Done()
						tr, other := ts[r], 1-r
						rcv, snd := tr.Receiver(), tr.Sender()
						bufs := [][]byte{make([]byte, 32)} // a list of the caller's, as core keeps one
						step := func(seq uint64) error {
							rcv.Begin(seq, fpAll)
							tag := kx.Tag{FP: fpAll, Seq: seq, Layer: 1, Phase: kx.PhaseDense}
							if lanes {
								if err := tr.LanePut(other, tag, bufs[0]); err != nil {
									return err
								}
								_, _, err := tr.LaneAwait(other, tag)
								if err == nil {
									tr.LaneDone(other, tag)
								}
								return err
							}
							if err := snd.Send(other, tag, bufs...); err != nil {
								return err
							}
							b, err := rcv.Recv(other, tag)
							rcv.Release(b)
							return err
						}
						seq := 1 + attempt*10*calls
						for warm := seq + 100; seq < warm; seq++ {
							if errs[r] = step(seq); errs[r] != nil {
								return
							}
						}
						var ms runtime.MemStats
						if r == 0 {
							runtime.ReadMemStats(&ms)
							mallocs[0] = ms.Mallocs
						}
						for end := seq + calls; seq < end; seq++ {
							if errs[r] = step(seq); errs[r] != nil {
								return
							}
						}
						if r == 0 {
							runtime.ReadMemStats(&ms)
							mallocs[1] = ms.Mallocs
						}
					}()
				}
				within(t, 60*time.Second, wg.Wait)
				for r, err := range errs {
					if err != nil {
						t.Fatalf("rank %d: %v", r, err)
					}
				}
				n = mallocs[1] - mallocs[0]
				t.Logf("%d allocations over %d steps", n, calls)
				if n <= calls/20 {
					break
				}
			}
			if n > calls/20 {
				t.Errorf("%d allocations over %d small steps on 2 ranks, want next to none", n, calls)
			}
		})
	}
}
