package rsum

import (
	"bytes"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"testing/quick"
)

// The reference model computes, with math/big and without any code of the package, what
// doc.go specifies: the window's top bin from math.Frexp, each value truncated toward zero at
// the window's bottom, the exact sum of those, rounded once by big.Float (ties to even).

type kind struct {
	f64   bool
	k     int // limbs in the window
	qmin  int // exponent of position 0
	bytes int
}

var (
	k64 = kind{f64: true, k: 3, qmin: -1074, bytes: Acc64Bytes}
	k32 = kind{f64: false, k: 2, qmin: -149, bytes: Acc32Bytes}
)

// topBin is the bin of x's leading bit, found through Frexp rather than the bit fields.
func (t kind) topBin(x float64) int {
	_, e := math.Frexp(x) // |x| in [2^(e-1), 2^e)
	return (e - 1 - t.qmin) / 32
}

// model returns the bits the package must produce for the multiset vals (as float64s; for F32
// every value must be a float32) and the exact sum, for error checks.
func (t kind) model(vals []float64) (want uint64, exact *big.Float) {
	nan, pinf, ninf, other, negz := false, false, false, false, false
	T := 0
	exact = new(big.Float).SetPrec(2400)
	for _, x := range vals {
		switch {
		case math.IsNaN(x):
			nan = true
		case math.IsInf(x, 1):
			pinf = true
		case math.IsInf(x, -1):
			ninf = true
		case x == 0 && math.Signbit(x):
			negz = true
			continue
		case x != 0:
			T = max(T, t.topBin(x))
			exact.Add(exact, big.NewFloat(x))
		}
		other = true
	}
	switch {
	case nan || pinf && ninf:
		return t.bits(math.NaN()), exact
	case pinf:
		return t.bits(math.Inf(1)), exact
	case ninf:
		return t.bits(math.Inf(-1)), exact
	}
	bottom := 32*(T-t.k+1) + t.qmin // exponent of the window's lowest bit
	sum := new(big.Int)
	for _, x := range vals {
		if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		f := new(big.Float).SetPrec(2400).SetFloat64(x)
		f.SetMantExp(f, -bottom)
		i, _ := f.Int(nil) // truncates toward zero
		sum.Add(sum, i)
	}
	if sum.Sign() == 0 {
		if negz && !other {
			return t.bits(math.Copysign(0, -1)), exact
		}
		return 0, exact
	}
	r := new(big.Float).SetInt(sum)
	return t.nearest(r.SetMantExp(r, bottom)), exact
}

// nearest returns the bits of the float nearest to r (big.Float rounds half to even).
func (t kind) nearest(r *big.Float) uint64 {
	if t.f64 {
		f, _ := r.Float64()
		return math.Float64bits(f)
	}
	f, _ := r.Float32()
	return uint64(math.Float32bits(f))
}

func (t kind) bits(x float64) uint64 {
	if t.f64 {
		if math.IsNaN(x) {
			return 0x7ff8000000000000
		}
		return math.Float64bits(x)
	}
	if math.IsNaN(x) {
		return 0x7fc00000
	}
	return uint64(math.Float32bits(float32(x)))
}

// from converts vals into accumulators of kind t.
func (t kind) from(vals []float64) []byte {
	acc := make([]byte, len(vals)*t.bytes)
	if t.f64 {
		FromF64(acc, vals)
	} else {
		v32 := make([]float32, len(vals))
		for i, x := range vals {
			v32[i] = float32(x)
		}
		FromF32(acc, v32)
	}
	return acc
}

// round rounds accumulators to float bits.
func (t kind) round(acc []byte) []uint64 {
	n := len(acc) / t.bytes
	out := make([]uint64, n)
	if t.f64 {
		f := make([]float64, n)
		ToF64(f, acc)
		for i, x := range f {
			out[i] = math.Float64bits(x)
		}
	} else {
		f := make([]float32, n)
		ToF32(f, acc)
		for i, x := range f {
			out[i] = uint64(math.Float32bits(x))
		}
	}
	return out
}

