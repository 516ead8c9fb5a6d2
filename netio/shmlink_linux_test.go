//go:build linux

package netio

import (
	"bytes"
	"kylix/core/kx"
	"kylix/netio/cpus"
	"kylix/netio/internal/nettest"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startShmJob connects n ranks over static loopback peers with the given shm option.
func startShmJob(t testing.TB, n int, shmOpt string) []*TCP {
	t.Helper()
	peers := nettest.FreePorts(t, n)
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

// pingPong sends rounds of small messages back and forth between ranks 0 and 1.
func pingPong(t *testing.T, ts []*TCP, rounds int) {
	t.Helper()
	for _, tr := range ts {
		tr.Receiver().Begin(5, fpAll)
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
				b, err := ts[r].Receiver().Recv(1-r, tag)
				if err != nil {
					errs <- err
					return
				}
				ts[r].Receiver().Release(b)
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
	defer func(f func(int) bool, d time.Duration) { spinAllowed, shmSpin = f, d }(spinAllowed, shmSpin)
	shmSpin = 50 * time.Microsecond // a budget, so that allowed spins show in the counters
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
			if !fit && st.Yields == 0 {
				t.Errorf("rank %d never yielded before sleeping on an oversubscribed host: %+v", r, st)
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
		t.Skipf("%d usable CPUs: an oversubscribed in-process job would need %d ranks (the cases above ran)", n-1, n)
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

// The child side of TestShmKillMidMessage: rank 1 of a 2-rank job in another process, which
// sends rank 0 one large message and then waits to be killed.
func TestShmKillChild(t *testing.T) {
	peers := os.Getenv("KYLIX_TEST_SHM_CHILD")
	if peers == "" {
		t.Skip("only as TestShmKillMidMessage's child")
	}
	tr, err := connect(kx.Options{Rank: 1, Size: 2, Peers: strings.Split(peers, ","), Timeout: 20 * time.Second, Liveness: 2 * time.Second, Secret: "s3cret"}, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	tr.Receiver().Begin(3, fpAll)
	msg := make([]byte, killMsg)
	for i := range msg {
		msg[i] = byte(i) // touched, so the copy into the ring is not of the zero page
	}
	// Killed by itself a moment into the message: the kill lands mid-frame (the frame takes
	// far longer to stream through a ring of 256 KiB), and the parent is not asked to be quick.
	go func() {
		time.Sleep(2 * time.Millisecond)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}()
	tr.Send(0, kx.Tag{FP: fpAll, Seq: 3, Phase: kx.PhaseDown}, msg)
	time.Sleep(20 * time.Second) // killed long before
}

const killMsg = 256 << 20

// kill -9 of a peer in the middle of a message it sends through shared memory: the wait for it
// fails with PEER naming its rank (the job's timeout is far longer, so the death was seen),
// nothing outside the posted place is written, and no segment is left in /dev/shm (a memfd
// never was there) nor an fd here once the transport is closed.
func TestShmKillMidMessage(t *testing.T) {
	if os.Getenv("KYLIX_TEST_SHM_CHILD") != "" {
		t.Skip("runs only as its own child process (KYLIX_TEST_SHM_CHILD set)")
	}
	fds := func() int { es, _ := os.ReadDir("/proc/self/fd"); return len(es) }
	before := fds()
	for attempt := 0; ; attempt++ {
		peers := nettest.FreePorts(t, 2)
		cmd := exec.Command(os.Args[0], "-test.run=^TestShmKillChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "KYLIX_TEST_SHM_CHILD="+strings.Join(peers, ","))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		tr, err := connect(kx.Options{Rank: 0, Size: 2, Peers: peers, Timeout: 20 * time.Second, Liveness: 2 * time.Second, Secret: "s3cret"}, "127.0.0.1")
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal(err)
		}
		if tr.ShmStats().Peers != 1 {
			cmd.Process.Kill()
			cmd.Wait()
			tr.Close()
			t.Fatal("the child is not reached through shared memory")
		}
		tr.Receiver().Begin(3, fpAll)
		whole, place := sentinelPlace(killMsg)
		tag := kx.Tag{FP: fpAll, Seq: 3, Phase: kx.PhaseDown}
		tr.Receiver().Post(1, tag, place, kx.Fold{})
		_, err = tr.Receiver().Await(1, tag, kx.Whole)
		cmd.Wait()
		if err == nil && attempt < 3 {
			tr.Close() // the child finished its message before the kill: try again
			continue
		}
		if err == nil {
			t.Fatal("the message always finished before the kill")
		}
		t.Logf("attempt %d: %v", attempt, err)
		wantErr(t, err, kx.CodePeer, "rank 1")
		sentinelsIntact(t, whole, killMsg)
		tr.Close()
		break
	}
	if es, _ := os.ReadDir("/dev/shm"); len(es) > 0 {
		for _, e := range es {
			if strings.Contains(e.Name(), "kylix") {
				t.Errorf("/dev/shm/%s left behind", e.Name())
			}
		}
	}
	if after := fds(); after > before+2 {
		t.Errorf("%d fds before, %d after", before, after)
	}
}
