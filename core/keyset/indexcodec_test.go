package keyset

import (
	"bytes"
	"encoding/binary"
	"kylix/core/kx"
	"kylix/internal/fuzzcheck"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// hashedKeys is what config holds for a set of indices: their keys, sorted and unique.
func hashedKeys(idx []uint64) []uint64 {
	k := make([]uint64, 0, len(idx))
	for _, x := range idx {
		k = append(k, Hash(x))
	}
	slices.Sort(k)
	return slices.Compact(k)
}

// codecCases are the index sets every round-trip test runs: empty, single, dense, sorted runs,
// random, power-law-like, the extremes of the index range, and lists that cross chunk borders.
func codecCases() map[string][]uint64 {
	r := rand.New(rand.NewPCG(7, 9))
	seq := func(a, n, step uint64) []uint64 {
		s := make([]uint64, n)
		for i := range s {
			s[i] = a + uint64(i)*step
		}
		return s
	}
	randSet := func(n int, max uint64) []uint64 {
		s := make([]uint64, n)
		for i := range s {
			s[i] = r.Uint64N(max)
		}
		return s
	}
	powerLaw := func(n int) []uint64 { // popular small indices, a long tail
		s := make([]uint64, n)
		for i := range s {
			s[i] = uint64(math.Exp(r.Float64() * math.Log(1e7)))
		}
		return s
	}
	const big = math.MaxInt64
	return map[string][]uint64{
		"empty":          nil,
		"single zero":    {0},
		"single max":     {big},
		"single":         {123456789},
		"two extremes":   {0, big},
		"dense":          seq(0, 50000, 1),
		"dense offset":   seq(1<<40, 3*codecChunk+1, 1),
		"stride 300":     seq(5, 20000, 300),
		"chunk exact":    seq(0, codecChunk, 3),
		"chunk plus one": seq(0, codecChunk+1, 3),
		"random 1e7":     randSet(40000, 1e7),
		"random 2^63":    randSet(30000, big),
		"power law":      powerLaw(60000),
		"top of range":   seq(big-5000, 5001, 1),
		"sparse huge":    {1, 1 << 20, 1 << 40, 1 << 62, big - 1},
	}
}

func TestIndexCodecRoundTrip(t *testing.T) {
	var enc IndexEncoder
	var dec IndexDecoder
	for name, idx := range codecCases() {
		keys := hashedKeys(idx)
		blob := enc.AppendList([]byte("prefix"), keys)
		if string(blob[:6]) != "prefix" {
			t.Fatalf("%s: the bytes before the list were changed", name)
		}
		got, err := dec.DecodeList(blob[6:], len(keys), 3)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(got, keys) && !(len(got) == 0 && len(keys) == 0) {
			t.Fatalf("%s: %d keys decoded differ from the %d encoded", name, len(got), len(keys))
		}
		if len(keys) >= 1000 {
			t.Logf("%-15s %6d keys: %8d raw bytes, %7d wire (ratio %.2f)", name, len(keys), 8*len(keys),
				len(blob)-6, float64(8*len(keys))/float64(len(blob)-6))
		}
	}
}

// Sorted original indices at the densities of the benchmark compress at least 3-fold; hashed
// keys sent as they are would not compress at all.
func TestIndexCodecRatio(t *testing.T) {
	var enc IndexEncoder
	r := rand.New(rand.NewPCG(1, 2))
	for _, density := range []float64{0.2, 0.03} {
		var idx []uint64
		for x := uint64(0); x < 1e6; x++ {
			if r.Float64() < density/4 { // one destination's quarter of a rank's set
				idx = append(idx, x)
			}
		}
		keys := hashedKeys(idx)
		wire := len(enc.AppendList(nil, keys))
		if ratio := float64(8*len(keys)) / float64(wire); ratio < 3 {
			t.Errorf("density %g: ratio %.2f, want at least 3", density, ratio)
		}
	}
}

func TestRadixSortU64(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, nbits := range []int{1, 7, 11, 12, 24, 33, 63, 64} {
		x := make([]uint64, 5000)
		for i := range x {
			x[i] = r.Uint64() >> (64 - nbits)
		}
		want := slices.Clone(x)
		slices.Sort(want)
		got := radixSortU64(x, make([]uint64, len(x)), nbits)
		if !slices.Equal(got, want) {
			t.Fatalf("%d bits: not sorted", nbits)
		}
	}
}

// hashSort must sort whatever it gets, in bounded time: uniform keys, keys crowded in one
// bucket, and every size around its thresholds.
func TestHashSort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 2, 31, 32, 33, 100, 4097, 70000} {
		for _, shape := range []string{"dense", "random", "crowded"} {
			x := make([]uint64, n)
			for i := range x {
				switch shape {
				case "dense":
					x[i] = uint64(i)
				case "random":
					x[i] = r.Uint64() >> 1
				case "crowded": // indices whose keys share the top bits but one: hostile input
					x[i] = Unhash(uint64(i) | 0xf<<60)
				}
			}
			x = slices.Compact(slices.Sorted(slices.Values(x)))
			want := make([]uint64, len(x))
			for i, v := range x {
				want[i] = Hash(v)
			}
			slices.Sort(want)
			hashSort(x, make([]uint64, len(x)))
			if !slices.Equal(x, want) {
				t.Fatalf("n=%d %s: not the sorted keys", n, shape)
			}
		}
	}
}

