package netio

import (
	"errors"
	"kylix/core/kx"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"
)

// admitted listens for each of n ranks on 127.0.0.1 as a resize does before its admission, and
// returns the listeners and the admission naming their addresses.
func admitted(t *testing.T, n int) ([]net.Listener, kx.Admission) {
	t.Helper()
	lns := make([]net.Listener, n)
	a := kx.Admission{Peers: make([]string, n), Prev: make([]int, n), Job: 0x6d657368, Joiners: 1}
	for r := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[r], a.Peers[r], a.Prev[r] = ln, ln.Addr().String(), r
	}
	a.Prev[n-1] = -1
	return lns, a
}

// meshAll runs meshAdmitted for each rank of ranks (rank r starting after delay[r]) and returns
// the transports and errors by rank.
func meshAll(lns []net.Listener, a kx.Admission, o kx.Options, ranks []int, delay map[int]time.Duration) ([]*TCP, []error) {
	ts := make([]*TCP, len(lns))
	errs := make([]error, len(lns))
	var wg sync.WaitGroup
	for _, r := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(delay[r])
			ts[r], errs[r] = meshAdmitted(lns[r], o, r, a)
		}()
	}
	wg.Wait()
	return ts, errs
}

// A rank of the admission whose process is gone (its listener closed, as when the process dies
// after the members agreed) fails the others' mesh with CodePeer naming it, long before the
// timeout: rank 0 waits for it to dial (it never does), rank 2 dials it (refused).
func TestMeshAdmittedDeadRank(t *testing.T) {
	base := runtime.NumGoroutine()
	liveness := 300 * time.Millisecond
	o := kx.Options{Timeout: 60 * time.Second, Liveness: liveness, Secret: "s3cret", Log: "off"}
	lns, a := admitted(t, 3)
	lns[1].Close() // rank 1 died after the admission
	var errs []error
	within(t, 10*liveness, func() { _, errs = meshAll(lns, a, o, []int{0, 2}, nil) })
	for _, r := range []int{0, 2} {
		wantErr(t, errs[r], kx.CodePeer, "rank 1 ")
		var e *kx.Error
		if !errors.As(errs[r], &e) {
			t.Fatalf("rank %d: %T is not a *kx.Error", r, errs[r])
		}
		if blamed, ok := e.Rank(); !ok || blamed != 1 {
			t.Fatalf("rank %d: the error blames rank %d (%v), want rank 1: %v", r, blamed, ok, errs[r])
		}
	}
	noLeak(t, base)
}

// A rank that is alive but late (its listener open, its mesh started after several liveness
// periods) is waited for: the others' probes find it listening.
func TestMeshAdmittedLateRank(t *testing.T) {
	liveness := 200 * time.Millisecond
	o := kx.Options{Timeout: 60 * time.Second, Liveness: liveness, Secret: "s3cret", Log: "off", Shm: "off"}
	lns, a := admitted(t, 3)
	ts, errs := meshAll(lns, a, o, []int{0, 1, 2}, map[int]time.Duration{1: 4 * liveness})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for _, tr := range ts {
		tr.Close()
	}
}
