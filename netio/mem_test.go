package netio

import (
	"bytes"
	"kylix/core/kx"
	"kylix/netio/memnet"
	"strings"
	"sync"
	"testing"
	"time"
)

// transportJob is what the shared exchange test needs from either transport.
func exchangeAll(t *testing.T, ts []kx.Transport, sizes []int) {
	t.Helper()
	n := len(ts)
	payload := func(src, dst, i, size int) []byte {
		b := make([]byte, size)
		for k := range b {
			b[k] = byte(src*31 + dst*7 + i*3 + k)
		}
		return b
	}
	tagOf := func(i int) kx.Tag {
		return kx.Tag{FP: fpAll, Seq: 3, Layer: uint8(i % 3), Phase: kx.Phase(1 + i%7)}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*n*n*len(sizes))
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := ts[r]
			tr.Receiver().Begin(3, fpAll)
			for dst := 0; dst < n; dst++ {
				for i, size := range sizes {
					p := payload(r, dst, i, size)
					// Split in two to exercise the gather of several buffers.
					if err := tr.Sender().Send(dst, tagOf(i), p[:size/2], p[size/2:]); err != nil {
						errs <- err
						return
					}
				}
			}
			for src := 0; src < n; src++ {
				for i, size := range sizes {
					b, err := tr.Receiver().Recv(src, tagOf(i))
					if err != nil {
						errs <- err
						return
					}
					if !bytes.Equal(b, payload(src, r, i, size)) {
						errs <- kx.Errorf(kx.CodeInternal, "rank %d: wrong payload from %d (size %d, got %d bytes)", r, src, size, len(b))
						return
					}
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

func memTransports(ms []*memnet.Mem) []kx.Transport {
	ts := make([]kx.Transport, len(ms))
	for i, m := range ms {
		ts[i] = m
	}
	return ts
}

func TestMemExchange(t *testing.T) {
	for n := 1; n <= 5; n++ {
		ms := memnet.NewJob(n, 2*time.Second)
		exchangeAll(t, memTransports(ms), []int{0, 1, 1 << 20})
		st := ms[0].Stats()
		if len(st) != n || st[n-1].MsgsSent != 3 || st[n-1].BytesSent != 1<<20+1 || st[n-1].MsgsRecv != 3 {
			t.Fatalf("n=%d stats %+v", n, st)
		}
		for _, m := range ms {
			m.Close()
		}
	}
}

func TestMemSendCopies(t *testing.T) {
	ms := memnet.NewJob(2, time.Second)
	buf := []byte("hello")
	ms[0].Sender().Send(1, kx.Tag{FP: fpAll, Phase: 1}, buf)
	buf[0] = 'j'
	b, err := ms[1].Receiver().Recv(0, kx.Tag{FP: fpAll, Phase: 1})
	if err != nil || string(b) != "hello" {
		t.Fatalf("got %q %v", b, err)
	}
	if err := ms[0].Sender().Send(2, kx.Tag{FP: fpAll}, nil); kx.CodeOf(err) != kx.CodeArg {
		t.Fatalf("send to rank 2 of 2: %v", err)
	}
}

func TestMemMismatchAndAbort(t *testing.T) {
	ms := memnet.NewJob(3, 2*time.Second)
	ms[0].Receiver().Begin(0, fpAll)
	ms[1].Receiver().Begin(0, fpRed)
	ms[2].Receiver().Begin(0, fpAll)
	ms[1].Sender().Send(0, kx.Tag{FP: fpRed, Phase: kx.PhaseSmall}, []byte{1})
	_, err := ms[0].Receiver().Recv(1, kx.Tag{FP: fpAll, Phase: kx.PhaseSmall})
	wantErr(t, err, kx.CodeMismatch, "rank 1 called reduce but this rank called allreduce")
	// Rank 0 aborts: rank 2, waiting on someone else, fails at once with the same code.
	go ms[0].Abort(0, err)
	within(t, time.Second, func() { _, err = ms[2].Receiver().Recv(1, kx.Tag{FP: fpAll, Phase: kx.PhaseSmall}) })
	wantErr(t, err, kx.CodeMismatch, "rank 1 called reduce", "reported by rank 0")
}

func TestMemKillAndClose(t *testing.T) {
	ms := memnet.NewJob(3, 3*time.Second)
	for _, m := range ms {
		m.Receiver().Begin(0, fpAll)
	}
	ms[2].Sender().Send(0, kx.Tag{FP: fpAll, Phase: 1}, []byte("bye"))
	var err error
	done := make(chan struct{})
	go func() { _, err = ms[0].Receiver().Recv(1, kx.Tag{FP: fpAll, Phase: 1}); close(done) }()
	time.Sleep(10 * time.Millisecond)
	within(t, time.Second, func() { ms[1].Kill(); <-done })
	wantErr(t, err, kx.CodePeer, "rank 1")
	wantErr(t, ms[0].Sender().Send(1, kx.Tag{FP: fpAll, Phase: 1}), kx.CodePeer, "rank 1")
	wantErr(t, ms[1].Sender().Send(0, kx.Tag{FP: fpAll, Phase: 1}), kx.CodePeer, "killed")

	ms[2].Close()
	if b, err := ms[0].Receiver().Recv(2, kx.Tag{FP: fpAll, Phase: 1}); err != nil || string(b) != "bye" {
		t.Fatalf("message sent before close: %q %v", b, err)
	}
	_, err = ms[0].Receiver().Recv(2, kx.Tag{FP: fpAll, Phase: 1})
	wantErr(t, err, kx.CodePeer, "rank 2 has finalized")
	_, err = ms[2].Receiver().Recv(0, kx.Tag{FP: fpAll, Phase: 1})
	wantErr(t, err, kx.CodeState, "closed")
	if got := ms[0].Peers().FailedRanks(); len(got) != 2 {
		t.Fatalf("FailedRanks = %v", got)
	}
}

func TestMemTimeout(t *testing.T) {
	ms := memnet.NewJob(2, 100*time.Millisecond)
	ms[0].Receiver().Begin(0, fpAll)
	var err error
	within(t, time.Second, func() { _, err = ms[0].Receiver().Recv(1, kx.Tag{FP: fpAll, Phase: kx.PhaseBcast}) })
	wantErr(t, err, kx.CodeTimeout, "rank 1", "bcast")
}

func TestMemAbortNotEchoed(t *testing.T) {
	ms := memnet.NewJob(3, time.Second)
	for _, m := range ms {
		m.Receiver().Begin(0, fpAll)
	}
	ms[0].Abort(0, kx.Errorf(kx.CodeTimeout, "rank 9 sent nothing"))
	// Rank 1 fails through rank 0's abort and aborts in turn: rank 2 keeps rank 0's report.
	_, err := ms[1].Receiver().Recv(0, kx.Tag{FP: fpAll, Phase: 1})
	wantErr(t, err, kx.CodeTimeout, "reported by rank 0")
	ms[1].Abort(0, err)
	_, err = ms[2].Receiver().Recv(0, kx.Tag{FP: fpAll, Phase: 1})
	wantErr(t, err, kx.CodeTimeout, "rank 9 sent nothing (reported by rank 0)")
	if strings.Count(err.Error(), "reported") != 1 {
		t.Fatalf("abort echoed: %v", err)
	}
}
