package core_test

import (
	"bytes"
	"fmt"
	"kylix/core/kx"
	"kylix/core/rsum"
	"kylix/netio/memnet"
	"math"
	"math/big"
	"math/rand"
	"testing"

	"kylix/core"
)

// KYLIX_RSUM through the butterfly. The promise (include/kylix.h) is that the result depends
// only on the multiset of (index, value) contributions: these tests deal one multiset among
// 1..8 ranks in different ways, in permuted orders, with every kind of degrees, threads and
// replication, and ask for the same bits every time: the bits of folding the multiset into
// core/rsum accumulators on one goroutine, which math/big then checks for accuracy.

// rsumContrib is one contribution: an index and its width values.
type rsumContrib struct {
	idx  int64
	vals []float64
}

// rsumMultiset draws n contributions over keys indices (a few popular ones take many, as in
// power-law data). Values have random 53-bit significands and exponents over ±spread; a
// quarter cancel an earlier value of their index nearly or exactly, so that sums lose their
// leading bits.
func rsumMultiset(seed int64, n, keys, width, spread int) []rsumContrib {
	rng := rand.New(rand.NewSource(seed))
	var cs []rsumContrib
	for len(cs) < n {
		c := rsumContrib{idx: int64(rng.Intn(keys)), vals: make([]float64, width)}
		if rng.Intn(3) == 0 {
			c.idx = int64(rng.Intn(1 + keys/50))
		}
		for k := range c.vals {
			m := float64(rng.Int63n(1<<53)) / (1 << 53)
			c.vals[k] = math.Ldexp(m, rng.Intn(2*spread+1)-spread)
			if rng.Intn(2) == 0 {
				c.vals[k] = -c.vals[k]
			}
		}
		cs = append(cs, c)
		if len(cs) > 1 && rng.Intn(4) == 0 { // cancel an earlier contribution
			e := cs[rng.Intn(len(cs))]
			x := rsumContrib{idx: e.idx, vals: make([]float64, width)}
			for k, v := range e.vals {
				x.vals[k] = -v * (1 + float64(rng.Intn(3))*0x1p-40)
			}
			cs = append(cs, x)
		}
	}
	return cs
}

// rsumDeal deals the contributions to m ranks (way 0: round robin; 1: at random; 2: all to
// the last rank; 3: in contiguous blocks) and shuffles every rank's list: the same multiset,
// split and ordered differently. Every rank asks for every key, a key nobody sends and a
// repeat.
func rsumDeal(cs []rsumContrib, m, way, keys int, seed int64) []rankData {
	rng := rand.New(rand.NewSource(seed))
	per := make([][]rsumContrib, m)
	for i, c := range cs {
		r := 0
		switch way {
		case 0:
			r = i % m
		case 1:
			r = rng.Intn(m)
		case 2:
			r = m - 1
		case 3:
			r = i * m / len(cs)
		}
		per[r] = append(per[r], c)
	}
	all := make([]rankData, m)
	for r, list := range per {
		rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
		for _, c := range list {
			all[r].out = append(all[r].out, c.idx)
			all[r].vals = append(all[r].vals, c.vals...)
		}
		for k := 0; k <= keys; k++ {
			all[r].in = append(all[r].in, int64(k))
		}
		all[r].in = append(all[r].in, 3)
	}
	return all
}

// rsumEncode writes values as F32 or F64 (F32 rounds each value first: its own multiset).
func rsumEncode(d kx.Dtype, vals []float64) []byte {
	return encodeRaw(d, vals)
}

