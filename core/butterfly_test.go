package core_test

import (
	"encoding/binary"
	"fmt"
	"kylix/core/kx"
	"kylix/netio/memnet"
	"math"
	"math/rand"
	"sync"
	"testing"
	"time"

	"kylix/core"
)

// rankData is one rank's sparse contribution and request, regenerated from (seed, rank) so the
// reference can be computed independently of the library.
type rankData struct {
	out, in []int64
	vals    []float64 // width values per out index, small integers: sums are exact in any order
}

func genRank(seed int64, rank, n, nOut, nIn, width int) rankData {
	rng := rand.New(rand.NewSource(seed*1000 + int64(rank)))
	pick := func() int64 {
		if rng.Intn(3) == 0 { // a popular head, as in power-law data
			return int64(rng.Intn(1 + n/50))
		}
		return int64(rng.Intn(n))
	}
	d := rankData{}
	for i := 0; i < nOut; i++ {
		d.out = append(d.out, pick())
	}
	for i := 0; i < nIn; i++ {
		d.in = append(d.in, pick())
	}
	if nIn > 2 {
		d.in[nIn-1] = d.in[0]         // a repeated request
		d.in[nIn-2] = int64(n + 1000) // nobody contributes it
	}
	for i := 0; i < nOut*width; i++ {
		d.vals = append(d.vals, float64(rng.Intn(5)-1)) // in {-1..3}
	}
	return d
}

// valueFor keeps products exact in every order: PROD sees only -1, 1 and 2.
func valueFor(o kx.Op, v float64) float64 {
	if o == kx.Prod && v != -1 && v != 2 {
		return 1
	}
	return v
}

// encode writes float64 test values, as op o sees them, as dtype d.
func encode(d kx.Dtype, o kx.Op, vals []float64) []byte {
	b := make([]byte, len(vals)*d.Size())
	for i, v := range vals {
		v = valueFor(o, v)
		switch d {
		case kx.F32:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
		case kx.F64:
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
		case kx.I32:
			binary.LittleEndian.PutUint32(b[4*i:], uint32(int32(v)))
		case kx.I64:
			binary.LittleEndian.PutUint64(b[8*i:], uint64(int64(v)))
		case kx.U64:
			binary.LittleEndian.PutUint64(b[8*i:], uint64(int64(v)))
		}
	}
	return b
}

// refOp applies op to two values held as the dtype's bit pattern in a uint64.
func refOp(d kx.Dtype, o kx.Op, a, b uint64) uint64 {
	switch d {
	case kx.F32, kx.F64:
		fa, fb := math.Float64frombits(a), math.Float64frombits(b)
		var r float64
		switch o {
		case kx.Sum, kx.RSum: // the test values' sums are exact in any order
			r = fa + fb
		case kx.Prod:
			r = fa * fb
		case kx.Min:
			r = math.Min(fa, fb)
		case kx.Max:
			r = math.Max(fa, fb)
		}
		if d == kx.F32 {
			r = float64(float32(r))
		}
		return math.Float64bits(r)
	case kx.I32:
		x, y := int32(a), int32(b)
		switch o {
		case kx.Sum:
			return uint64(uint32(x + y))
		case kx.Prod:
			return uint64(uint32(x * y))
		case kx.Min:
			return uint64(uint32(min(x, y)))
		case kx.Max:
			return uint64(uint32(max(x, y)))
		}
	case kx.I64:
		x, y := int64(a), int64(b)
		switch o {
		case kx.Sum:
			return uint64(x + y)
		case kx.Prod:
			return uint64(x * y)
		case kx.Min:
			return uint64(min(x, y))
		case kx.Max:
			return uint64(max(x, y))
		}
	case kx.U64:
		switch o {
		case kx.Sum:
			return a + b
		case kx.Prod:
			return a * b
		case kx.Min:
			return min(a, b)
		case kx.Max:
			return max(a, b)
		}
	}
	switch o {
	case kx.Band:
		return a & b
	case kx.Bor:
		return a | b
	case kx.Bxor:
		return a ^ b
	}
	panic("refOp")
}

