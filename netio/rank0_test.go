package netio

import (
	"kylix/core/kx"
	"kylix/netio/internal/nettest"
	"kylix/netio/rendezvous"
	"net"
	"sync"
	"testing"
	"time"
)

// connectRanks runs connect for each rank of ranks with the given rendezvous, rank 0 (if listed)
// starting after delay0, and returns the transports and errors by rank.
func connectRanks(n int, ranks []int, rdv, listenHost string, secrets map[int]string, timeout, delay0 time.Duration) ([]*TCP, []error) {
	ts := make([]*TCP, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for _, r := range ranks {
		secret, ok := secrets[r]
		if !ok {
			secret = "s3cret"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r == 0 {
				time.Sleep(delay0)
			}
			ts[r], errs[r] = connect(kx.Options{Rank: r, Size: n, Rendezvous: rdv, Timeout: timeout, Secret: secret}, listenHost)
		}()
	}
	wg.Wait()
	return ts, errs
}

// portFree tells whether addr can be bound now.
func portFree(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

func checkMesh(t *testing.T, ts []*TCP, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			closeAll(ts)
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	job := ts[0].Job()
	for r, tr := range ts {
		if tr.Rank() != r || tr.Job() != job {
			t.Errorf("rank %d: Rank()=%d Job()=%x, rank 0 has job %x", r, tr.Rank(), tr.Job(), job)
		}
	}
}

// Under mpirun/srun nobody serves the rendezvous: rank 0 does, even when it starts last, and
// stops serving once the table is out.
func TestConnectRankZeroServesRendezvous(t *testing.T) {
	rdv := nettest.FreePorts(t, 1)[0]
	ts, errs := connectRanks(3, []int{0, 1, 2}, rdv, "127.0.0.1", nil, 5*time.Second, 300*time.Millisecond)
	checkMesh(t, ts, errs)
	closeAll(ts)
	if !portFree(rdv) {
		t.Errorf("rank 0 still serves the rendezvous at %s", rdv)
	}
}

// A name for this host (here localhost) works too: rank 0 serves on every interface and, with
// no listen host, each rank advertises the rendezvous host, the one name every rank reaches.
func TestConnectRankZeroServesByName(t *testing.T) {
	_, port, _ := net.SplitHostPort(nettest.FreePorts(t, 1)[0])
	rdv := net.JoinHostPort("localhost", port)
	ts, errs := connectRanks(2, []int{0, 1}, rdv, "", nil, 5*time.Second, 100*time.Millisecond)
	checkMesh(t, ts, errs)
	closeAll(ts)
}

// When the address is taken (kylixrun serves it), rank 0 registers there like the others.
func TestConnectRankZeroUsesExistingRendezvous(t *testing.T) {
	srv, err := rendezvous.NewServer("127.0.0.1:0", 3, "s3cret", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts, errs := connectRanks(3, []int{0, 1, 2}, srv.Addr(), "127.0.0.1", nil, 5*time.Second, 0)
	checkMesh(t, ts, errs)
	closeAll(ts)
	if err := srv.Wait(); err != nil {
		t.Errorf("the existing rendezvous: %v", err)
	}
}

func TestConnectRankZeroRendezvousRefusals(t *testing.T) {
	// A rank with another secret is refused by rank 0's rendezvous; rank 0 then times out
	// naming it.
	rdv := nettest.FreePorts(t, 1)[0]
	_, errs := connectRanks(2, []int{0, 1}, rdv, "127.0.0.1", map[int]string{1: "wrong"}, time.Second, 0)
	wantErr(t, errs[1], kx.CodeAuth, "wrong secret")
	wantErr(t, errs[0], kx.CodeTimeout, "ranks [1] have not registered")
	if !portFree(rdv) {
		t.Errorf("rank 0 still serves the rendezvous at %s after failing", rdv)
	}

	// Rank 1 alone: nobody serves, it gives up at its timeout naming the address.
	start := time.Now()
	const giveUp = 500 * time.Millisecond
	_, errs = connectRanks(2, []int{1}, rdv, "127.0.0.1", nil, giveUp, 0)
	wantErr(t, errs[1], kx.CodeTimeout, "could not reach the rendezvous at "+rdv)
	if d := time.Since(start); d > 10*giveUp { // a fail-safe: the message says it was its timeout
		t.Errorf("rank 1 took %v to give up", d)
	}

	for _, bad := range []string{"127.0.0.1", "127.0.0.1:0"} {
		_, errs = connectRanks(2, []int{0}, bad, "127.0.0.1", nil, time.Second, 0)
		wantErr(t, errs[0], kx.CodeArg, "rendezvous=")
	}
}
