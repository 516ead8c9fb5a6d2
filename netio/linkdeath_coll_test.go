//go:build linux

package netio_test

import (
	"fmt"
	"kylix/core"
	"kylix/core/kx"
	"kylix/netio"
	"kylix/netio/internal/nettest"
	"kylix/netio/memnet"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// collSpec is a "coll" child's job: dense allreduces, the child signalling itself Delay into
// call SigAt (with Before, before it enters the call: the others wait in it for the child).
type collSpec struct {
	Replicas, Iters, SigAt, Len int
	Before                      bool
}

// The allreduces of a "coll" job cycle through these dtypes and ops.
var collOps = []struct {
	d kx.Dtype
	o kx.Op
}{{kx.F64, kx.Sum}, {kx.I32, kx.Bxor}, {kx.F32, kx.Max}, {kx.U64, kx.Prod}, {kx.I64, kx.Min}, {kx.F64, kx.RSum}}

func collOpts(rank int, s deathSpec) kx.Options {
	return kx.Options{Rank: rank, Size: s.Ranks, Degrees: "direct", Replication: s.Coll.Replicas,
		MinPacket: 4096, Compress: "off", Timeout: 30 * time.Second, Threads: 1}
}

// collInput is node's vector of call it.
func collInput(s deathSpec, it, node int) []int8 {
	return nettest.DenseNode(int64(1000+it), node, s.Coll.Len)
}

// collChild runs the child's side of a "coll" job: its allreduces until it is killed or
// stopped in call SigAt (a failure ends them early: the parent judges what it saw).
func collChild(t *testing.T, tr kx.Transport, s deathSpec) {
	rank := s.Ranks - 1
	node := rank % (s.Ranks / s.Coll.Replicas)
	c, err := core.NewComm(tr, collOpts(rank, s))
	if err != nil {
		t.Fatal(err)
	}
	for it := 0; it < s.Coll.Iters; it++ {
		if it == s.Coll.SigAt {
			signalSelf(s)
			if s.Coll.Before {
				time.Sleep(time.Minute)
			}
		}
		op := collOps[it%len(collOps)]
		send := nettest.Encode(op.d, op.o, collInput(s, it, node))
		if c.Allreduce(send, send, op.d, op.o) != nil {
			break
		}
	}
	time.Sleep(time.Minute) // killed, or stopped and then killed by the parent, long before
}

// A rank killed (kill -9) or stopped (SIGSTOP) in the middle of a dense allreduce, over each
// link kind, in a 3-rank job and in a job of 2 nodes with 2 replicas each; the victim is the
// last rank. Without replication every other rank's call fails with an error naming the victim
// (PEER; TIMEOUT for a stopped in-memory rank, which nobody can tell from a late one), and
// every call before it was bitwise right. With replication every survivor completes every call
// bitwise right: the victim's sibling replica stands in for it.
func TestLinkDeathInCollective(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts child processes and waits out liveness_ms")
	}
	// "lane": a ring job of vectors small enough for the lanes (netio/shm/lane.go), where the
	// survivors wait on the victim's lane, not its ring
	for _, lk := range []string{"socket", "ring", "memory", "lane"} {
		for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGSTOP} {
			for _, repl := range []int{1, 2} {
				if lk == "lane" && repl == 2 {
					continue // a replicated comm has no lanes
				}
				t.Run(fmt.Sprintf("%s/%s/replication%d", lk, sigName[sig], repl), func(t *testing.T) {
					t.Parallel() // mostly waits: for liveness_ms, for a child process
					s := deathSpec{Mode: "coll", Sig: sig, Delay: time.Millisecond, Ranks: 3,
						Coll: collSpec{Replicas: repl, Iters: 16, SigAt: 3, Len: 100003}}
					if repl == 2 {
						s.Ranks = 4
					}
					if lk == "lane" {
						s.Coll.Len, s.Coll.Before = 5, true // a call takes microseconds: signalled before it
					}
					collDeath(t, lk, s)
				})
			}
		}
	}
}