// refIdentity is the value an index nobody contributes must get.
func refIdentity(d kx.Dtype, o kx.Op) uint64 {
	switch o {
	case kx.Sum, kx.Bor, kx.Bxor, kx.RSum:
		if d.IsFloat() {
			return math.Float64bits(0)
		}
		return 0
	case kx.Prod:
		if d.IsFloat() {
			return math.Float64bits(1)
		}
		return 1
	case kx.Band:
		if d == kx.I32 {
			return uint64(^uint32(0))
		}
		return ^uint64(0)
	case kx.Min:
		switch d {
		case kx.F32, kx.F64:
			return math.Float64bits(math.Inf(1))
		case kx.I32:
			return uint64(uint32(math.MaxInt32))
		case kx.I64:
			return math.MaxInt64
		default:
			return math.MaxUint64
		}
	case kx.Max:
		switch d {
		case kx.F32, kx.F64:
			return math.Float64bits(math.Inf(-1))
		case kx.I32:
			return uint64(uint32(1 << 31))
		case kx.I64:
			return 1 << 63
		default:
			return 0
		}
	}
	panic("refIdentity")
}

// toBits turns a test value into the refOp representation.
func toBits(d kx.Dtype, v float64) uint64 {
	switch d {
	case kx.F32, kx.F64:
		return math.Float64bits(v)
	case kx.I32:
		return uint64(uint32(int32(v)))
	default:
		return uint64(int64(v))
	}
}

// decodeBits reads element i of a dtype buffer into the refOp representation.
func decodeBits(d kx.Dtype, b []byte, i int) uint64 {
	switch d {
	case kx.F32:
		return math.Float64bits(float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))))
	case kx.I32:
		return uint64(binary.LittleEndian.Uint32(b[4*i:]))
	default:
		return binary.LittleEndian.Uint64(b[8*i:])
	}
}

// reference computes, by brute force over every rank's data, what rank r must receive.
func reference(all []rankData, r int, d kx.Dtype, o kx.Op, width int) []uint64 {
	acc := map[int64][]uint64{}
	for _, rd := range all {
		for p, idx := range rd.out {
			a, ok := acc[idx]
			if !ok {
				a = make([]uint64, width)
				for c := range a {
					a[c] = refIdentity(d, o)
				}
				acc[idx] = a
			}
			for c := 0; c < width; c++ {
				a[c] = refOp(d, o, a[c], toBits(d, valueFor(o, rd.vals[p*width+c])))
			}
		}
	}
	var want []uint64
	for _, idx := range all[r].in {
		a, ok := acc[idx]
		for c := 0; c < width; c++ {
			if ok {
				want = append(want, a[c])
			} else {
				want = append(want, refIdentity(d, o))
			}
		}
	}
	return want
}

// checkEveryDtypeOp configures this rank's data of all, reduces it with every dtype and op (and
// with config_reduce too when oneShot) and checks each result against the brute force.
//
// all holds one entry per node: with replication, rank r is a replica of node r % len(all).
func checkEveryDtypeOp(t *testing.T, c *core.Comm, all []rankData, width int, oneShot bool) error {
	r := c.Rank() % len(all)
	rd := all[r]
	p, err := c.Config(rd.out, rd.in)
	if err != nil {
		return err
	}
	defer p.Free()
	for _, d := range allDtypes {
		for _, o := range opsFor(d) {
			in := make([]byte, len(rd.in)*width*d.Size())
			if err := p.Reduce(encode(d, o, rd.vals), in, d, o, width); err != nil {
				return fmt.Errorf("reduce %s %s: %w", d, o, err)
			}
			checkResult(t, "reduce", all, r, d, o, width, in)
			if !oneShot {
				continue
			}
			in2 := make([]byte, len(in))
			if _, err := c.ConfigReduce(rd.out, encode(d, o, rd.vals), rd.in, in2, d, o, width, false); err != nil {
				return fmt.Errorf("config_reduce %s %s: %w", d, o, err)
			}
			checkResult(t, "config_reduce", all, r, d, o, width, in2)
		}
	}
	return nil
}

// runJob runs fn on every rank of an in-memory job at once and returns the errors by rank.
// jobTimeout is the library's bound on any wait in the jobs of runJob; a job still running
// after jobDeadline hangs, and the test fails by its own deadline, not go test's.
const (
	jobTimeout  = 10 * time.Second
	jobDeadline = 3 * jobTimeout
)

