package core_test

import (
	"bytes"
	"errors"
	"fmt"
	"kylix/core/kx"
	"kylix/netio/memnet"
	"strings"
	"testing"
	"time"

	"kylix/core"
)

func TestBcastAndBarrier(t *testing.T) {
	for _, m := range []int{1, 2, 3, 5, 8} {
		errs := runJob(t, m, "auto", func(c *core.Comm) error {
			for root := 0; root < m; root++ {
				for _, n := range []int{0, 1, 100000} {
					buf := make([]byte, n)
					if c.Rank() == root {
						for i := range buf {
							buf[i] = byte(i*7 + root)
						}
					}
					if err := c.Bcast(buf, root); err != nil {
						return err
					}
					for i := range buf {
						if buf[i] != byte(i*7+root) {
							return fmt.Errorf("bcast root %d n %d: byte %d wrong", root, n, i)
						}
					}
				}
				if err := c.Barrier(); err != nil {
					return err
				}
			}
			return nil
		})
		for r, err := range errs {
			if err != nil {
				t.Errorf("m=%d rank %d: %v", m, r, err)
			}
		}
	}
}

// A rank that calls another collective makes every rank fail with CodeMismatch, and the comm
// stays usable afterwards.
func TestMismatchOnEveryRank(t *testing.T) {
	const m = 5
	errs := runJob(t, m, "direct", func(c *core.Comm) error {
		p, err := c.Config([]int64{int64(c.Rank())}, []int64{0, 1, 2})
		if err != nil {
			return err
		}
		out := make([]byte, 8)
		in := make([]byte, 24)
		start := time.Now()
		if c.Rank() == 3 {
			err = c.Barrier()
		} else {
			err = p.Reduce(out, in, kx.F64, kx.Sum, 1)
		}
		if !errors.Is(err, kx.ErrMismatch) {
			return fmt.Errorf("got %v, want a mismatch", err)
		}
		if time.Since(start) >= jobTimeout { // only a timeout takes that long
			return fmt.Errorf("mismatch took %v: it waited for a timeout", time.Since(start))
		}
		// width disagreement
		w := 1
		if c.Rank() == 0 {
			w = 2
		}
		err = p.Reduce(make([]byte, 8*w), make([]byte, 24*w), kx.F64, kx.Sum, w)
		if !errors.Is(err, kx.ErrMismatch) {
			return fmt.Errorf("width: got %v, want a mismatch", err)
		}
		return p.Reduce(out, in, kx.F64, kx.Sum, 1) // still usable
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// Bad arguments give CodeArg on the rank that passed them, and the comm stays usable.
func TestBadArgumentsLeaveCommUsable(t *testing.T) {
	errs := runJob(t, 3, "direct", func(c *core.Comm) error {
		p, err := c.Config([]int64{1, 2}, []int64{1})
		if err != nil {
			return err
		}
		out, in := make([]byte, 16), make([]byte, 8)
		bad := []struct {
			name string
			err  error
		}{
			{"negative index", func() error { _, e := c.Config([]int64{-1}, nil); return e }()},
			{"width 0", p.Reduce(out, in, kx.F64, kx.Sum, 0)},
			{"bor on floats", p.Reduce(out, in, kx.F64, kx.Bor, 1)},
			{"bad dtype", p.Reduce(out, in, kx.Dtype(99), kx.Sum, 1)},
			{"bad op", p.Reduce(out, in, kx.F64, kx.Op(99), 1)},
			{"short buffer", p.Reduce(out[:8], in, kx.F64, kx.Sum, 1)},
			{"bad root", c.Bcast(out, 7)},
		}
		for _, b := range bad {
			if !errors.Is(b.err, kx.ErrArg) {
				return fmt.Errorf("%s: got %v, want CodeArg", b.name, b.err)
			}
		}
		if err := p.Reduce(out, in, kx.F64, kx.Sum, 1); err != nil {
			return fmt.Errorf("after bad calls: %v", err)
		}
		p.Free()
		if err := p.Reduce(out, in, kx.F64, kx.Sum, 1); !errors.Is(err, kx.ErrState) {
			return fmt.Errorf("freed plan: got %v, want CodeState", err)
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// A dead rank makes the others fail at once (CodePeer, not a timeout) with an error naming it;
// later calls fail with CodeState.
func TestDeadRankReported(t *testing.T) {
	const m = 4
	ts := memnet.NewJob(m, 3*time.Second)
	errs := make(chan error, m)
	for r := 0; r < m; r++ {
		go func(r int) {
			c, err := core.NewComm(ts[r], kx.Options{Rank: r, Size: m, Degrees: "2x2", Replication: 1, Timeout: 3 * time.Second})
			if err != nil {
				errs <- err
				return
			}
			if r == 3 {
				ts[r].Kill()
				errs <- nil
				return
			}
			err = c.Barrier()
			if err == nil {
				errs <- fmt.Errorf("rank %d: barrier succeeded with a dead rank", r)
				return
			}
			// The in-memory transport tells every rank of a kill at once, and a rank that
			// learns it first tells the others: CodePeer naming rank 3 is the death ending the
			// barrier, where waiting out the 3 s timeout would give CodeTimeout.
			if code := kx.CodeOf(err); code != kx.CodePeer || !strings.Contains(err.Error(), "rank 3") {
				errs <- fmt.Errorf("rank %d: %v (code %v), want CodePeer naming rank 3", r, err, code)
				return
			}
			if err := c.Barrier(); !errors.Is(err, kx.ErrState) {
				errs <- fmt.Errorf("rank %d: after failure got %v, want CodeState", r, err)
				return
			}
			errs <- nil
		}(r)
	}
	for i := 0; i < m; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// Two runs with the same inputs give the same bytes, and ranks asking for the same index get
// the same bits (f32 sums of non-integers: any order dependence would show).
func TestDeterministicBits(t *testing.T) {
	const m, n = 6, 2000
	run := func() [][]byte {
		res := make([][]byte, m)
		errs := runJob(t, m, "3x2", func(c *core.Comm) error {
			rd := genRank(77, c.Rank(), n, 800, 0, 1)
			rd.in = make([]int64, n)
			for i := range rd.in {
				rd.in[i] = int64(i)
			}
			vals := make([]float64, len(rd.out))
			for i := range vals {
				vals[i] = 1.0 / float64(3+i%11+c.Rank())
			}
			in := make([]byte, n*4)
			p, err := c.Config(rd.out, rd.in)
			if err != nil {
				return err
			}
			if err := p.Reduce(encode(kx.F32, kx.Sum, vals), in, kx.F32, kx.Sum, 1); err != nil {
				return err
			}
			res[c.Rank()] = in
			return nil
		})
		for r, err := range errs {
			if err != nil {
				t.Fatalf("rank %d: %v", r, err)
			}
		}
		return res
	}
	a, b := run(), run()
	for r := 0; r < m; r++ {
		if !bytes.Equal(a[r], a[0]) {
			t.Fatalf("rank %d got other bits than rank 0 for the same indices", r)
		}
		if !bytes.Equal(a[r], b[r]) {
			t.Fatalf("rank %d: second run differs", r)
		}
	}
}

func TestDenseAllreduce(t *testing.T) {
	for _, pl := range []struct {
		m       int
		degrees string
	}{{1, "auto"}, {2, "auto"}, {3, "auto"}, {4, "2x2"}, {5, "auto"}, {6, "3x2"}, {7, "auto"}, {8, "2x2x2"}} {
		for _, n := range []int{0, 1, 7, 1000, 65537} {
			errs := runJob(t, pl.m, pl.degrees, func(c *core.Comm) error {
				for _, d := range allDtypes {
					for _, o := range opsFor(d) {
						if n > 1000 && !(d == kx.F64 && o == kx.Sum) && !(d == kx.I32 && o == kx.Max) {
							continue // the large size checks chunking; two dtype/op pairs suffice
						}
						all := make([]rankData, pl.m)
						for r := range all {
							all[r] = genRank(int64(n), r, n, n, 0, 1)
							all[r].out = make([]int64, n)
							all[r].in = make([]int64, n)
							for i := range all[r].out {
								all[r].out[i], all[r].in[i] = int64(i), int64(i)
							}
						}
						send := encode(d, o, all[c.Rank()].vals)
						recv := send // in place on odd ranks
						if c.Rank()%2 == 0 {
							recv = make([]byte, len(send))
						}
						if err := c.Allreduce(send, recv, d, o); err != nil {
							return fmt.Errorf("n=%d %s %s: %w", n, d, o, err)
						}
						checkResult(t, fmt.Sprintf("allreduce m=%d %s n=%d", pl.m, pl.degrees, n), all, c.Rank(), d, o, 1, recv)
					}
				}
				return nil
			})
			for r, err := range errs {
				if err != nil {
					t.Errorf("m=%d rank %d: %v", pl.m, r, err)
				}
			}
		}
	}
}
