package netio

import (
	"errors"
	"io"
	"kylix/core/kx"
	"kylix/netio/internal/nettest"
	"kylix/netio/rendezvous"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// startJob connects n ranks over 127.0.0.1, through a rendezvous server unless peers are given.
// secrets[r] defaults to "s3cret". It returns the transports and errors by rank.
func startJob(t testing.TB, n int, timeout time.Duration, peers []string, secrets map[int]string, only func(r int) bool) ([]*TCP, []error) {
	t.Helper()
	rdv := ""
	if peers == nil && n > 1 {
		srv, err := rendezvous.NewServer("127.0.0.1:0", n, "s3cret", timeout)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		rdv = srv.Addr()
	}
	ts := make([]*TCP, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		if only != nil && !only(r) {
			continue
		}
		secret, ok := secrets[r]
		if !ok {
			secret = "s3cret"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts[r], errs[r] = connect(kx.Options{Rank: r, Size: n, Peers: peers, Rendezvous: rdv, Timeout: timeout, Secret: secret}, "127.0.0.1")
		}()
	}
	wg.Wait()
	return ts, errs
}

func mustJob(t testing.TB, n int, timeout time.Duration) []*TCP {
	t.Helper()
	ts, errs := startJob(t, n, timeout, nil, nil, nil)
	for r, err := range errs {
		if err != nil {
			closeAll(ts)
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return ts
}

func closeAll(ts []*TCP) {
	var wg sync.WaitGroup
	for _, tr := range ts {
		if tr != nil {
			wg.Add(1)
			go func() { defer wg.Done(); tr.Close() }()
		}
	}
	wg.Wait()
}

// noLeak fails if goroutines started after base are still running shortly after.

func tcpTransports(ts []*TCP) []kx.Transport {
	out := make([]kx.Transport, len(ts))
	for i, tr := range ts {
		out[i] = tr
	}
	return out
}

func TestTCPMesh(t *testing.T) {
	base := runtime.NumGoroutine()
	for n := 1; n <= 5; n++ {
		ts := mustJob(t, n, 5*time.Second)
		for r, tr := range ts {
			if tr.Rank() != r || tr.Size() != n || tr.Job() != ts[0].Job() {
				t.Fatalf("n=%d rank %d: rank %d size %d job %x (rank 0 job %x)", n, r, tr.Rank(), tr.Size(), tr.Job(), ts[0].Job())
			}
		}
		exchangeAll(t, tcpTransports(ts), []int{0, 1, 1 << 20})
		for r, tr := range ts {
			for p, st := range tr.Stats() {
				if st.Rank != p || st.MsgsSent != 3 || st.MsgsRecv != 3 || st.BytesSent != 1<<20+1 || st.BytesRecv != 1<<20+1 {
					t.Fatalf("n=%d rank %d stats for %d: %+v", n, r, p, st)
				}
			}
		}
		closeAll(ts)
	}
	noLeak(t, base)
}

func TestTCPStaticPeers(t *testing.T) {
	base := runtime.NumGoroutine()
	peers := nettest.FreePorts(t, 3)
	// Rank 0 starts alone; a stray connection that does not speak the protocol reaches it
	// first and is dropped, not fatal; then ranks 1 and 2 come.
	var ts0 []*TCP
	var errs0 []error
	done0 := make(chan struct{})
	go func() {
		defer close(done0)
		ts0, errs0 = startJob(t, 3, 5*time.Second, peers, nil, func(r int) bool { return r == 0 })
	}()
	var c net.Conn
	for i := 0; i < 200 && c == nil; i++ {
		c, _ = net.Dial("tcp", peers[0])
		if c == nil {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if c == nil {
		t.Fatal("rank 0 never listened")
	}
	c.Write([]byte(strings.Repeat("GET / HTTP/1.0\r\n", 8)))
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err := io.Copy(io.Discard, c)
	c.Close()
	if errors.Is(err, os.ErrDeadlineExceeded) { // EOF or a reset both mean it was dropped
		t.Fatalf("the stray connection was not dropped: %v", err)
	}
	ts, errs := startJob(t, 3, 5*time.Second, peers, nil, func(r int) bool { return r != 0 })
	<-done0
	ts[0], errs[0] = ts0[0], errs0[0]
	for r, err := range errs {
		if err != nil {
			closeAll(ts)
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	defer closeAll(ts)
	if ts[0].Job() != staticJobID("s3cret", peers) || ts[2].Job() != ts[0].Job() {
		t.Fatalf("job ids %x %x", ts[0].Job(), ts[2].Job())
	}
	exchangeAll(t, tcpTransports(ts), []int{0, 5, 70000})
	closeAll(ts)
	noLeak(t, base)
}

func TestTCPWrongSecret(t *testing.T) {
	base := runtime.NumGoroutine()
	peers := nettest.FreePorts(t, 2)
	ts, errs := startJob(t, 2, 3*time.Second, peers, map[int]string{1: "guess"}, nil)
	closeAll(ts)
	wantErr(t, errs[0], kx.CodeAuth, "rank 1 failed the handshake: wrong secret")
	wantErr(t, errs[1], kx.CodeAuth, "rank 0 failed the handshake: wrong secret")
	noLeak(t, base)
}

func TestTCPPeerGone(t *testing.T) {
	base := runtime.NumGoroutine()
	ts := mustJob(t, 3, 10*time.Second)
	for _, tr := range ts {
		tr.Receiver().Begin(0, fpAll)
	}
	ts[2].Send(0, kx.Tag{FP: fpAll, Phase: 1}, []byte("before bye"))
	// Rank 2 finalizes while rank 0 waits for more from it: rank 0 fails at once, after reading
	// what rank 2 sent first.
	var err error
	done := make(chan struct{})
	go func() {
		if b, e := ts[0].Receiver().Recv(2, kx.Tag{FP: fpAll, Phase: 1}); e != nil || string(b) != "before bye" {
			err = kx.Errorf(kx.CodeInternal, "first recv: %q %v", b, e)
		} else {
			_, err = ts[0].Receiver().Recv(2, kx.Tag{FP: fpAll, Phase: 2})
		}
		close(done)
	}()
	time.Sleep(20 * time.Millisecond)
	within(t, time.Second, func() { ts[2].Close(); <-done })
	wantErr(t, err, kx.CodePeer, "rank 2 has finalized")
	// Once rank 1 has heard the bye too (a send may still succeed before: the kernel takes it),
	// sending to rank 2 fails.
	_, err = ts[1].Receiver().Recv(2, kx.Tag{FP: fpAll, Phase: 1})
	wantErr(t, err, kx.CodePeer, "rank 2 has finalized")
	wantErr(t, ts[1].Send(2, kx.Tag{FP: fpAll, Phase: 1}, []byte("x")), kx.CodePeer, "rank 2")

	// Rank 1 "crashes": its connections close without a bye.
	done = make(chan struct{})
	go func() { _, err = ts[0].Receiver().Recv(1, kx.Tag{FP: fpAll, Phase: 3}); close(done) }()
	time.Sleep(20 * time.Millisecond)
	within(t, time.Second, func() {
		for _, p := range ts[1].peers {
			if p != nil {
				p.conn.Close()
			}
		}
		<-done
	})
	wantErr(t, err, kx.CodePeer, "rank 1 is lost")
	if got := ts[0].Peers().FailedRanks(); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("FailedRanks = %v", got)
	}
	closeAll(ts)
	noLeak(t, base)
}

func TestTCPSilence(t *testing.T) {
	ts := mustJob(t, 2, 300*time.Millisecond)
	defer closeAll(ts)
	ts[0].Receiver().Begin(4, fpAll)
	var err error
	took := within(t, 2*time.Second, func() { _, err = ts[0].Receiver().Recv(1, kx.Tag{FP: fpAll, Seq: 4, Layer: 0, Phase: kx.PhaseUp}) })
	wantErr(t, err, kx.CodeTimeout, "rank 1 sent nothing", "up", "collective 4")
	if took < 300*time.Millisecond {
		t.Fatalf("timed out after %v", took)
	}
}

func TestTCPMismatchAndAbort(t *testing.T) {
	ts := mustJob(t, 3, 5*time.Second)
	defer closeAll(ts)
	ts[0].Receiver().Begin(0, fpAll)
	ts[1].Receiver().Begin(0, fpRed)
	ts[2].Receiver().Begin(0, fpAll)
	if err := ts[1].Send(0, kx.Tag{FP: fpRed, Phase: kx.PhaseSmall}, []byte{1}); err != nil {
		t.Fatal(err)
	}
	_, err := ts[0].Receiver().Recv(1, kx.Tag{FP: fpAll, Phase: kx.PhaseSmall})
	wantErr(t, err, kx.CodeMismatch, "rank 1 called reduce but this rank called allreduce")
	done := make(chan struct{})
	var err2 error
	go func() { _, err2 = ts[2].Receiver().Recv(1, kx.Tag{FP: fpAll, Phase: kx.PhaseSmall}); close(done) }()
	within(t, time.Second, func() { ts[0].Abort(0, err); <-done })
	wantErr(t, err2, kx.CodeMismatch, "rank 1 called reduce", "reported by rank 0")
	// The next collective works.
	for _, tr := range ts {
		tr.Receiver().Begin(1, fpAll)
	}
	exchangeOne(t, ts[2], ts[1], kx.Tag{FP: fpAll, Seq: 1, Phase: kx.PhaseDense})
}

func exchangeOne(t *testing.T, from, to *TCP, tag kx.Tag) {
	t.Helper()
	if err := from.Send(to.Rank(), tag, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if b, err := to.Receiver().Recv(from.Rank(), tag); err != nil || string(b) != "ping" {
		t.Fatalf("got %q %v", b, err)
	}
}

func TestConnectTimeoutNamesMissing(t *testing.T) {
	base := runtime.NumGoroutine()
	peers := nettest.FreePorts(t, 3)
	var err error
	within(t, 3*time.Second, func() {
		_, errs := startJob(t, 3, 400*time.Millisecond, peers, nil, func(r int) bool { return r == 1 })
		err = errs[1]
	})
	wantErr(t, err, kx.CodeTimeout, "rank 1 timed out", "ranks [0 2]", "rank 0 at "+peers[0], "refused")
	noLeak(t, base)
}

func TestConnectErrors(t *testing.T) {
	tr, err := Connect(kx.Options{Rank: 0, Size: 1, Timeout: time.Second})
	if err != nil || tr.Size() != 1 {
		t.Fatalf("size 1: %v", err)
	}
	tr.Receiver().Begin(0, fpAll)
	exchangeOne(t, tr, tr, kx.Tag{FP: fpAll, Phase: 1})
	tr.Close()
	wantErr(t, tr.Send(0, kx.Tag{FP: fpAll}, nil), kx.CodeState, "closed")

	_, err = Connect(kx.Options{Rank: 2, Size: 2})
	wantErr(t, err, kx.CodeArg, "rank=2")
	_, err = Connect(kx.Options{Rank: 0, Size: 2})
	wantErr(t, err, kx.CodeArg, "peers= or rendezvous=")

	// Cannot bind: the port is taken.
	ln, lerr := net.Listen("tcp", "127.0.0.1:0")
	if lerr != nil {
		t.Fatal(lerr)
	}
	defer ln.Close()
	_, err = connect(kx.Options{Rank: 0, Size: 2, Peers: []string{ln.Addr().String(), "127.0.0.1:1"}, Timeout: time.Second}, "127.0.0.1")
	wantErr(t, err, kx.CodeNet, "rank 0 cannot listen on", ln.Addr().String())
}

func TestTCPSendBound(t *testing.T) {
	ts := mustJob(t, 2, time.Second)
	defer closeAll(ts)
	// A message over the bound is refused before anything is written (no 4 GiB allocation:
	// the slices alias one small buffer).
	b := make([]byte, 1<<20)
	bufs := make([][]byte, MaxPayload/len(b)+1)
	for i := range bufs {
		bufs[i] = b
	}
	wantErr(t, ts[0].Send(1, kx.Tag{FP: fpAll}, bufs...), kx.CodeArg, "exceeds the frame bound")
	ts[0].Receiver().Begin(0, fpAll)
	ts[1].Receiver().Begin(0, fpAll)
	exchangeOne(t, ts[0], ts[1], kx.Tag{FP: fpAll, Phase: 1})
}

// A message larger than a write chunk goes out in several writev calls, each with its own
// deadline, and arrives whole.
func TestTCPLargeMessage(t *testing.T) {
	ts := mustJob(t, 2, 2*time.Second)
	defer closeAll(ts)
	ts[0].Receiver().Begin(0, fpAll)
	ts[1].Receiver().Begin(0, fpAll)
	n := writeChunk*2 + 12345
	a := make([]byte, n/3)
	b := make([]byte, n-len(a))
	for i := range a {
		a[i] = byte(i)
	}
	for i := range b {
		b[i] = byte(i * 7)
	}
	errc := make(chan error, 1)
	go func() { errc <- ts[0].Send(1, kx.Tag{FP: fpAll, Phase: 1}, a, nil, b) }()
	got, err := ts[1].Receiver().Recv(0, kx.Tag{FP: fpAll, Phase: 1})
	if err != nil || len(got) != n {
		t.Fatalf("got %d bytes, %v", len(got), err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if got[i] != a[i] {
			t.Fatalf("byte %d differs", i)
		}
	}
	for i := range b {
		if got[len(a)+i] != b[i] {
			t.Fatalf("byte %d differs", len(a)+i)
		}
	}
}

// BenchmarkTCPSend1MiB measures one-way loopback throughput; the receiver gives each payload
// back with Release, as a caller done with it may.
func BenchmarkTCPSend1MiB(b *testing.B) { benchTCPSend(b, true) }

// BenchmarkTCPSend1MiBNoRelease is the same when every payload is a fresh allocation.
func BenchmarkTCPSend1MiBNoRelease(b *testing.B) { benchTCPSend(b, false) }

func benchTCPSend(b *testing.B, release bool) {
	ts := mustJob(b, 2, 10*time.Second)
	defer closeAll(ts)
	ts[0].Receiver().Begin(0, fpAll)
	ts[1].Receiver().Begin(0, fpAll)
	msg := make([]byte, 1<<20)
	b.SetBytes(int64(len(msg)))
	b.ResetTimer()
	done := make(chan error, 1)
	go func() {
		for i := 0; i < b.N; i++ {
			b, err := ts[1].Receiver().Recv(0, kx.Tag{FP: fpAll, Phase: 1})
			if err != nil {
				done <- err
				return
			}
			if release {
				ts[1].Receiver().Release(b)
			}
		}
		done <- nil
	}()
	for i := 0; i < b.N; i++ {
		if err := ts[0].Send(1, kx.Tag{FP: fpAll, Phase: 1}, msg); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRawTCP1MiB is the baseline: plain writes over loopback read into a reused buffer.
func BenchmarkRawTCP1MiB(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c1, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c1.Close()
	c2, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer c2.Close()
	msg := make([]byte, 1<<20)
	b.SetBytes(int64(len(msg)))
	b.ResetTimer()
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, len(msg))
		for i := 0; i < b.N; i++ {
			if _, err := io.ReadFull(c2, buf); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 0; i < b.N; i++ {
		if _, err := c1.Write(msg); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
