package keyset

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestMixConstantsAreInverses(t *testing.T) {
	m1, m1i, m2, m2i := uint64(mixM1), uint64(mixM1Inv), uint64(mixM2), uint64(mixM2Inv)
	if m1*m1i != 1 || m2*m2i != 1 {
		t.Fatal("multiplicative inverses are wrong")
	}
}

func TestMixUnmixRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	xs := []uint64{0, 1, 2, 3, math.MaxUint64, 1 << 63, 1<<63 - 1, 0xdeadbeef}
	for range 100000 {
		xs = append(xs, r.Uint64())
	}
	for _, x := range xs {
		if y := Unhash(Hash(x)); y != x {
			t.Fatalf("Unmix(Mix(%#x)) = %#x", x, y)
		}
		if y := Hash(Unhash(x)); y != x {
			t.Fatalf("Mix(Unmix(%#x)) = %#x", x, y)
		}
	}
	// Known splitmix64 finaliser output (splitmix64 with seed 0 returns Mix(0x9e3779b97f4a7c15)).
	if got := Hash(0x9e3779b97f4a7c15); got != 0xe220a8397b1dcdaf {
		t.Fatalf("Mix(golden gamma) = %#x, want 0xe220a8397b1dcdaf", got)
	}
	// Small indices must not collide or stay small.
	seen := map[uint64]bool{}
	for i := uint64(0); i < 1<<16; i++ {
		k := Hash(i)
		if seen[k] {
			t.Fatalf("collision at %d", i)
		}
		seen[k] = true
	}
}

// digitRef computes floor(x*d/2^64) and the scaled remainder with big integers.
func digitRef(x uint64, d int) (int, uint64) {
	p := new(big.Int).Mul(new(big.Int).SetUint64(x), big.NewInt(int64(d)))
	q := new(big.Int).Rsh(p, 64)
	r := new(big.Int).And(p, new(big.Int).SetUint64(math.MaxUint64))
	return int(q.Int64()), r.Uint64()
}

func TestDigit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, d := range []int{1, 2, 3, 7, 8, 16, 63, 64, 1000, 1 << 20} {
		for _, x := range []uint64{0, 1, math.MaxUint64, 1 << 63, r.Uint64(), r.Uint64()} {
			g, rest := Digit(x, d)
			wg, wr := digitRef(x, d)
			if g != wg || rest != wr {
				t.Fatalf("Digit(%#x,%d) = %d,%#x want %d,%#x", x, d, g, rest, wg, wr)
			}
			if g < 0 || g >= d {
				t.Fatalf("digit %d out of [0,%d)", g, d)
			}
		}
	}
	// Boundaries: x = ceil(g*2^64/d) is the first key of digit g.
	for _, d := range []int{3, 5, 64} {
		for g := 1; g < d; g++ {
			b := new(big.Int).Lsh(big.NewInt(int64(g)), 64)
			b.Add(b, big.NewInt(int64(d-1)))
			b.Div(b, big.NewInt(int64(d)))
			x := b.Uint64()
			if dg, _ := Digit(x, d); dg != g {
				t.Fatalf("d=%d: first key of digit %d has digit %d", d, g, dg)
			}
			if dg, _ := Digit(x-1, d); dg != g-1 {
				t.Fatalf("d=%d: last key before digit %d has digit %d", d, g, dg)
			}
		}
	}
}

