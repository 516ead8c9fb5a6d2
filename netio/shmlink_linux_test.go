//go:build linux

package netio

import (
	"bytes"
	"kylix/core/kx"
	"kylix/netio/cpus"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// startShmJob connects n ranks over static loopback peers with the given shm option.
func startShmJob(t testing.TB, n int, shmOpt string) []*TCP {
	t.Helper()
	peers := freePorts(t, n)
	ts := make([]*TCP, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts[r], errs[r] = connect(kx.Options{Rank: r, Size: n, Peers: peers, Timeout: 10 * time.Second, Secret: "s3cret", Shm: shmOpt}, "127.0.0.1")
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			closeAll(ts)
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return ts
}

// Ranks of one process share a host and a user: with shm=auto every pair gets a segment and
// the transport suite's exchange goes through it; with shm=off none does and the wire is TCP.
func TestShmPeers(t *testing.T) {
	base := runtime.NumGoroutine()
	for _, mode := range []string{"auto", "off"} {
		ts := startShmJob(t, 3, mode)
		for r, tr := range ts {
			st := tr.ShmStats()
			want := 2
			if mode == "off" {
				want = 0
			}
			if st.Peers != want {
				t.Errorf("shm=%s rank %d: %d shared-memory peers, want %d", mode, r, st.Peers, want)
			}
			for p := range ts {
				if !tr.SameHost(p) {
					t.Errorf("shm=%s rank %d: SameHost(%d) false", mode, r, p)
				}
			}
		}
		exchangeAll(t, tcpTransports(ts), []int{0, 1, 100, 1 << 20, 3 << 20})
		testExpect(t, tcpTransports(ts))
		closeAll(ts)
	}
	noLeak(t, base)
}

// The pairing rule: another host identity or another user means TCP (a real job across two
// users is not run here: this decision is what the set-up follows, and SO_PEERCRED is checked
// against the same uid on the unix socket).
func TestShmMatch(t *testing.T) {
	me, err := myShmHello()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := hostIdentity(); !ok {
		t.Skip("no host identity here")
	}
	if ok, same, _ := shmMatch(me, me); !ok || !same {
		t.Fatal("the same host and user do not match")
	}
	other := me
	other.uid++
	if ok, same, why := shmMatch(me, other); ok || !same {
		t.Fatalf("another user matched (%v %q)", ok, why)
	}
	other = me
	other.host[0] ^= 1
	if ok, same, _ := shmMatch(me, other); ok || same {
		t.Fatal("another host matched")
	}
	var none shmHello
	if ok, _, _ := shmMatch(none, none); ok {
		t.Fatal("an unknown host identity matched")
	}
}

// pingPong sends rounds of small messages back and forth between ranks 0 and 1.
func pingPong(t *testing.T, ts []*TCP, rounds int) {
	t.Helper()
	for _, tr := range ts {
		tr.Begin(5, fpAll)
	}
	msg := bytes.Repeat([]byte{9}, 1024)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				tag := kx.Tag{FP: fpAll, Seq: 5, Layer: uint8(i % 200), Phase: kx.PhaseDown}
				if r == 0 {
					if err := ts[0].Send(1, tag, msg); err != nil {
						errs <- err
						return
					}
				}
				b, err := ts[r].Recv(1-r, tag)
				if err != nil {
					errs <- err
					return
				}
				ts[r].Release(b)
				if r == 1 {
					if err := ts[1].Send(0, tag, msg); err != nil {
						errs <- err
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

// Spinning is off when a host's ranks outnumber its CPUs: asserted from the rings' own
// counters, not from a timing. With ranks that fit, waits do spin (the counters move).
func TestShmSpinOnlyWhereCoresAllow(t *testing.T) {
	defer func(f func(int) bool) { spinAllowed = f }(spinAllowed)
	for _, fit := range []bool{false, true} {
		spinAllowed = func(int) bool { return fit }
		ts := startShmJob(t, 2, "auto")
		pingPong(t, ts, 200)
		for r, tr := range ts {
			st := tr.ShmStats()
			if st.SpinAllowed != fit || st.Peers != 1 || st.RanksOnHost != 2 {
				t.Errorf("fit=%v rank %d: %+v", fit, r, st)
			}
			if !fit && (st.Spins != 0 || st.SpinHits != 0) {
				t.Errorf("rank %d spun on an oversubscribed host: %+v", r, st)
			}
			if fit && st.Spins == 0 {
				t.Errorf("rank %d never spun where cores allow it: %+v", r, st)
			}
		}
		closeAll(ts)
	}
	// The real rule on this machine: one rank more than its usable CPUs never spins.
	spinAllowed = cpus.SpinAllowed
	n := cpus.Usable() + 1
	if n > 8 {
		t.Skip("too many CPUs for an oversubscribed in-process job")
	}
	ts := startShmJob(t, n, "auto")
	defer closeAll(ts)
	pingPong(t, ts, 50)
	for r, tr := range ts {
		if st := tr.ShmStats(); st.SpinAllowed || st.Spins != 0 || st.RanksOnHost != n {
			t.Errorf("%d ranks on %d CPUs, rank %d: %+v", n, n-1, r, st)
		}
	}
}

// No segment and no fd outlives a transport: 1000 set-ups and closes of a 2-rank job over
// shared memory leave the fd count where it was (a memfd leaked per cycle would show as
// 1000 more).
func TestShmNoFdLeak(t *testing.T) {
	cycles := 1000
	if testing.Short() {
		cycles = 100
	}
	count := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	base := runtime.NumGoroutine()
	// One cycle first: the runtime's own fds (netpoller, timers) settle.
	closeAll(startShmJob(t, 2, "auto"))
	before := count()
	for i := 0; i < cycles; i++ {
		ts := startShmJob(t, 2, "auto")
		if i == 0 && ts[0].ShmStats().Peers != 1 {
			t.Fatal("no shared memory between the two ranks")
		}
		closeAll(ts)
	}
	if after := count(); after > before+2 {
		t.Fatalf("%d fds before %d cycles, %d after", before, cycles, after)
	}
	noLeak(t, base)
}
