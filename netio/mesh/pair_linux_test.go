//go:build linux

package mesh

import (
	"errors"
	"kylix/core/kx"
	"kylix/netio/shm"
	"net"
	"os"
	"testing"
	"time"
)

// The pairing rule: another host identity or another user means TCP (a real job across two
// users is not run here: this decision is what the set-up follows, and SO_PEERCRED is checked
// against the same uid on the unix socket).
func TestShmMatch(t *testing.T) {
	me, err := myShmHello()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := hostIdentity(); !ok {
		t.Skip("no host identity here (boot_id or the namespace links of /proc are unreadable): shm is never offered, so there is no decision to test")
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

// pidfds counts this process's pidfds (each side of a segment pins its peer with one).
func pidfds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && l == "anon_inode:[pidfd]" {
			n++
		}
	}
	return n
}

// A pair on shared memory holds every descriptor it will hold from the set-up on: both sides
// pin the peer's process with a pidfd at once. The creator used to open its pidfd at its first
// wait that slept a whole poll, minutes later in a long job, so a process ended with one
// descriptor more per same-host peer than it had once warm (the chaos harness counts that as a
// leak), and a pid reused before that wait could have passed for the dead peer.
func TestShmPairPinsPeerAtSetup(t *testing.T) {
	if !ShmOffered(kx.Options{}) {
		t.Skip("no shared memory here: pairs stay on TCP")
	}
	var lns [2]net.Listener
	var addrs []string
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		addrs = append(addrs, ln.Addr().String())
	}
	before := pidfds(t)
	var pairs [2][]Pair
	var conns [2][]net.Conn
	errs := make(chan error, 2)
	for r := range lns {
		go func() {
			var err error
			conns[r], pairs[r], err = Build(lns[r], r, 2, addrs, 42, "secret", 10*time.Second, 0, true, func(string, ...any) {})
			errs <- err
		}()
	}
	for range lns {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	creator, attacher := pairs[0][1].Seg, pairs[1][0].Seg
	defer func() {
		for r := range lns {
			conns[r][1-r].Close()
			pairs[r][1-r].Close()
		}
	}()
	if creator == nil || attacher == nil {
		t.Fatalf("the pair stayed on TCP (segments %v, %v)", creator, attacher)
	}
	if got := pidfds(t) - before; got != 2 {
		t.Fatalf("after the set-up the pair holds %d pidfds, want 2 (one a side)", got)
	}
	// A wait that sleeps through whole polls looks at the peer's process: it must find it
	// pinned already, not open anything.
	for _, seg := range []*shm.Segment{creator, attacher} {
		if _, err := seg.Reader().Next(shm.Wait{Timeout: 100 * time.Millisecond}); !errors.Is(err, shm.ErrTimeout) {
			t.Fatalf("an empty ring's read returned %v, want the timeout", err)
		}
	}
	if got := pidfds(t) - before; got != 2 {
		t.Fatalf("after waits that slept the pair holds %d pidfds, want 2 as after the set-up", got)
	}
}
