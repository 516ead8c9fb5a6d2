package core_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"kylix/core/kx"
	"kylix/internal/freeport"
	"kylix/netio/memnet"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"kylix/core"
	"kylix/netio"
)

// exerciseComm runs every kind of collective on c (all ranks of c call it at once) and checks
// the results against brute force. seed makes the data; ranks are c's own.
func exerciseComm(t *testing.T, c *core.Comm, seed int64) error {
	k, me := c.Size(), c.Rank()
	const n = 3000
	all := make([]rankData, k)
	for r := range all {
		all[r] = genRank(seed, r, n, 200+40*r, 150+20*r, 2)
	}
	rd := all[me]
	p, err := c.Config(rd.out, rd.in)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer p.Free()
	for _, dc := range []struct {
		d kx.Dtype
		o kx.Op
	}{{kx.F64, kx.Sum}, {kx.I64, kx.Max}, {kx.F32, kx.Min}} {
		in := make([]byte, len(rd.in)*2*dc.d.Size())
		if err := p.Reduce(encode(dc.d, dc.o, rd.vals), in, dc.d, dc.o, 2); err != nil {
			return fmt.Errorf("reduce %s %s: %w", dc.d, dc.o, err)
		}
		checkResult(t, "reduce after shrink", all, me, dc.d, dc.o, 2, in)
	}
	in := make([]byte, len(rd.in)*2*8)
	if _, err := c.ConfigReduce(rd.out, encode(kx.F64, kx.Sum, rd.vals), rd.in, in, kx.F64, kx.Sum, 2, false); err != nil {
		return fmt.Errorf("config_reduce: %w", err)
	}
	checkResult(t, "config_reduce after shrink", all, me, kx.F64, kx.Sum, 2, in)

	// dense allreduce: element i of rank r is i*(r+1), so the sum is i*k(k+1)/2
	for _, count := range []int{7, 20000} {
		send := make([]byte, 8*count)
		for i := 0; i < count; i++ {
			binary.LittleEndian.PutUint64(send[8*i:], uint64(int64(i*(me+1))))
		}
		recv := make([]byte, len(send))
		if err := c.Allreduce(send, recv, kx.I64, kx.Sum); err != nil {
			return fmt.Errorf("allreduce of %d: %w", count, err)
		}
		tri := int64(k * (k + 1) / 2)
		for i := 0; i < count; i++ {
			if g := int64(binary.LittleEndian.Uint64(recv[8*i:])); g != int64(i)*tri {
				return fmt.Errorf("allreduce of %d: element %d = %d, want %d", count, i, g, int64(i)*tri)
			}
		}
	}

	b := make([]byte, 16)
	if me == k-1 {
		copy(b, "from the last...")
	}
	if err := c.Bcast(b, k-1); err != nil {
		return fmt.Errorf("bcast: %w", err)
	}
	if string(b) != "from the last..." {
		return fmt.Errorf("bcast gave %q", b)
	}

	// mix: after MixLayers steps every rank holds the mean of the ranks' values
	buf := make([]byte, 8*3)
	for i := 0; i < 3; i++ {
		binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(float64(me*(i+1))))
	}
	for s := 0; s < c.MixLayers(); s++ {
		if err := c.Mix(buf, kx.F64, int64(s)); err != nil {
			return fmt.Errorf("mix step %d: %w", s, err)
		}
	}
	for i := 0; i < 3; i++ {
		want := float64(k-1) / 2 * float64(i+1)
		if g := math.Float64frombits(binary.LittleEndian.Uint64(buf[8*i:])); math.Abs(g-want) > 1e-9 {
			return fmt.Errorf("mix element %d = %g, want %g", i, g, want)
		}
	}
	if err := c.Barrier(); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	return nil
}

func survivorsOf(m int, victims []int) []int {
	var s []int
	for r := 0; r < m; r++ {
		if !slices.Contains(victims, r) {
			s = append(s, r)
		}
	}
	return s
}

// wantFailure checks that err is the failure of a collective with a dead or silent peer.
func wantFailure(what string, err error) error {
	switch kx.CodeOf(err) {
	case kx.CodePeer, kx.CodeTimeout:
		return nil
	case kx.OK:
		return fmt.Errorf("%s succeeded with a dead rank", what)
	}
	return fmt.Errorf("%s: %v (code %v), want CodePeer or CodeTimeout", what, err, kx.CodeOf(err))
}