// rsumFold is the reference bits: every key's contributions folded one by one into an
// accumulator on one goroutine and rounded once, in the requests' order (keys 0..keys, then 3).
func rsumFold(d kx.Dtype, cs []rsumContrib, keys, width int) []byte {
	ab, f64 := rsum.AccBytes(d == kx.F64), d == kx.F64
	acc := make([]byte, (keys+1)*width*ab)
	one := make([]byte, ab)
	for _, c := range cs {
		for k, v := range c.vals {
			if f64 {
				rsum.FromF64(one, []float64{v})
			} else {
				rsum.FromF32(one, []float32{float32(v)})
			}
			o := (int(c.idx)*width + k) * ab
			rsum.Add(f64, acc[o:o+ab], one)
		}
	}
	out := make([]byte, 0, (keys+2)*width*d.Size())
	row := func(key int) {
		for k := 0; k < width; k++ {
			o := (key*width + k) * ab
			if f64 {
				x := make([]float64, 1)
				rsum.ToF64(x, acc[o:o+ab])
				out = append(out, encodeRaw(d, x)...)
			} else {
				x := make([]float32, 1)
				rsum.ToF32(x, acc[o:o+ab])
				out = append(out, encodeRaw(d, []float64{float64(x[0])})...)
			}
		}
	}
	for key := 0; key <= keys; key++ {
		row(key)
	}
	row(3)
	return out
}

// rsumCalls runs reduce, config_reduce and ireduce of this rank's data and checks each against
// want.
func rsumCalls(c *core.Comm, rd rankData, d kx.Dtype, width int, want []byte) error {
	vals := rsumEncode(d, rd.vals)
	p, err := c.Config(rd.out, rd.in)
	if err != nil {
		return err
	}
	defer p.Free()
	got := map[string][]byte{"reduce": make([]byte, len(want)), "config_reduce": make([]byte, len(want)), "ireduce": make([]byte, len(want))}
	if err := p.Reduce(vals, got["reduce"], d, kx.RSum, width); err != nil {
		return fmt.Errorf("reduce: %w", err)
	}
	if _, err := c.ConfigReduce(rd.out, vals, rd.in, got["config_reduce"], d, kx.RSum, width, false); err != nil {
		return fmt.Errorf("config_reduce: %w", err)
	}
	req, err := p.IReduce(vals, got["ireduce"], d, kx.RSum, width)
	if err == nil {
		err = req.Wait()
	}
	if err != nil {
		return fmt.Errorf("ireduce: %w", err)
	}
	for name, g := range got {
		if !bytes.Equal(g, want) {
			return fmt.Errorf("%s %s width %d: %s", name, d, width, firstDiff(d, g, want))
		}
	}
	// in = out, the same slice: a one-layer plan then rounds and gathers each sub-range as it
	// combines it (canFuseUp). Row p is key out[p]'s row of want (want's row k is key k).
	q, err := c.Config(rd.out, rd.out)
	if err != nil {
		return err
	}
	defer q.Free()
	same := make([]byte, len(vals))
	if err := q.Reduce(vals, same, d, kx.RSum, width); err != nil {
		return fmt.Errorf("reduce in = out: %w", err)
	}
	rb := width * d.Size()
	for p, k := range rd.out {
		if !bytes.Equal(same[p*rb:p*rb+rb], want[int(k)*rb:int(k)*rb+rb]) {
			return fmt.Errorf("reduce in = out %s width %d: row %d (key %d) differs", d, width, p, k)
		}
	}
	return nil
}

func firstDiff(d kx.Dtype, got, want []byte) string {
	for i := 0; i < len(want)/d.Size(); i++ {
		if g, w := decodeBits(d, got, i), decodeBits(d, want, i); g != w {
			return fmt.Sprintf("value %d = %#x, want %#x", i, g, w)
		}
	}
	return "lengths differ"
}