func collDeath(t *testing.T, lk string, s deathSpec) {
	victim := s.Ranks - 1
	nodes := s.Ranks / s.Coll.Replicas
	vecs := func(it int) [][]int8 {
		v := make([][]int8, nodes)
		for nd := range v {
			v[nd] = collInput(s, it, nd)
		}
		return v
	}
	want := make([][]byte, s.Coll.Iters)
	for it := range want {
		op := collOps[it%len(collOps)]
		want[it] = nettest.DenseRef(vecs(it), op.d, op.o)
	}

	// The survivors' transports, and for the in-memory job the victim's goroutine.
	var ts []kx.Transport
	victimDone := make(chan struct{})
	switch lk {
	case "memory":
		ms := memnet.NewJob(s.Ranks, slow*2*time.Second)
		for _, m := range ms[:victim] {
			ts = append(ts, m)
		}
		resume := make(chan struct{})
		defer func() { close(resume); <-victimDone }()
		go memVictim(t, ms[victim], s, resume, victimDone)
	default:
		close(victimDone)
		s.Shm = map[string]string{"socket": "off", "ring": "auto", "lane": "auto"}[lk]
		s.Peers = nettest.FreePorts(t, s.Ranks)
		stop := spawnChild(t, s)
		defer stop()
		tcps := make([]*netio.TCP, victim)
		errs := make([]error, victim)
		var wg sync.WaitGroup
		for r := range tcps {
			wg.Add(1)
			go func() { defer wg.Done(); tcps[r], errs[r] = netio.ConnectLoopback(deathOpts(r, s)) }()
		}
		wg.Wait()
		for r, tr := range tcps {
			if tr != nil {
				ts = append(ts, tr)
			}
			if errs[r] != nil {
				closeTransports(ts)
				t.Fatalf("connect rank %d: %v", r, errs[r])
			}
		}
		if s.Shm == "auto" && tcps[0].ShmStats().Peers != s.Ranks-1 {
			closeTransports(ts)
			t.Fatalf("rank 0 reaches %d peers by ring, want %d", tcps[0].ShmStats().Peers, s.Ranks-1)
		}
	}

	done := make([]int, victim) // calls completed, by rank
	failed := make([][]int, victim)
	errs := runComms(t, ts, time.Minute, func(r int) kx.Options { return collOpts(r, s) }, func(c *core.Comm) error {
		r := c.Rank()
		node := r % nodes
		for it := 0; it < s.Coll.Iters; it++ {
			op := collOps[it%len(collOps)]
			send := nettest.Encode(op.d, op.o, collInput(s, it, node))
			if err := c.Allreduce(send, send, op.d, op.o); err != nil {
				return err
			}
			if i := nettest.FirstDiff(send, want[it], op.d.Size()); i >= 0 {
				t.Errorf("rank %d call %d (%s %s): element %d differs", r, it, op.d, op.o, i)
			}
			done[r]++
		}
		failed[r] = c.FailedRanks()
		// With a live replica of every node the calls need not wait for the death to be
		// noticed (the replica's copies win the race): it must be noticed, not before the
		// last call. The socket's end comes with the killed process; the wait is a bound.
		for end := time.Now().Add(20 * time.Second); s.Coll.Replicas > 1 && s.Sig == syscall.SIGKILL &&
			!slices.Contains(failed[r], victim) && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
			failed[r] = c.FailedRanks()
		}
		return nil
	})
	if lk == "lane" {
		for r, tr := range ts {
			if n := tr.(*netio.TCP).ShmStats().LaneMsgs; n < uint64(2*s.Coll.SigAt) {
				t.Errorf("rank %d read %d lane messages in %d calls: the lanes were not taken", r, n, s.Coll.SigAt)
			}
		}
	}
	for r, err := range errs {
		t.Logf("rank %d: %d calls, then %v; failed ranks %v", r, done[r], err, failed[r])
		if s.Coll.Replicas > 1 {
			if err != nil {
				t.Errorf("rank %d: %v (call %d), with a live replica of every node", r, err, done[r])
			}
			if s.Sig == syscall.SIGKILL && !slices.Contains(failed[r], victim) {
				t.Errorf("rank %d: failed ranks %v lack the killed rank %d", r, failed[r], victim)
			}
			continue
		}
		if done[r] < s.Coll.SigAt {
			t.Errorf("rank %d failed in call %d, before the victim was signalled in call %d", r, done[r], s.Coll.SigAt)
		}
		if err == nil {
			t.Errorf("rank %d completed all %d calls: the signal never landed in one", r, s.Coll.Iters)
			continue
		}
		code := kx.CodePeer
		if lk == "memory" && s.Sig == syscall.SIGSTOP {
			code = kx.CodeTimeout
		}
		wantRankErr(t, err, code, victim)
	}
}

// memVictim is the in-memory victim: it runs its calls, and in call SigAt is killed (Kill, from
// another goroutine Delay into the call) or stops calling until resume.
func memVictim(t *testing.T, m *memnet.Mem, s deathSpec, resume <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	rank := s.Ranks - 1
	node := rank % (s.Ranks / s.Coll.Replicas)
	c, err := core.NewComm(m, collOpts(rank, s))
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	for it := 0; it < s.Coll.Iters; it++ {
		if it == s.Coll.SigAt {
			if s.Sig == syscall.SIGSTOP {
				<-resume
				return
			}
			time.AfterFunc(s.Delay, m.Kill)
		}
		op := collOps[it%len(collOps)]
		send := nettest.Encode(op.d, op.o, collInput(s, it, node))
		if c.Allreduce(send, send, op.d, op.o) != nil {
			return
		}
	}
}