// Corrupt payloads: every truncation, every single-byte change and headers that lie give
// CodeInternal naming the sender, or (a change that still decodes) sorted distinct keys of the
// promised count; never a panic.
func TestIndexCodecCorrupt(t *testing.T) {
	var enc IndexEncoder
	var dec IndexDecoder
	keys := hashedKeys(codecCases()["power law"][:3*codecChunk/2])
	blob := enc.AppendList(nil, keys)
	check := func(what string, b []byte, n int) {
		t.Helper()
		got, err := dec.DecodeList(b, n, 5)
		if err != nil {
			if kx.CodeOf(err) != kx.CodeInternal {
				t.Fatalf("%s: code %v, want internal: %v", what, kx.CodeOf(err), err)
			}
			if r, ok := err.(*kx.Error).Rank(); !ok || r != 5 {
				t.Fatalf("%s: error does not name rank 5: %v", what, err)
			}
			return
		}
		if len(got) != n || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != n {
			t.Fatalf("%s: decoded %d keys, not %d sorted distinct ones", what, len(got), n)
		}
	}
	for cut := 0; cut < len(blob); cut += 1 + cut/16 {
		check("truncated", blob[:cut], len(keys))
	}
	for i := 0; i < len(blob); i += 1 + i/64 {
		b := slices.Clone(blob)
		b[i] ^= 0x5a
		check("flipped", b, len(keys))
	}
	check("count too high", blob, len(keys)+1)
	check("count too low", blob, len(keys)-1)
	check("count huge", blob, 1<<40)
	check("count negative", blob, -1)
	check("no keys, bytes", blob, 0)
	check("trailing byte", append(slices.Clone(blob), 0), len(keys))
	// A raw chunk whose gaps overflow the int64 range.
	over := []byte{codecModeRaw<<4 | 8, 8, 0, 0, 0}
	over = binary.LittleEndian.AppendUint64(over, math.MaxUint64)
	check("overflow", over, 1)
	over2 := []byte{codecModeRaw<<4 | 8, 16, 0, 0, 0} // two gaps, planes shuffled
	over2 = append(over2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x7f)
	check("overflow second", over2, 2)
	for _, h := range [][]byte{{0x09, 1, 0, 0, 0, 0}, {0x00, 1, 0, 0, 0, 0}, {0x21, 1, 0, 0, 0, 0}, {0x11, 0xff, 0xff, 0xff, 0xff}} {
		check("bad header", h, 1)
	}
}