// The same multiset gives the same bits on 1..8 ranks, with degrees direct, binary, auto and
// mixed, threads 1, 2 and 4, dealt four ways and shuffled, through reduce, config_reduce and
// ireduce, widths 1 and 2, f32 and f64: the bits of the one-goroutine fold.
func TestRSumBitwiseEverywhere(t *testing.T) {
	defer core.SetMinPerWorker(16)()
	const n, keys = 2500, 400
	sets := map[int][]rsumContrib{1: rsumMultiset(1, n, keys, 1, 60), 2: rsumMultiset(2, n, keys, 2, 60)}
	want := map[string][]byte{}
	for _, d := range []kx.Dtype{kx.F32, kx.F64} {
		for w, cs := range sets {
			want[fmt.Sprint(d, w)] = rsumFold(d, cs, keys, w)
		}
	}
	mixed := map[int]string{4: "2x2", 6: "3x2", 8: "2x4"}
	run := 0
	for m := 1; m <= 8; m++ {
		degrees := []string{"direct", "binary", "auto"}
		if mx, ok := mixed[m]; ok {
			degrees = append(degrees, mx)
		}
		for _, deg := range degrees {
			threads, way, seed := []int{1, 2, 4}[run%3], run%4, int64(run)
			run++
			t.Run(fmt.Sprintf("m%d_%s_threads%d_deal%d", m, deg, threads, way), func(t *testing.T) {
				if seed%2 == 0 { // also the down phase that combines as messages land
					defer core.SetSmallDownBytes(-1)()
				}
				j := newLiveJob(t, m, kx.Options{Degrees: deg, Threads: threads})
				j.each(t, func(r int, c *core.Comm) error {
					for w := 1; w <= 2; w++ { // in the same order on every rank
						cs := sets[w]
						all := rsumDeal(cs, m, way, keys, seed)
						for _, d := range []kx.Dtype{kx.F32, kx.F64} {
							if err := rsumCalls(c, all[r], d, w, want[fmt.Sprint(d, w)]); err != nil {
								return err
							}
						}
					}
					return nil
				})
			})
		}
	}
}

// A property test: any permutation of the contributions, dealt to any number of ranks, gives
// the same bits.
func TestRSumPermutations(t *testing.T) {
	const n, keys = 1500, 200
	cs := rsumMultiset(7, n, keys, 1, 60)
	want := rsumFold(kx.F64, cs, keys, 1)
	rng := rand.New(rand.NewSource(8))
	for trial := 0; trial < 6; trial++ {
		perm := append([]rsumContrib(nil), cs...)
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		m := 1 + rng.Intn(7)
		all := rsumDeal(perm, m, rng.Intn(4), keys, int64(trial))
		errs := runJob(t, m, "auto", func(c *core.Comm) error {
			return rsumCalls(c, all[c.Rank()], kx.F64, 1, want)
		})
		expectNoErrors(t, errs)
	}
}

// Against the exact sum (math/big): with exponents over ±60 the error stays within the bound of
// core/rsum/doc.go, |result - exact| <= ulp(result)/2 + n max|x| 2^-64 (2^-32 for f32), and
// where every value fits the window the result is the exact sum correctly rounded (exponents over ±5 and 20-bit significands: every value within
// 32 bits of the largest, f32's guaranteed window). Checked on a 5-rank job's results.
func TestRSumAgainstExact(t *testing.T) {
	const n, keys = 3000, 150
	wide := rsumMultiset(11, n, keys, 1, 60)
	narrow := rsumMultiset(12, n, keys, 1, 5)
	for i := range narrow { // 20 significant bits: within the window of the largest value
		v := narrow[i].vals[0]
		e := math.Ilogb(v)
		narrow[i].vals[0] = math.Ldexp(math.Round(math.Ldexp(v, 19-e)), e-19)
	}
	for _, d := range []kx.Dtype{kx.F32, kx.F64} {
		for _, name := range []string{"wide", "narrow"} {
			cs := map[string][]rsumContrib{"wide": wide, "narrow": narrow}[name]
			all := rsumDeal(cs, 5, 1, keys, 3)
			got := make([][]byte, 5)
			errs := runJob(t, 5, "auto", func(c *core.Comm) error {
				rd := all[c.Rank()]
				p, err := c.Config(rd.out, rd.in)
				if err != nil {
					return err
				}
				defer p.Free()
				got[c.Rank()] = make([]byte, len(rd.in)*d.Size())
				return p.Reduce(rsumEncode(d, rd.vals), got[c.Rank()], d, kx.RSum, 1)
			})
			expectNoErrors(t, errs)
			checkAgainstExact(t, d, name, cs, keys, got[2], name == "narrow")
		}
	}
}

