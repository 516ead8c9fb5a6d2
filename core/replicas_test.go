package core_test

import (
	"fmt"
	"kylix/core/kx"
	"kylix/netio/memnet"
	"strings"
	"sync"
	"testing"
	"time"

	"kylix/core"
)

// runReplicated runs fn on every rank of an in-memory job of s replicas of m nodes at once and
// returns the errors by rank.
func runReplicated(t *testing.T, s, m int, degrees string, fn func(c *core.Comm, mem *memnet.Mem) error) []error {
	t.Helper()
	return runMem(t, s*m, func(r int) kx.Options {
		return kx.Options{Rank: r, Size: s * m, Degrees: degrees, Replication: s, MinPacket: 4096, Timeout: jobTimeout}
	}, fn)
}

// expectNoErrors reports every rank's error.
func expectNoErrors(t *testing.T, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

func nodeData(m, width int, seed int64) []rankData {
	all := make([]rankData, m)
	for r := range all {
		all[r] = genRank(seed, r, 3000, 200+40*r, 150+20*r, width)
	}
	return all
}

// Replicated jobs give every replica the unreplicated result over the node data (each node
// counted once), for every dtype and op, with reduce and config_reduce.
func TestReplicatedAgainstBruteForce(t *testing.T) {
	for _, pl := range []struct {
		s, m    int
		degrees string
	}{{2, 4, "direct"}, {2, 4, "binary"}, {2, 4, "auto"}, {3, 2, "direct"}, {2, 5, "direct"}, {2, 3, "auto"}, {2, 1, "auto"}} {
		t.Run(fmt.Sprintf("s%d_m%d_%s", pl.s, pl.m, pl.degrees), func(t *testing.T) {
			all := nodeData(pl.m, 2, int64(pl.s*100+pl.m))
			errs := runReplicated(t, pl.s, pl.m, pl.degrees, func(c *core.Comm, _ *memnet.Mem) error {
				if c.Size() != pl.s*pl.m {
					return fmt.Errorf("Size() = %d, want %d (processes, replicas included)", c.Size(), pl.s*pl.m)
				}
				if err := checkEveryDtypeOp(t, c, all, 2, true); err != nil {
					return err
				}
				if err := c.Barrier(); err != nil {
					return err
				}
				st := c.Stats().Replication
				if st.Replicas != pl.s || st.Nodes != pl.m || st.Node != c.Rank()%pl.m {
					return fmt.Errorf("stats: %+v", st)
				}
				if pl.m > 1 && (st.CopiesWon == 0 || st.CopiesLost == 0 || st.DupBytes == 0) {
					return fmt.Errorf("stats count no racing copies: %+v", st)
				}
				return nil
			})
			expectNoErrors(t, errs)
		})
	}
}

// A replica killed in the middle of the job is routed around: every survivor completes every
// collective with the exact result, and the dead replica shows in FailedRanks.
func TestReplicaKilledMidJob(t *testing.T) {
	const s, m, width = 2, 4, 1
	all := nodeData(m, width, 7)
	victims := map[int]int{5: 1, 2: 3} // rank -> the iteration in which it dies
	var kills sync.WaitGroup
	kills.Add(len(victims))
	errs := runReplicated(t, s, m, "2x2", func(c *core.Comm, mem *memnet.Mem) error {
		r := c.Rank()
		rd := all[r%m]
		for it := 0; it < 5; it++ {
			if v, ok := victims[r]; ok && v == it {
				go func() {
					time.Sleep(time.Duration(r) * time.Millisecond)
					mem.Kill()
					kills.Done()
				}()
			}
			p, err := c.Config(rd.out, rd.in)
			if err != nil {
				if _, victim := victims[r]; victim {
					return nil
				}
				return fmt.Errorf("iteration %d config: %w", it, err)
			}
			in := make([]byte, len(rd.in)*width*kx.F64.Size())
			err = p.Reduce(encode(kx.F64, kx.Sum, rd.vals), in, kx.F64, kx.Sum, width)
			p.Free()
			if _, victim := victims[r]; victim && err != nil {
				return nil
			}
			if err != nil {
				return fmt.Errorf("iteration %d reduce: %w", it, err)
			}
			checkResult(t, fmt.Sprintf("iteration %d", it), all, r%m, kx.F64, kx.Sum, width, in)
			dense := make([]byte, 1000*8)
			if err := c.Allreduce(encode(kx.F64, kx.Sum, make([]float64, 1000)), dense, kx.F64, kx.Sum); err != nil {
				if _, victim := victims[r]; victim {
					return nil
				}
				return fmt.Errorf("iteration %d allreduce: %w", it, err)
			}
		}
		if _, victim := victims[r]; victim {
			kills.Wait() // a victim that got through every call goes only when killed
			return nil
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		kills.Wait() // the kills may come after the last call a survivor needed a victim for
		// Ranks that finished already may show as finalized too; the victims must.
		failed := fmt.Sprint(c.FailedRanks())
		if !strings.Contains(failed, "2") || !strings.Contains(failed, "5") {
			return fmt.Errorf("FailedRanks = %v, want 2 and 5 among them", failed)
		}
		return nil
	})
	expectNoErrors(t, errs)
}

// When every replica of a node is dead, every survivor's call fails with CodePeer naming them.
func TestEveryReplicaOfANodeKilled(t *testing.T) {
	const s, m = 2, 3
	errs := runReplicated(t, s, m, "direct", func(c *core.Comm, mem *memnet.Mem) error {
		r := c.Rank()
		if r%m == 1 {
			mem.Kill()
			return nil
		}
		start := time.Now()
		err := c.Barrier()
		for err == nil && time.Since(start) < 5*time.Second {
			err = c.Barrier() // the kill may land after a first barrier completed
		}
		if kx.CodeOf(err) != kx.CodePeer {
			return fmt.Errorf("got %v, want CodePeer", err)
		}
		if !strings.Contains(err.Error(), "1") || !strings.Contains(err.Error(), "4") {
			return fmt.Errorf("error does not name ranks 1 and 4: %v", err)
		}
		return nil
	})
	expectNoErrors(t, errs)
}

// Shrink on a replicated comm keeps whole nodes: with one replica of node 1 dead the new comm
// has every node (the dead replica stays a member, routed around); with both replicas of
// node 2 dead too, node 2 is gone and the new comm is 2 replicas of 3 nodes. Results on each
// are the brute force over the surviving nodes' data.
func TestShrinkReplicated(t *testing.T) {
	const s, m, width = 2, 4, 1
	all := nodeData(m, width, 11)
	dead := map[int]bool{5: true, 2: true, 6: true} // replica 1 of node 1; both of node 2
	errs := runReplicated(t, s, m, "direct", func(c *core.Comm, mem *memnet.Mem) error {
		r := c.Rank()
		if dead[r] {
			mem.Kill()
			return nil
		}
		if err := c.Barrier(); err == nil {
			// the kills may land after a first barrier completed; a second must fail
			if err = c.Barrier(); err == nil {
				return fmt.Errorf("barriers succeeded without node 2")
			}
		}
		nc, err := c.Shrink()
		if err != nil {
			return fmt.Errorf("shrink: %w", err)
		}
		defer nc.Close()
		if nc.Size() != 6 {
			return fmt.Errorf("shrunk comm has %d ranks, want 6 (2 replicas of nodes 0, 1, 3)", nc.Size())
		}
		node := []int{0, 1, 3}[nc.Rank()%3] // the old node of this rank
		if node != r%m {
			return fmt.Errorf("old rank %d (node %d) became rank %d of node index %d", r, r%m, nc.Rank(), nc.Rank()%3)
		}
		left := []rankData{all[0], all[1], all[3]}
		rd := left[nc.Rank()%3]
		p, err := nc.Config(rd.out, rd.in)
		if err != nil {
			return fmt.Errorf("config on the shrunk comm: %w", err)
		}
		defer p.Free()
		in := make([]byte, len(rd.in)*width*8)
		if err := p.Reduce(encode(kx.F64, kx.Sum, rd.vals), in, kx.F64, kx.Sum, width); err != nil {
			return fmt.Errorf("reduce on the shrunk comm: %w", err)
		}
		checkResult(t, "shrunk", left, nc.Rank()%3, kx.F64, kx.Sum, width, in)
		return nc.Barrier()
	})
	expectNoErrors(t, errs)
}