// TestDigitsMonotone: along sorted keys, the tuple of digits of all layers is lexicographically
// non-decreasing, so every layer's digit is monotone within a shared prefix.
func TestDigitsMonotone(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, ds := range [][]int{{8, 4, 2}, {16, 4}, {3, 5, 7}, {64}, {2, 2, 2, 2, 2, 2}} {
		keys := make([]uint64, 20000)
		for i := range keys {
			keys[i] = r.Uint64()
		}
		// Keys straddling digit boundaries exercise the exact edges.
		for g := 1; g < ds[0]; g++ {
			b := new(big.Int).Lsh(big.NewInt(int64(g)), 64)
			b.Add(b, big.NewInt(int64(ds[0]-1)))
			b.Div(b, big.NewInt(int64(ds[0])))
			x := b.Uint64()
			keys = append(keys, x-1, x, x+1)
		}
		keys = append(keys, 0, math.MaxUint64)
		slices.Sort(keys)
		tuple := func(k uint64) []int {
			out := make([]int, len(ds))
			for i := range ds {
				out[i] = KeyDigit(k, ds, i)
			}
			return out
		}
		prev := tuple(keys[0])
		for _, k := range keys[1:] {
			cur := tuple(k)
			if slices.Compare(prev, cur) > 0 {
				t.Fatalf("ds=%v: digits of %#x = %v come before %v", ds, k, cur, prev)
			}
			prev = cur
		}
	}
}

func TestSplitPointsBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, ds := range [][]int{{8, 4, 2}, {16, 4}, {3, 5, 7}, {1, 6}, {64}} {
		all := make([]uint64, 50000)
		for i := range all {
			all[i] = Hash(uint64(r.IntN(1 << 30)))
		}
		slices.Sort(all)
		all = slices.Compact(all)
		// Walk down the tree, at every layer splitting each node's sorted keys.
		groups := [][]uint64{all}
		for layer := range ds {
			var next [][]uint64
			for _, keys := range groups {
				b := SplitPoints(keys, ds, layer)
				if len(b) != ds[layer]+1 || b[0] != 0 || b[ds[layer]] != len(keys) {
					t.Fatalf("ds=%v layer %d: bad bounds %v for %d keys", ds, layer, b, len(keys))
				}
				for g := 0; g < ds[layer]; g++ {
					if b[g] > b[g+1] {
						t.Fatalf("bounds not monotone: %v", b)
					}
					var want []uint64
					for _, k := range keys {
						if KeyDigit(k, ds, layer) == g {
							want = append(want, k)
						}
					}
					if !slices.Equal(keys[b[g]:b[g+1]], want) {
						t.Fatalf("ds=%v layer %d part %d: %d keys, brute force %d",
							ds, layer, g, b[g+1]-b[g], len(want))
					}
					next = append(next, keys[b[g]:b[g+1]])
				}
			}
			groups = next
		}
	}
	if b := SplitPoints(nil, []int{4}, 0); !slices.Equal(b, []int{0, 0, 0, 0, 0}) {
		t.Fatalf("empty keys: %v", b)
	}
}

// TestBalanceOfSmallIndices: power-law data concentrates on small indices; after hashing, the
// first indices must spread evenly over the final parts of a butterfly.
func TestBalanceOfSmallIndices(t *testing.T) {
	for _, ds := range [][]int{{8, 4, 2}, {16, 4}, {64}, {3, 5, 7}} {
		parts := 1
		for _, d := range ds {
			parts *= d
		}
		for _, n := range []int{parts, 16 * parts, 1 << 16} {
			counts := make([]int, parts)
			for i := range n {
				k := Hash(uint64(i))
				p, stride := 0, 1
				for layer, d := range ds {
					p += KeyDigit(k, ds, layer) * stride
					stride *= d
				}
				counts[p]++
			}
			mean := float64(n) / float64(parts)
			// Binomial standard deviation; allow a generous 6 sigma (+2 for tiny means).
			sd := math.Sqrt(mean * (1 - 1/float64(parts)))
			lo, hi := slices.Min(counts), slices.Max(counts)
			if float64(hi) > mean+6*sd+2 || float64(lo) < mean-6*sd-2 {
				t.Errorf("ds=%v first %d indices: part sizes in [%d,%d], mean %.1f sd %.1f", ds, n, lo, hi, mean, sd)
			}
			if n >= 16*parts && lo == 0 {
				t.Errorf("ds=%v first %d indices: an empty part", ds, n)
			}
		}
	}
}

func BenchmarkMix(b *testing.B) {
	var s uint64
	for i := range b.N {
		s += Hash(uint64(i))
	}
	_ = s
}