// treeSum accumulates vals through a random merge tree, each value in its own accumulator.
func (t kind) treeSum(rng *rand.Rand, vals []float64) []byte {
	pool := make([][]byte, 0, len(vals)+1)
	pool = append(pool, make([]byte, t.bytes)) // an identity joins the tree too
	acc := t.from(vals)
	for i := range vals {
		pool = append(pool, acc[i*t.bytes:(i+1)*t.bytes])
	}
	return t.mergeTree(rng, pool)
}

// mergeTree merges random pairs of pool, in random direction, until one is left.
func (t kind) mergeTree(rng *rand.Rand, pool [][]byte) []byte {
	for len(pool) > 1 {
		i, j := rng.IntN(len(pool)), rng.IntN(len(pool)-1)
		if j >= i {
			j++
		}
		Add(t.f64, pool[i], pool[j])
		pool[j] = pool[len(pool)-1]
		pool = pool[:len(pool)-1]
	}
	return pool[0]
}

// scatterSum accumulates (index, value) contributions the way the butterfly does: the
// contributions are dealt at random to `ranks` ranks, each rank AddScatters its share (with
// repeated indices) into a local vector, and the vectors are merged in a random tree with Add.
func (t kind) scatterSum(rng *rand.Rand, idx []int32, vals []float64, n, ranks int) []byte {
	local := make([][]byte, ranks)
	share := make([][]int, ranks)
	for r := range local {
		local[r] = make([]byte, n*t.bytes)
	}
	for j := range vals {
		r := rng.IntN(ranks)
		share[r] = append(share[r], j)
	}
	for r, js := range share {
		rng.Shuffle(len(js), func(a, b int) { js[a], js[b] = js[b], js[a] })
		v := make([]float64, len(js))
		ix := make([]int32, len(js))
		for a, j := range js {
			v[a], ix[a] = vals[j], idx[j]
		}
		AddScatter(t.f64, local[r], t.from(v), ix)
	}
	return t.mergeTree(rng, local)
}

// genSpread draws n values with exponents in [-spread, spread] and heavy cancellation: about
// half are exact or near negations of earlier ones.
func genSpread(rng *rand.Rand, n, spread int, f64 bool) []float64 {
	vals := make([]float64, 0, n)
	for len(vals) < n {
		var x float64
		switch {
		case len(vals) > 0 && rng.IntN(3) == 0:
			x = -vals[rng.IntN(len(vals))]
		case len(vals) > 0 && rng.IntN(4) == 0:
			y := vals[rng.IntN(len(vals))]
			x = -y * (1 + math.Ldexp(float64(rng.IntN(7)-3), -52))
		default:
			x = math.Ldexp(rng.Float64()+0.5, rng.IntN(2*spread+1)-spread)
			if rng.IntN(2) == 0 {
				x = -x
			}
		}
		if !f64 {
			x = float64(float32(x))
		}
		vals = append(vals, x)
	}
	return vals
}

// genBits draws finite values uniformly over bit patterns: the full exponent range, including
// subnormals.
func genBits(rng *rand.Rand, n int, f64 bool) []float64 {
	vals := make([]float64, 0, n)
	for len(vals) < n {
		var x float64
		if f64 {
			x = math.Float64frombits(rng.Uint64())
		} else {
			x = float64(math.Float32frombits(rng.Uint32()))
		}
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			vals = append(vals, x)
		}
	}
	return vals
}

func (t kind) name() string {
	if t.f64 {
		return "F64"
	}
	return "F32"
}

// check asserts that vals, summed straight, by a random tree and by a shuffled tree, give the
// model's bits and the same accumulator bytes every time.
func (t kind) check(tb testing.TB, rng *rand.Rand, vals []float64) []byte {
	tb.Helper()
	want, _ := t.model(vals)
	first := t.treeSum(rng, vals)
	if got := t.round(first)[0]; got != want {
		tb.Fatalf("%s: sum of %d values = %#x, model %#x; values %v", t.name(), len(vals), got, want, vals)
	}
	for range 3 {
		p := append([]float64(nil), vals...)
		rng.Shuffle(len(p), func(a, b int) { p[a], p[b] = p[b], p[a] })
		if acc := t.treeSum(rng, p); !bytes.Equal(acc, first) {
			tb.Fatalf("%s: another order and tree gave accumulator %x, first %x", t.name(), acc, first)
		}
	}
	return first
}

func TestAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range []kind{k64, k32} {
		for trial := range 400 {
			n := 1 + rng.IntN(200)
			var vals []float64
			switch trial % 4 {
			case 0:
				vals = genSpread(rng, n, 60, k.f64)
			case 1:
				vals = genSpread(rng, n, 10, k.f64) // within the window: exact
			case 2:
				vals = genBits(rng, n, k.f64)
			default:
				vals = genSpread(rng, n, 1100, k.f64) // saturates F32 to ±Inf, F64 near its limits
			}
			k.check(t, rng, vals)
		}
	}
}

// TestExactWhenInWindow: when the contributions span at most 64 binades below the largest's
// leading bit, the result is the correctly rounded exact sum.
func TestExactWhenInWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, k := range []kind{k64, k32} {
		mantissa := 52
		slack := 64 // the window keeps at least 64 positions below the largest leading bit
		if !k.f64 {
			mantissa, slack = 23, 32
		}
		for range 500 {
			// Values of exponent up to ±spread span slack+1 positions at most: leading bit below
			// 2^spread, lowest at or above 2^(-spread-1-mantissa).
			spread := (slack-mantissa)/2 - 1
			vals := genSpread(rng, 1+rng.IntN(300), spread, k.f64)
			shift := rng.IntN(40) - 20 // moves the values across bin boundaries
			for i := range vals {
				vals[i] = math.Ldexp(vals[i], shift)
			}
			_, exact := k.model(vals)
			want := k.nearest(exact)
			if got := k.round(k.treeSum(rng, vals))[0]; got != want {
				t.Fatalf("%s: got %#x, correctly rounded exact sum %#x", k.name(), got, want)
			}
		}
	}
}

// TestErrorBound checks doc.go's bound against the exact sum over wide spreads, where
// truncation happens, and that it is no larger than a plain sum's bound.
func TestErrorBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, k := range []kind{k64, k32} {
		lost, eps := -64, -53
		if !k.f64 {
			lost, eps = -32, -24
		}
		for range 300 {
			vals := genSpread(rng, 1+rng.IntN(300), 60, k.f64)
			_, exact := k.model(vals)
			maxAbs, sumAbs := 0.0, new(big.Float).SetPrec(2400)
			for _, x := range vals {
				maxAbs = max(maxAbs, math.Abs(x))
				sumAbs.Add(sumAbs, big.NewFloat(math.Abs(x)))
			}
			got := k.round(k.treeSum(rng, vals))[0]
			var r float64
			var ulp float64
			if k.f64 {
				r = math.Float64frombits(got)
				ulp = math.Nextafter(math.Abs(r), math.Inf(1)) - math.Abs(r)
			} else {
				r32 := math.Float32frombits(uint32(got))
				r = float64(r32)
				ulp = float64(math.Nextafter32(float32(math.Abs(r)), float32(math.Inf(1)))) - math.Abs(r)
			}
			errAbs := new(big.Float).SetPrec(2400).Sub(big.NewFloat(r), exact)
			errAbs.Abs(errAbs)
			bound := new(big.Float).SetPrec(2400).SetFloat64(math.Ldexp(maxAbs*float64(len(vals)), lost))
			bound.Add(bound, big.NewFloat(ulp/2))
			if errAbs.Cmp(bound) > 0 {
				t.Fatalf("%s: error %g above bound %g", k.name(), errAbs, bound)
			}
			plain := new(big.Float).Mul(sumAbs, big.NewFloat(math.Ldexp(float64(len(vals)), eps)))
			plain.Add(plain, big.NewFloat(ulp/2))
			if bound.Cmp(plain) > 0 {
				t.Fatalf("%s: bound %g above a plain sum's %g", k.name(), bound, plain)
			}
		}
	}
}

func TestScatterMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, k := range []kind{k64, k32} {
		for range 40 {
			n := 1 + rng.IntN(50)
			m := rng.IntN(400)
			vals := genSpread(rng, m, 60, k.f64)
			idx := make([]int32, m)
			for j := range idx {
				idx[j] = int32(rng.IntN(n))
			}
			first := k.scatterSum(rng, idx, vals, n, 1+rng.IntN(8))
			// The values added straight in, in another order, give the same bytes.
			direct := make([]byte, n*k.bytes)
			perm := rng.Perm(m)
			pv, pi := make([]float64, m), make([]int32, m)
			for a, j := range perm {
				pv[a], pi[a] = vals[j], idx[j]
			}
			if k.f64 {
				AddScatterF64(direct, pv, pi)
			} else {
				pv32 := make([]float32, m)
				for a, x := range pv {
					pv32[a] = float32(x)
				}
				AddScatterF32(direct, pv32, pi)
			}
			if !bytes.Equal(direct, first) {
				t.Fatalf("%s: AddScatter%s gave other accumulators", k.name(), k.name())
			}
			for range 3 {
				if acc := k.scatterSum(rng, idx, vals, n, 1+rng.IntN(8)); !bytes.Equal(acc, first) {
					t.Fatalf("%s: another deal and tree gave other accumulators", k.name())
				}
			}
			got := k.round(first)
			for i := range n {
				var mine []float64
				for j, x := range vals {
					if int(idx[j]) == i {
						mine = append(mine, x)
					}
				}
				if want, _ := k.model(mine); got[i] != want {
					t.Fatalf("%s: index %d = %#x, model %#x", k.name(), i, got[i], want)
				}
			}
		}
	}
}