func checkAgainstExact(t *testing.T, d kx.Dtype, name string, cs []rsumContrib, keys int, got []byte, exact bool) {
	t.Helper()
	prec := uint(53)
	tail := 0x1p-64
	if d == kx.F32 {
		prec, tail = 24, 0x1p-32
	}
	sums := make([]*big.Float, keys+1)
	count := make([]int, keys+1)
	maxAbs := make([]float64, keys+1)
	for k := range sums {
		sums[k] = new(big.Float).SetPrec(4000) // wide enough to hold every sum here exactly
	}
	for _, c := range cs {
		v := c.vals[0]
		if d == kx.F32 {
			v = float64(float32(v))
		}
		sums[c.idx].Add(sums[c.idx], big.NewFloat(v))
		count[c.idx]++
		maxAbs[c.idx] = max(maxAbs[c.idx], math.Abs(v))
	}
	for k := 0; k <= keys; k++ {
		g := math.Float64frombits(decodeBits(d, got, k))
		r, _ := new(big.Float).SetPrec(prec).SetMode(big.ToNearestEven).Set(sums[k]).Float64()
		if exact {
			if g != r {
				t.Errorf("%s %s key %d: %g, want the correctly rounded exact sum %g", d, name, k, g, r)
				return
			}
			continue
		}
		var ulp float64
		if d == kx.F32 {
			ulp = float64(math.Nextafter32(float32(math.Abs(g)), float32(math.Inf(1)))) - math.Abs(g)
		} else {
			ulp = math.Nextafter(math.Abs(g), math.Inf(1)) - math.Abs(g)
		}
		bound := new(big.Float).SetFloat64(ulp/2 + float64(count[k])*maxAbs[k]*tail)
		diff := new(big.Float).SetPrec(4000).Sub(new(big.Float).SetFloat64(g), sums[k])
		if diff.Abs(diff).Cmp(bound) > 0 {
			t.Errorf("%s %s key %d: %g is %v from the exact sum, beyond the bound %v", d, name, k, g, diff, bound)
			return
		}
	}
}

// NaN, ±Inf, overflow and signed zeros, dealt over 3 ranks, sparse and dense: what
// include/kylix.h says they give, the same on every rank and split.
func TestRSumSpecialValues(t *testing.T) {
	for _, d := range []kx.Dtype{kx.F32, kx.F64} {
		big := math.MaxFloat64
		if d == kx.F32 {
			big = math.MaxFloat32
		}
		inf, nan := math.Inf(1), math.NaN()
		cases := []struct {
			name string
			in   []float64
			want float64 // NaN: the canonical quiet NaN's bits
		}{ // three contributions each: one a rank, for the dense allreduce too
			{"nan", []float64{1, nan, 2}, nan},
			{"+inf", []float64{inf, 1, -5}, inf},
			{"-inf", []float64{-inf, 1, 0}, -inf},
			{"+inf-inf", []float64{inf, -inf, 3}, nan},
			{"overflow", []float64{big, big, 0}, inf},
			{"-overflow", []float64{-big, -big, 1}, -inf},
			{"no intermediate overflow", []float64{big, big, -big}, big},
			{"-0", []float64{math.Copysign(0, -1), math.Copysign(0, -1), math.Copysign(0, -1)}, math.Copysign(0, -1)},
			{"-0+0", []float64{math.Copysign(0, -1), 0, math.Copysign(0, -1)}, 0},
			{"cancel to +0", []float64{1.5, -1.5, 0}, 0},
		}
		const m = 3
		for _, order := range []int{0, 1} {
			all := make([]rankData, m)
			for k, cs := range cases {
				for i, v := range cs.in {
					r := (i + k + order) % m
					all[r].out = append(all[r].out, int64(k))
					all[r].vals = append(all[r].vals, v)
				}
			}
			for r := range all {
				for k := range cases {
					all[r].in = append(all[r].in, int64(k))
				}
			}
			dense := make([][]float64, m) // the same contributions: element k of dense vectors
			for r := range dense {
				dense[r] = make([]float64, len(cases))
			}
			for k, cs := range cases {
				for i, v := range cs.in {
					dense[(i+order)%m][k] = v
				}
			}
			errs := runJob(t, m, "auto", func(c *core.Comm) error {
				rd := all[c.Rank()]
				p, err := c.Config(rd.out, rd.in)
				if err != nil {
					return err
				}
				defer p.Free()
				got := make([]byte, len(rd.in)*d.Size())
				if err := p.Reduce(rsumEncode(d, rd.vals), got, d, kx.RSum, 1); err != nil {
					return err
				}
				send := rsumEncode(d, dense[c.Rank()])
				recv := make([]byte, len(send))
				if err := c.Allreduce(send, recv, d, kx.RSum); err != nil {
					return err
				}
				for k, cs := range cases {
					if g, w := decodeBits(d, got, k), specialBits(d, cs.want); g != w {
						return fmt.Errorf("reduce %s %s: got %#x, want %#x", d, cs.name, g, w)
					}
					if g, w := decodeBits(d, recv, k), specialBits(d, cs.want); g != w {
						return fmt.Errorf("allreduce %s %s: got %#x, want %#x", d, cs.name, g, w)
					}
				}
				return nil
			})
			expectNoErrors(t, errs)
		}
	}
}

