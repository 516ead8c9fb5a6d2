package core_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"kylix/core/kernels"
	"kylix/core/kernels/kerneltest"
	"kylix/core/kx"
	"math/rand"
	"sync"
	"testing"

	"kylix/core"
)

// User ops through the whole butterfly: the non-commutative Affine op (core/kernels/userop_test.go)
// must give exactly the left fold over the contributions in (rank, caller's position) order,
// starting from the first contribution; an index nobody contributes reads as zero bytes.

var (
	userOnce  sync.Once
	userOp    kx.Op
	userStats kerneltest.UserOpStats
)

func affineOp(t *testing.T) kx.Op {
	t.Helper()
	userOnce.Do(func() {
		var err error
		if userOp, err = kernels.RegisterUserOp(kerneltest.AffineFn(&userStats, kernels.MaxUserChunk)); err != nil {
			panic(err)
		}
	})
	return userOp
}

func getBits(d kx.Dtype, b []byte, i int) uint64 {
	if d.Size() == 4 {
		return uint64(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return binary.LittleEndian.Uint64(b[8*i:])
}

// userVals draws random element bits for every rank's values (regenerated, so every rank can
// compute the reference).
func userVals(seed int64, r int, d kx.Dtype, n int) []byte {
	rng := rand.New(rand.NewSource(seed*7919 + int64(r)))
	b := make([]byte, n*d.Size())
	for i := 0; i < n; i++ {
		v := rng.Uint64()
		if d.Size() == 4 {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
		} else {
			binary.LittleEndian.PutUint64(b[8*i:], v)
		}
	}
	return b
}

// userReference folds in rank order, then position order; nobody's indices are zero.
func userReference(all []rankData, vals [][]byte, r int, d kx.Dtype, width int) []uint64 {
	acc := map[int64][]uint64{}
	for q, rd := range all {
		for p, idx := range rd.out {
			a, ok := acc[idx]
			for c := 0; c < width; c++ {
				v := getBits(d, vals[q], p*width+c)
				if ok {
					v = kerneltest.Affine(d, a[c], v)
				} else if c == 0 {
					a = make([]uint64, width)
				}
				a[c] = v
			}
			acc[idx] = a
		}
	}
	var want []uint64
	for _, idx := range all[r].in {
		a, ok := acc[idx]
		for c := 0; c < width; c++ {
			if ok {
				want = append(want, a[c])
			} else {
				want = append(want, 0)
			}
		}
	}
	return want
}

func TestUserOpButterfly(t *testing.T) {
	op := affineOp(t)
	plans := []struct {
		m       int
		degrees string
		same    bool // in = out (the same slice): one layer then gathers answers as it combines
	}{{1, "auto", false}, {3, "direct", false}, {4, "direct", false}, {4, "2x2", false}, {6, "3x2", false},
		{6, "2x3", false}, {8, "auto", false}, {3, "direct", true}, {4, "direct", true}, {4, "2x2", true}}
	for _, pl := range plans {
		for _, width := range []int{1, 3} {
			t.Run(fmt.Sprintf("m%d_%s_same%v_w%d", pl.m, pl.degrees, pl.same, width), func(t *testing.T) {
				const n = 3000
				seed := int64(pl.m*100 + width)
				all := make([]rankData, pl.m)
				for r := range all {
					all[r] = genRank(seed, r, n, 400+40*r, 300, width)
				}
				if pl.m > 2 {
					all[1] = rankData{in: all[1].in} // contributes nothing
				}
				if pl.same {
					for r := range all {
						all[r].in = all[r].out
					}
				}
				errs := runJob(t, pl.m, pl.degrees, func(c *core.Comm) error {
					rd := all[c.Rank()]
					p, err := c.Config(rd.out, rd.in)
					if err != nil {
						return err
					}
					defer p.Free()
					for _, d := range allDtypes {
						vals := make([][]byte, pl.m)
						for r := range vals {
							vals[r] = userVals(seed+int64(d), r, d, len(all[r].out)*width)
						}
						want := userReference(all, vals, c.Rank(), d, width)
						check := func(what string, got []byte) {
							for i, w := range want {
								if g := getBits(d, got, i); g != w {
									t.Errorf("%s rank %d %s: element %d (in index %d) = %#x, want %#x",
										what, c.Rank(), d, i, rd.in[i/width], g, w)
									return
								}
							}
						}
						in := make([]byte, len(rd.in)*width*d.Size())
						if err := p.Reduce(vals[c.Rank()], in, d, op, width); err != nil {
							return fmt.Errorf("reduce %s: %w", d, err)
						}
						check("reduce", in)
						in2 := bytes.Repeat([]byte{0xA5}, len(in))
						if _, err := c.ConfigReduce(rd.out, vals[c.Rank()], rd.in, in2, d, op, width, false); err != nil {
							return fmt.Errorf("config_reduce %s: %w", d, err)
						}
						check("config_reduce", in2)
					}
					return nil
				})
				for r, err := range errs {
					if err != nil {
						t.Errorf("rank %d: %v", r, err)
					}
				}
			})
		}
	}
	if _, _, bad := userStats.Snapshot(); bad != "" {
		t.Errorf("the callback got %s", bad)
	}
}

func TestUserOpDenseAllreduce(t *testing.T) {
	op := affineOp(t)
	for _, pl := range []struct {
		m       int
		degrees string
	}{{1, "auto"}, {3, "auto"}, {4, "2x2"}, {4, "direct"}, {6, "3x2"}} {
		// 9000 elements travel the direct path (below 32 KiB at 4 bytes), 70000 the butterfly
		for _, n := range []int{0, 1, 1000, 9000, 70000} {
			errs := runJob(t, pl.m, pl.degrees, func(c *core.Comm) error {
				for _, d := range allDtypes {
					if n > 9000 && d != kx.F32 && d != kx.U64 {
						continue
					}
					seed := int64(n*10 + pl.m)
					vals := make([][]byte, pl.m)
					for r := range vals {
						vals[r] = userVals(seed, r, d, n)
					}
					send := bytes.Clone(vals[c.Rank()])
					recv := send // in place on odd ranks
					if c.Rank()%2 == 0 {
						recv = make([]byte, len(send))
					}
					if err := c.Allreduce(send, recv, d, op); err != nil {
						return fmt.Errorf("n=%d %s: %w", n, d, err)
					}
					for i := 0; i < n; i++ {
						w := getBits(d, vals[0], i)
						for r := 1; r < pl.m; r++ {
							w = kerneltest.Affine(d, w, getBits(d, vals[r], i))
						}
						if g := getBits(d, recv, i); g != w {
							t.Errorf("allreduce m=%d %s n=%d rank %d %s element %d = %#x, want %#x",
								pl.m, pl.degrees, n, c.Rank(), d, i, g, w)
							break
						}
					}
				}
				return nil
			})
			for r, err := range errs {
				if err != nil {
					t.Errorf("m=%d %s rank %d: %v", pl.m, pl.degrees, r, err)
				}
			}
		}
	}
	if _, maxCount, bad := userStats.Snapshot(); bad != "" || maxCount < 2 || maxCount > kernels.MaxUserChunk {
		t.Errorf("the callback got %q, largest call %d elements", bad, maxCount)
	}
}

// TestUserOpMismatchAndUnknown: an id nobody registered is an argument error on the rank that
// passes it, and the others see a mismatch, as for any bad op.
func TestUserOpMismatchAndUnknown(t *testing.T) {
	op := affineOp(t)
	errs := runJob(t, 3, "direct", func(c *core.Comm) error {
		b := make([]byte, 8*10)
		o := op
		if c.Rank() == 2 {
			o = kx.FirstUserOp + kernels.MaxUserOps - 1 // never registered in this test binary
		}
		err := c.Allreduce(b, b, kx.U64, o)
		want := kx.CodeMismatch
		if c.Rank() == 2 {
			want = kx.CodeArg
		}
		if kx.CodeOf(err) != want {
			return fmt.Errorf("got %v, want code %d", err, want)
		}
		return c.Allreduce(b, b, kx.U64, op) // the comm still works
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}