// FuzzDecodeIndexList: whatever the bytes and the count, decoding returns an error or n sorted
// distinct keys, allocates in proportion to the bytes, never writes into them, and never panics
// (make test runs it for 10 s).
func FuzzDecodeIndexList(f *testing.F) {
	var enc IndexEncoder
	for _, name := range []string{"single", "dense", "stride 300", "sparse huge", "two extremes"} {
		keys := hashedKeys(codecCases()[name])
		if len(keys) > 3000 {
			keys = keys[:3000]
		}
		f.Add(enc.AppendList(nil, keys), len(keys))
	}
	f.Add([]byte{}, 0)
	f.Add([]byte{0x11, 3, 0, 0, 0, 0x10, 0, 0}, 2)
	var dec IndexDecoder
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n > 2*codecChunk+1 {
			// lz4 may legitimately expand a few bytes 255-fold, and long lists that decode take
			// milliseconds under the fuzzer's instrumentation; two chunks and a bit exercise every
			// path. Counts the bytes cannot hold are TestIndexCodecCorrupt's.
			return
		}
		sent := slices.Clone(b)
		var got []uint64
		var err error
		fuzzcheck.Bounded(t, "DecodeList", len(b), decodedPerByte, func() { got, err = dec.DecodeList(b, n, 1) })
		if !bytes.Equal(b, sent) {
			t.Fatal("decoding wrote into the received list")
		}
		if err != nil {
			if kx.CodeOf(err) != kx.CodeInternal {
				t.Fatalf("code %v: %v", kx.CodeOf(err), err)
			}
			return
		}
		if len(got) != n || !slices.IsSorted(got) {
			t.Fatalf("%d keys decoded for %d, or not sorted", len(got), n)
		}
		for i := 1; i < len(got); i++ {
			if got[i] == got[i-1] {
				t.Fatalf("repeated key %#x", got[i])
			}
		}
		if n <= 256 { // what decodes re-encodes to the same keys (short lists: the cost)
			again, err := dec.DecodeList(enc.AppendList(nil, got), n, 1)
			if err != nil || n > 0 && !slices.Equal(again, got) {
				t.Fatalf("re-encoding does not round-trip: %v", err)
			}
		}
	})
}

// benchList is one destination's list at 4 ranks, n = 1e7: a quarter of a rank's indices at
// the given density, uniformly scattered (the benchmark data's ids are scattered by a bijection).
func benchList(density float64) []uint64 {
	r := rand.New(rand.NewPCG(11, 12))
	var idx []uint64
	for x := uint64(0); x < 1e7; x++ {
		if r.Float64() < density/4 {
			idx = append(idx, x)
		}
	}
	return hashedKeys(idx)
}

func benchEncode(b *testing.B, density float64) {
	keys := benchList(density)
	var enc IndexEncoder
	buf := enc.AppendList(nil, keys)
	b.SetBytes(int64(8 * len(keys)))
	b.ReportMetric(float64(8*len(keys))/float64(len(buf)), "ratio")
	b.ResetTimer()
	for range b.N {
		buf = enc.AppendList(buf[:0], keys)
	}
}

func benchDecode(b *testing.B, density float64) {
	keys := benchList(density)
	var enc IndexEncoder
	var dec IndexDecoder
	buf := enc.AppendList(nil, keys)
	b.SetBytes(int64(8 * len(keys)))
	b.ResetTimer()
	for range b.N {
		if _, err := dec.DecodeList(buf, len(keys), 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIndexEncodeD03(b *testing.B) { benchEncode(b, 0.03) }
func BenchmarkIndexEncodeD20(b *testing.B) { benchEncode(b, 0.2) }
func BenchmarkIndexDecodeD03(b *testing.B) { benchDecode(b, 0.03) }
func BenchmarkIndexDecodeD20(b *testing.B) { benchDecode(b, 0.2) }