// Kill ranks of an in-memory job, shrink the survivors and run every collective on the new comm.
func TestShrinkMem(t *testing.T) {
	cases := []struct {
		m       int
		degrees string
		victims []int
	}{
		{4, "2x2", []int{3}},
		{4, "auto", []int{0}},
		{4, "direct", []int{1, 2}},
		{5, "direct", []int{1, 3}},
		{5, "auto", []int{0, 4}},
		{8, "2x2x2", []int{0, 5}},
		{8, "binary", []int{2}},
		{8, "4x2", []int{7}},
		{8, "auto", []int{0}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("m%d_%s_kill%v", tc.m, tc.degrees, tc.victims), func(t *testing.T) {
			const timeout = 5 * time.Second
			ts := memnet.NewJob(tc.m, timeout)
			survivors := survivorsOf(tc.m, tc.victims)
			k := len(survivors)
			errs := make([]error, tc.m)
			var up, killed sync.WaitGroup
			up.Add(tc.m)
			killed.Add(len(tc.victims))
			var wg sync.WaitGroup
			for r := 0; r < tc.m; r++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[r] = func() error {
						opts := kx.Options{Rank: r, Size: tc.m, Degrees: tc.degrees, Replication: 1, MinPacket: 4096, Timeout: timeout}
						c, err := core.NewComm(ts[r], opts)
						if err != nil {
							up.Done()
							return err
						}
						defer c.Close()
						err = c.Barrier()
						up.Done()
						if err != nil {
							return fmt.Errorf("first barrier: %w", err)
						}
						if slices.Contains(tc.victims, r) {
							up.Wait()
							ts[r].Kill()
							killed.Done()
							return nil
						}
						killed.Wait()
						start := time.Now()
						if err := wantFailure("allreduce", c.Allreduce(make([]byte, 80), make([]byte, 80), kx.F64, kx.Sum)); err != nil {
							return err
						}
						if d := time.Since(start); d > timeout/2 {
							return fmt.Errorf("allreduce took %v to fail", d)
						}
						if err := c.Barrier(); !errors.Is(err, kx.ErrState) {
							return fmt.Errorf("barrier on the broken comm: %v, want CodeState", err)
						}
						failed := c.FailedRanks()
						if !slices.Equal(failed, tc.victims) {
							return fmt.Errorf("FailedRanks = %v, want %v", failed, tc.victims)
						}
						start = time.Now()
						nc, err := c.Shrink()
						if err != nil {
							return fmt.Errorf("shrink: %w", err)
						}
						if d := time.Since(start); d > timeout/2 {
							return fmt.Errorf("shrink took %v", d)
						}
						wantRank := slices.Index(survivors, r)
						if nc.Size() != k || nc.Rank() != wantRank {
							nc.Close()
							return fmt.Errorf("shrunk comm: rank %d of %d, want %d of %d", nc.Rank(), nc.Size(), wantRank, k)
						}
						if f := nc.FailedRanks(); len(f) != 0 {
							return fmt.Errorf("the new comm's FailedRanks = %v, want none", f)
						}
						if err := exerciseComm(t, nc, int64(tc.m*100+k)); err != nil {
							nc.Close()
							return fmt.Errorf("new comm (rank %d of %d): %w", nc.Rank(), nc.Size(), err)
						}
						// The old comm stays broken; a second shrink of it is refused.
						if err := c.Barrier(); !errors.Is(err, kx.ErrState) {
							return fmt.Errorf("barrier on the old comm after shrink: %v, want CodeState", err)
						}
						if _, err := c.Shrink(); !errors.Is(err, kx.ErrState) {
							return fmt.Errorf("second shrink of the old comm: %v, want CodeState", err)
						}
						// Half the survivors close the old comm first: that must not disturb the new.
						if wantRank%2 == 0 {
							if err := c.Close(); err != nil {
								return fmt.Errorf("close of the old comm: %w", err)
							}
						}
						if err := nc.Barrier(); err != nil {
							return fmt.Errorf("barrier on the new comm after some closed the old: %w", err)
						}
						if err := exerciseComm(t, nc, 7); err != nil {
							return fmt.Errorf("new comm after some closed the old: %w", err)
						}
						return nc.Close()
					}()
				}()
			}
			wg.Wait()
			for r, err := range errs {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}

// Shrink twice: a rank of the shrunk comm dies too; its failure is reported in the new comm's
// numbers, and the second shrink gives a working comm of the rest.
func TestShrinkTwice(t *testing.T) {
	const m, timeout = 6, 5 * time.Second
	ts := memnet.NewJob(m, timeout)
	first, second := 1, 4 // ranks of the original comm; 4 is rank 3 of the first shrunk comm
	errs := make([]error, m)
	var wg sync.WaitGroup
	var killed1, killed2 sync.WaitGroup
	killed1.Add(1)
	killed2.Add(1)
	for r := 0; r < m; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = func() error {
				c, err := core.NewComm(ts[r], kx.Options{Rank: r, Size: m, Degrees: "3x2", Replication: 1, MinPacket: 4096, Timeout: timeout})
				if err != nil {
					return err
				}
				defer c.Close()
				if err := c.Barrier(); err != nil {
					return err
				}
				if r == first {
					ts[r].Kill()
					killed1.Done()
					return nil
				}
				killed1.Wait()
				if err := wantFailure("barrier", c.Barrier()); err != nil {
					return err
				}
				c1, err := c.Shrink()
				if err != nil {
					return fmt.Errorf("first shrink: %w", err)
				}
				defer c1.Close()
				if c1.Size() != m-1 {
					return fmt.Errorf("first shrink: size %d", c1.Size())
				}
				if err := exerciseComm(t, c1, 11); err != nil {
					return fmt.Errorf("after the first shrink: %w", err)
				}
				if r == second {
					ts[r].Kill()
					killed2.Done()
					return nil
				}
				killed2.Wait()
				err = c1.Allreduce(make([]byte, 8), make([]byte, 8), kx.F64, kx.Sum)
				if err := wantFailure("allreduce on the first shrunk comm", err); err != nil {
					return err
				}
				if !strings.Contains(err.Error(), "rank 3") {
					t.Logf("note: rank %d's error does not say rank 3 (the dead rank's number in the shrunk comm): %v", r, err)
				}
				f := c1.FailedRanks()
				if !slices.Equal(f, []int{3}) {
					return fmt.Errorf("FailedRanks of the first shrunk comm = %v, want [3]", f)
				}
				c2, err := c1.Shrink()
				if err != nil {
					return fmt.Errorf("second shrink: %w", err)
				}
				want := slices.Index([]int{0, 2, 3, 5}, r)
				if c2.Size() != 4 || c2.Rank() != want {
					c2.Close()
					return fmt.Errorf("second shrink: rank %d of %d, want %d of 4", c2.Rank(), c2.Size(), want)
				}
				// close the older comms first: the newest must keep working
				c.Close()
				c1.Close()
				if err := exerciseComm(t, c2, 12); err != nil {
					c2.Close()
					return fmt.Errorf("after the second shrink: %w", err)
				}
				return c2.Close()
			}()
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// Shrink with nobody dead (also: rank 0 of the old comm keeps rank 0): a comm of every rank.
func TestShrinkNoFailure(t *testing.T) {
	errs := runJob(t, 5, "auto", func(c *core.Comm) error {
		if err := c.Barrier(); err != nil {
			return err
		}
		nc, err := c.Shrink()
		if err != nil {
			return err
		}
		defer nc.Close()
		if nc.Size() != 5 || nc.Rank() != c.Rank() {
			return fmt.Errorf("rank %d of %d", nc.Rank(), nc.Size())
		}
		if err := c.Barrier(); !errors.Is(err, kx.ErrState) {
			return fmt.Errorf("barrier on the shrunk comm: %v, want CodeState", err)
		}
		return exerciseComm(t, nc, 3)
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// A rank that calls Shrink long after the others (silent for more than the timeout) is left
// out: the others' comm works without it, and its own Shrink fails with CodePeer, never with a
// comm the others are not in.
func TestShrinkLateRankExcluded(t *testing.T) {
	const m, timeout, late = 4, time.Second, 2
	ts := memnet.NewJob(m, timeout)
	errs := make([]error, m)
	var wg sync.WaitGroup
	var lateDone sync.WaitGroup
	lateDone.Add(1)
	for r := 0; r < m; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = func() error {
				c, err := core.NewComm(ts[r], kx.Options{Rank: r, Size: m, Degrees: "auto", Replication: 1, MinPacket: 4096, Timeout: timeout})
				if err != nil {
					return err
				}
				defer c.Close()
				if err := c.Barrier(); err != nil {
					return err
				}
				if r == late {
					defer lateDone.Done()
					time.Sleep(3 * timeout)
					nc, err := c.Shrink()
					if err == nil {
						nc.Close()
						return fmt.Errorf("the late rank's shrink succeeded: rank %d of %d", nc.Rank(), nc.Size())
					}
					if kx.CodeOf(err) != kx.CodePeer || !strings.Contains(err.Error(), "took this rank for failed") {
						return fmt.Errorf("the late rank's shrink: %v (code %v), want CodePeer saying it was taken for failed", err, kx.CodeOf(err))
					}
					return nil
				}
				start := time.Now()
				nc, err := c.Shrink()
				if err != nil {
					return fmt.Errorf("shrink: %w", err)
				}
				defer nc.Close()
				// The shrink leaving the late rank out (checked below) is what says it did not wait
				// for it; 10 timeouts are a fail-safe.
				if d := time.Since(start); d > 10*timeout {
					return fmt.Errorf("shrink took %v with timeout %v", d, timeout)
				}
				if want := slices.Index([]int{0, 1, 3}, r); nc.Size() != 3 || nc.Rank() != want {
					return fmt.Errorf("rank %d of %d, want %d of 3", nc.Rank(), nc.Size(), want)
				}
				if err := exerciseComm(t, nc, 5); err != nil {
					return err
				}
				lateDone.Wait() // keep the transports open until the late rank has read its answer
				return nil
			}()
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// Over real TCP on loopback: a rank leaves (closes its transport: peers see it finalized), the
// others shrink and run every collective; closing the old comm first says no bye to the peers.
func TestShrinkTCP(t *testing.T) {
	for _, tc := range []struct {
		m       int
		degrees string
		victim  int
	}{{4, "2x2", 0}, {5, "direct", 2}} {
		t.Run(fmt.Sprintf("m%d_%s_victim%d", tc.m, tc.degrees, tc.victim), func(t *testing.T) {
			const timeout = 5 * time.Second
			peers := freeport.Loopback(t, tc.m)
			errs := make([]error, tc.m)
			var wg sync.WaitGroup
			var up, gone sync.WaitGroup
			up.Add(tc.m)
			gone.Add(1)
			for r := 0; r < tc.m; r++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[r] = func() error {
						opts := kx.Options{Rank: r, Size: tc.m, Peers: peers, Degrees: tc.degrees, Replication: 1,
							MinPacket: 4096, Timeout: timeout, Secret: "shrink-test"}
						tr, err := netio.Connect(opts)
						if err != nil {
							up.Done()
							return err
						}
						c, err := core.NewComm(tr, opts)
						if err != nil {
							up.Done()
							tr.Close()
							return err
						}
						defer c.Close()
						err = c.Barrier()
						up.Done()
						if err != nil {
							return err
						}
						if r == tc.victim {
							up.Wait()
							c.Close()
							gone.Done()
							return nil
						}
						gone.Wait()
						if err := wantFailure("barrier", c.Barrier()); err != nil {
							return err
						}
						nc, err := c.Shrink()
						if err != nil {
							return fmt.Errorf("shrink: %w", err)
						}
						want := slices.Index(survivorsOf(tc.m, []int{tc.victim}), r)
						if nc.Size() != tc.m-1 || nc.Rank() != want {
							nc.Close()
							return fmt.Errorf("rank %d of %d, want %d of %d", nc.Rank(), nc.Size(), want, tc.m-1)
						}
						if err := c.Close(); err != nil { // the old comm first
							return err
						}
						if err := exerciseComm(t, nc, 9); err != nil {
							nc.Close()
							return err
						}
						return nc.Close()
					}()
				}()
			}
			wg.Wait()
			for r, err := range errs {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}

// blindTransport hides the transport's FailedRanks: the rank learns of a death only when a
// wait on the dead rank fails (as when a TCP reset has not been read yet).
type blindTransport struct{ kx.Transport }

// dyingTransport kills its rank in the middle of the shrink agreement: after `after` of its
// agreement messages went out (sent concurrently, so which peers got them varies).
type dyingTransport struct {
	*memnet.Mem
	mu    sync.Mutex
	sent  int
	after int
}

func (d *dyingTransport) Sender() kx.Sender { return d }

func (d *dyingTransport) Send(to int, tag kx.Tag, bufs ...[]byte) error {
	if tag.Seq >= 1<<63 {
		d.mu.Lock()
		d.sent++
		die := d.sent > d.after
		d.mu.Unlock()
		if die {
			d.Mem.Kill()
			return kx.Errorf(kx.CodePeer, "killed during shrink")
		}
	}
	return d.Mem.Send(to, tag, bufs...)
}

// A rank dies during the agreement (after 0..9 of its messages), and some survivors only learn
// of deaths from failed waits: every survivor still ends with the same membership. If the dead
// rank made it into the new comm, a collective there fails on every survivor and a second
// shrink removes it.
func TestShrinkDeathDuringAgreement(t *testing.T) {
	const m, timeout = 5, 3 * time.Second
	for _, after := range []int{0, 1, 3, 4, 5, 7, 8, 9, 12} {
		t.Run(fmt.Sprintf("after%d", after), func(t *testing.T) {
			ts := memnet.NewJob(m, timeout)
			const first, victim = 4, 1 // first dies before the shrink, victim during it
			var mu sync.Mutex
			sizes := map[int][]int{} // survivor -> size of each comm shrink gave it
			errs := make([]error, m)
			var wg sync.WaitGroup
			var killed sync.WaitGroup
			killed.Add(1)
			for r := 0; r < m; r++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[r] = func() error {
						var tr kx.Transport = ts[r]
						switch {
						case r == victim:
							tr = &dyingTransport{Mem: ts[r], after: after}
						case r%2 == 0:
							tr = blindTransport{ts[r]}
						}
						c, err := core.NewComm(tr, kx.Options{Rank: r, Size: m, Degrees: "auto", Replication: 1, MinPacket: 4096, Timeout: timeout})
						if err != nil {
							return err
						}
						defer c.Close()
						if err := c.Barrier(); err != nil {
							return err
						}
						if r == first {
							ts[r].Kill()
							killed.Done()
							return nil
						}
						killed.Wait()
						if err := wantFailure("barrier", c.Barrier()); err != nil {
							return err
						}
						cur := c
						for attempt := 0; attempt < 3; attempt++ {
							nc, err := cur.Shrink()
							if r == victim {
								if err == nil {
									nc.Close()
								}
								return nil // dead by now, whatever Shrink said
							}
							if err != nil {
								return fmt.Errorf("shrink %d: %w", attempt+1, err)
							}
							defer nc.Close()
							mu.Lock()
							sizes[r] = append(sizes[r], nc.Size())
							mu.Unlock()
							err = exerciseComm(t, nc, int64(attempt))
							if err == nil {
								if nc.Size() != m-2 {
									return fmt.Errorf("a comm of %d ranks works, but 2 of %d are dead", nc.Size(), m)
								}
								return nil
							}
							if c := kx.CodeOf(err); c != kx.CodePeer && c != kx.CodeTimeout {
								return fmt.Errorf("new comm of %d: %w", nc.Size(), err)
							}
							cur = nc
						}
						return fmt.Errorf("no working comm after 3 shrinks")
					}()
				}()
			}
			wg.Wait()
			for r, err := range errs {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
			want := sizes[0]
			for _, r := range []int{2, 3} {
				if !slices.Equal(sizes[r], want) {
					t.Errorf("survivors disagree: comm sizes by rank %v", sizes)
					break
				}
			}
			t.Logf("comm sizes: %v", want)
		})
	}
}