func runJob(t testing.TB, m int, degrees string, fn func(c *core.Comm) error) []error {
	t.Helper()
	return runMem(t, m, func(r int) kx.Options {
		return kx.Options{Rank: r, Size: m, Degrees: degrees, Replication: 1, MinPacket: 4096, Timeout: jobTimeout}
	}, func(c *core.Comm, _ *memnet.Mem) error { return fn(c) })
}

// runMem runs fn on every rank of an in-memory job of size ranks at once, rank r's comm made
// with opts(r), and returns the errors by rank. fn gets the rank's transport too (to kill it).
func runMem(t testing.TB, size int, opts func(r int) kx.Options, fn func(c *core.Comm, mem *memnet.Mem) error) []error {
	t.Helper()
	return runMemJob(t, memnet.NewJob(size, jobTimeout), opts, fn)
}

// runMemJob is runMem on the ranks ts (a job made by memnet.NewJobWithLanes gets its lanes).
func runMemJob(t testing.TB, ts []*memnet.Mem, opts func(r int) kx.Options, fn func(c *core.Comm, mem *memnet.Mem) error) []error {
	t.Helper()
	size := len(ts)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := 0; r < size; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			var tr kx.Transport = ts[r]
			if ts[r].HasLanes() {
				tr = ts[r].WithLanes()
			}
			c, err := core.NewComm(tr, opts(r))
			if err != nil {
				errs[r] = err
				return
			}
			defer c.Close()
			errs[r] = fn(c, ts[r])
		}(r)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(jobDeadline):
		t.Fatalf("a job of %d ranks was still running after %v: it hangs", size, jobDeadline)
	}
	return errs
}

var allDtypes = []kx.Dtype{kx.F32, kx.F64, kx.I32, kx.I64, kx.U64}

func opsFor(d kx.Dtype) []kx.Op {
	ops := []kx.Op{kx.Sum, kx.Prod, kx.Min, kx.Max}
	if !d.IsFloat() {
		ops = append(ops, kx.Band, kx.Bor, kx.Bxor)
	} else {
		ops = append(ops, kx.RSum)
	}
	return ops
}

func checkResult(t *testing.T, label string, all []rankData, r int, d kx.Dtype, o kx.Op, width int, got []byte) {
	t.Helper()
	want := reference(all, r, d, o, width)
	for i, w := range want {
		if g := decodeBits(d, got, i); g != w {
			t.Errorf("%s rank %d %s %s width %d: element %d (in index %d) = %#x, want %#x",
				label, r, d, o, width, i, all[r].in[i/width], g, w)
			return
		}
	}
}

func TestButterflyAgainstBruteForce(t *testing.T) {
	plans := []struct {
		m       int
		degrees string
	}{
		{1, "auto"}, {2, "direct"}, {3, "direct"}, {4, "binary"}, {4, "direct"}, {4, "auto"},
		{5, "direct"}, {6, "3x2"}, {6, "2x3"}, {6, "binary"}, {7, "auto"}, {8, "4x2"},
		{8, "2x2x2"}, {8, "2x4"}, {8, "auto"},
	}
	for _, pl := range plans {
		for _, width := range []int{1, 3} {
			for _, same := range []bool{false, true} {
				name := fmt.Sprintf("m%d_%s_w%d", pl.m, pl.degrees, width)
				if same { // in = out, the same slice (one layer then gathers answers as it combines)
					name += "_same"
				}
				// Width 3 also takes the down phase that combines layer 0 sub-range by
				// sub-range as the messages land (small layers wait for them whole), in groups
				// of a few sub-ranges each (a small step's layer is one group).
				streamed := width == 3
				t.Run(name, func(t *testing.T) {
					if streamed {
						defer core.SetSmallDownBytes(-1)()
						defer core.SetSubGroupBytes(2500)()
					}
					const n = 5000
					all := make([]rankData, pl.m)
					for r := range all {
						all[r] = genRank(int64(pl.m*10+width), r, n, 300+50*r, 200+30*r, width)
						if same {
							all[r].in = all[r].out
						}
					}
					if pl.m > 2 && !same {
						all[1] = rankData{in: all[1].in} // a rank that contributes nothing
						all[2].in = nil                  // and one that asks for nothing
					}
					errs := runJob(t, pl.m, pl.degrees, func(c *core.Comm) error {
						return checkEveryDtypeOp(t, c, all, width, true)
					})
					for r, err := range errs {
						if err != nil {
							t.Errorf("rank %d: %v", r, err)
						}
					}
				})
			}
		}
	}
}