func TestSpecials(t *testing.T) {
	inf, nan, nz := math.Inf(1), math.NaN(), math.Copysign(0, -1)
	max64 := math.MaxFloat64
	cases := []struct {
		name string
		vals []float64
		want float64
	}{
		{"empty", nil, 0},
		{"+0", []float64{0}, 0},
		{"-0", []float64{nz}, nz},
		{"-0 + -0", []float64{nz, nz}, nz},
		{"-0 + +0", []float64{nz, 0}, 0},
		{"x + -x", []float64{1.5, -1.5}, 0},
		{"-0 + x + -x", []float64{nz, 1.5, -1.5}, 0},
		{"NaN", []float64{1, nan, 2}, nan},
		{"+Inf", []float64{1, inf, -max64}, inf},
		{"-Inf", []float64{-inf, 1}, -inf},
		{"+Inf + -Inf", []float64{inf, -inf}, nan},
		{"NaN + Inf", []float64{nan, inf}, nan},
		{"overflow", []float64{max64, max64, -1}, inf},
		{"negative overflow", []float64{-max64, -max64}, -inf},
		{"overflow cancelled", []float64{max64, max64, -max64}, max64},
		{"max plus half ulp ties to even", []float64{max64, math.Ldexp(1, 970)}, inf},
		{"max plus under half ulp", []float64{max64, math.Ldexp(1, 969)}, max64},
		{"subnormals", []float64{5e-324, 5e-324, -1e-323}, 0},
		// 1 + 2^-53 is a tie; 2^-70, more than 64 bits below the leading one, breaks it upward.
		{"sticky below the top 64 bits", []float64{1, math.Ldexp(1, -53), math.Ldexp(1, -70)}, math.Nextafter(1, 2)},
		{"tie to even", []float64{1, math.Ldexp(1, -53)}, 1},
		{"subnormal to normal", []float64{math.Ldexp(1, -1023), math.Ldexp(1, -1023)}, math.Ldexp(1, -1022)},
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, c := range cases {
		got := k64.round(k64.check(t, rng, c.vals))[0]
		if got != k64.bits(c.want) {
			t.Errorf("F64 %s: got %v (%#x), want %v", c.name, math.Float64frombits(got), got, c.want)
		}
	}
	max32 := float64(math.MaxFloat32)
	cases32 := []struct {
		name string
		vals []float64
		want float64
	}{
		{"-0 + -0", []float64{nz, nz}, nz},
		{"overflow", []float64{max32, max32}, inf},
		{"max plus half ulp ties to even", []float64{max32, math.Ldexp(1, 103)}, inf},
		{"max plus under half ulp", []float64{max32, math.Ldexp(1, 102)}, max32},
		{"+Inf + -Inf", []float64{inf, -inf}, nan},
		{"subnormal", []float64{math.Ldexp(1, -149), math.Ldexp(1, -149)}, math.Ldexp(1, -148)},
		// The exact sum 1024 + 2^-14 + 2^-50 rounds up to the next float32; rounding through a
		// float64 first would give 1024 + 2^-14, a tie, and then 1024.
		// The same on ToF32's FPU path: the window holds 2^60 + 2^36 + 1 times 2^-21, which a
		// conversion through float64 would round to 2^60, a tie, and then down.
		{"no double rounding, FPU path", []float64{math.Ldexp(1, 39), math.Ldexp(1, 15), math.Ldexp(1, -21)}, math.Ldexp(1, 39) + math.Ldexp(1, 16)},
		{"no double rounding", []float64{1024, math.Ldexp(1, -14), math.Ldexp(1, -50)}, float64(math.Nextafter32(1024, 2048))},
	}
	for _, c := range cases32 {
		got := k32.round(k32.check(t, rng, c.vals))[0]
		if got != k32.bits(c.want) {
			t.Errorf("F32 %s: got %v (%#x), want %v", c.name, math.Float32frombits(uint32(got)), got, c.want)
		}
	}
}

// TestLimbHeadroom takes one index to the documented limit of contributions (2^27 for F64,
// 2^26 for F32) of the largest parts, both signs, by doubling: Add(acc, acc).
func TestLimbHeadroom(t *testing.T) {
	for _, k := range []kind{k64, k32} {
		// All significand bits set, the leading one at the top of bin 3: the largest parts.
		x, doublings := math.Nextafter(math.Ldexp(1, 32*4-1074), 0), 27
		if !k.f64 {
			x, doublings = float64(math.Nextafter32(float32(math.Ldexp(1, 32*4-149)), 0)), 26
		}
		for _, v := range []float64{x, -x} {
			acc := k.from([]float64{v})
			for range doublings {
				Add(k.f64, acc, acc)
			}
			want, _ := k.model([]float64{math.Ldexp(v, doublings)})
			if got := k.round(acc)[0]; got != want {
				t.Fatalf("%s: 2^%d * %g = %#x, want %#x", k.name(), doublings, v, got, want)
			}
		}
	}
}

func TestQuick(t *testing.T) {
	// testing/quick's float generator rarely makes specials or cancellation; mix in both.
	rng := rand.New(rand.NewPCG(11, 12))
	specials := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat64, 5e-324}
	f := func(vals []float64, seed uint64) bool {
		r := rand.New(rand.NewPCG(seed, 0))
		for i := range vals {
			switch r.IntN(8) {
			case 0:
				vals[i] = specials[r.IntN(len(specials))]
			case 1:
				if i > 0 {
					vals[i] = -vals[r.IntN(i)]
				}
			}
		}
		for _, k := range []kind{k64, k32} {
			v := vals
			if !k.f64 {
				v = make([]float64, len(vals))
				for i, x := range vals {
					v[i] = float64(float32(x))
				}
			}
			k.check(t, rng, v)
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 300}); err != nil {
		t.Fatal(err)
	}
}

// FuzzRsum reads the input as float64 bit patterns (every pattern: NaNs, infinities,
// subnormals) and checks the model, order independence and, for F32, the same on the values
// narrowed.
func FuzzRsum(f *testing.F) {
	f.Add([]byte{}, uint64(1))
	f.Add(bytes.Repeat([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xef, 0x7f}, 3), uint64(2))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0xf0, 0x7f}, uint64(3))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		vals := make([]float64, len(data)/8)
		for i := range vals {
			vals[i] = math.Float64frombits(le.Uint64(data[8*i:]))
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		k64.check(t, rng, vals)
		v32 := make([]float64, len(vals))
		for i, x := range vals {
			v32[i] = float64(float32(x))
		}
		k32.check(t, rng, v32)
	})
}