// specialBits is the decodeBits form of want, NaN as the canonical quiet NaN.
func specialBits(d kx.Dtype, want float64) uint64 {
	if math.IsNaN(want) {
		if d == kx.F32 {
			return math.Float64bits(float64(math.Float32frombits(0x7fc00000)))
		}
		return 0x7ff8000000000000
	}
	return math.Float64bits(want)
}

// Dense allreduce with RSUM: every element's result is the fold of the ranks' values, on 1..8
// ranks, through the direct exchange and the butterfly, blocking and not, in place or not.
func TestRSumDenseAllreduce(t *testing.T) {
	const count = 3000
	var cs [][]float64
	rng := rand.New(rand.NewSource(5))
	for r := 0; r < 8; r++ {
		v := make([]float64, count)
		for i := range v {
			v[i] = math.Ldexp(rng.NormFloat64(), rng.Intn(121)-60)
		}
		cs = append(cs, v)
	}
	for _, d := range []kx.Dtype{kx.F32, kx.F64} {
		// m ranks send vectors 0..m-1: element i's multiset is their values at i.
		for m := 1; m <= 8; m++ {
			var contribs []rsumContrib
			for r := 0; r < m; r++ {
				for i, v := range cs[r] {
					contribs = append(contribs, rsumContrib{idx: int64(i), vals: []float64{v}})
				}
			}
			want := rsumFold(d, contribs, count-1, 1)
			want = want[:count*d.Size()]
			for _, sw := range []int{1 << 30, 0} { // direct exchange; butterfly
				errs := runJob(t, m, "auto", func(c *core.Comm) error {
					c.SetDenseSwitch(sw)
					send := rsumEncode(d, cs[c.Rank()])
					recv := make([]byte, len(send))
					if err := c.Allreduce(send, recv, d, kx.RSum); err != nil {
						return err
					}
					if !bytes.Equal(recv, want) {
						return fmt.Errorf("allreduce %s m=%d switch %d: %s", d, m, sw, firstDiff(d, recv, want))
					}
					req, err := c.IAllreduce(send, send, d, kx.RSum) // in place
					if err == nil {
						err = req.Wait()
					}
					if err != nil {
						return err
					}
					if !bytes.Equal(send, want) {
						return fmt.Errorf("iallreduce in place %s m=%d: %s", d, m, firstDiff(d, send, want))
					}
					return nil
				})
				expectNoErrors(t, errs)
			}
		}
	}
}

// Replicated jobs with a dead replica give the unreplicated bits: the same multiset dealt to 3
// nodes of 2 replicas, one replica of node 1 killed before the reduces.
func TestRSumDeadReplica(t *testing.T) {
	const n, keys, s, m = 2000, 300, 2, 3
	cs := rsumMultiset(21, n, keys, 1, 60)
	want := rsumFold(kx.F64, cs, keys, 1)
	all := rsumDeal(cs, m, 1, keys, 4)
	errs := runReplicated(t, s, m, "direct", func(c *core.Comm, mem *memnet.Mem) error {
		if c.Rank() == m+1 {
			mem.Kill()
			return nil
		}
		for it := 0; it < 3; it++ {
			if err := rsumCalls(c, all[c.Rank()%m], kx.F64, 1, want); err != nil {
				return fmt.Errorf("iteration %d: %w", it, err)
			}
		}
		return nil
	})
	expectNoErrors(t, errs)
}