func TestLengthsAndIdentity(t *testing.T) {
	for _, k := range []kind{k64, k32} {
		if AccBytes(k.f64) != k.bytes {
			t.Fatalf("%s: AccBytes %d", k.name(), AccBytes(k.f64))
		}
		acc := k.from([]float64{1, 2, 3})
		Identity(acc)
		for _, b := range k.round(acc) {
			if b != 0 {
				t.Fatalf("%s: identity rounds to %#x", k.name(), b)
			}
		}
		// Nothing past the given values is written.
		buf := bytes.Repeat([]byte{0xa5}, 3*k.bytes)
		if k.f64 {
			FromF64(buf, []float64{1, 2})
		} else {
			FromF32(buf, []float32{1, 2})
		}
		if !bytes.Equal(buf[2*k.bytes:], bytes.Repeat([]byte{0xa5}, k.bytes)) {
			t.Fatalf("%s: From wrote past its values", k.name())
		}
	}
}

// TestRoundBits checks the final rounding alone against big.Float on random magnitudes of up
// to 128 bits, with exponents chosen to land in the subnormal, normal and overflow ranges.
func TestRoundBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, k := range []kind{k64, k32} {
		f, maxExp := &f64, 1024
		if !k.f64 {
			f, maxExp = &f32, 128
		}
		for range 200000 {
			w := [2]uint64{rng.Uint64(), rng.Uint64()}
			w[rng.IntN(2)] >>= rng.UintN(64)       // vary the width...
			w[rng.IntN(2)] &= -uint64(rng.IntN(2)) // ...and make runs of zeros, ties
			if rng.IntN(4) == 0 {
				w[0] = 1 << 63 // an exact tie when the rounding point is just below it
			}
			if w == [2]uint64{} {
				continue
			}
			lead := 127
			if w[1] == 0 {
				lead -= 64
			}
			// Put the leading bit anywhere from below the smallest subnormal to above the max.
			e2 := f.qmin - lead - 3 + rng.IntN(maxExp-f.qmin+6)
			got := roundBits(w[1], w[0], e2, f)
			x := new(big.Int).SetUint64(w[1])
			x.Lsh(x, 64).Or(x, new(big.Int).SetUint64(w[0]))
			r := new(big.Float).SetInt(x)
			want := k.nearest(r.SetMantExp(r, e2))
			if got != want {
				t.Fatalf("%s: round(%x:%x * 2^%d) = %#x, want %#x", k.name(), w[1], w[0], e2, got, want)
			}
		}
	}
}

// TestNoAllocs: every call streams over its arguments without allocating.
func TestNoAllocs(t *testing.T) {
	const n = 600 // more than one chunk of AddScatterF64/F32
	v64, v32, idx := make([]float64, n), make([]float32, n), make([]int32, n)
	for i := range n {
		v64[i], v32[i], idx[i] = float64(i)-300.5, float32(i)*1e-3, int32(i*7%n)
	}
	a64, b64 := make([]byte, n*Acc64Bytes), make([]byte, n*Acc64Bytes)
	a32, b32 := make([]byte, n*Acc32Bytes), make([]byte, n*Acc32Bytes)
	allocs := testing.AllocsPerRun(10, func() {
		FromF64(a64, v64)
		FromF32(a32, v32)
		Add(true, b64, a64)
		Add(false, b32, a32)
		AddScatter(true, b64, a64, idx)
		AddScatter(false, b32, a32, idx)
		AddScatterF64(b64, v64, idx)
		AddScatterF32(b32, v32, idx)
		ToF64(v64, b64)
		ToF32(v32, b32)
		Identity(b64)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations a run", allocs)
	}
}
