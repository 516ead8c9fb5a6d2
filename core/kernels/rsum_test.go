package kernels

import (
	"bytes"
	"kylix/core/kx"
	"kylix/core/rsum"
	"math"
	"math/rand"
	"testing"
)

// The RSum conversions against a value-by-value reference built from core/rsum alone, on
// widths across the chunk size (1, 3, 300 > fromChunk), lengths 0..N and misaligned caller
// buffers, with a sentinel past the end of every output; at every SIMD level (the Go level
// turns core/rsum's assembly loops off).
func TestRSumConversions(t *testing.T) { forEachLevel(t, testRSumConversions) }

func testRSumConversions(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, d := range []kx.Dtype{kx.F32, kx.F64} {
		ab, fs := rsum.AccBytes(d == kx.F64), d.Size()
		acc1 := func(v float64) []byte { // the reference accumulator of one value
			a := make([]byte, ab)
			if d == kx.F64 {
				rsum.FromF64(a, []float64{v})
			} else {
				rsum.FromF32(a, []float32{float32(v)})
			}
			return a
		}
		for _, w := range []int{1, 3, 300} {
			for _, n := range []int{0, 1, 7, 300, 700} {
				vals := make([]float64, n*w)
				for i := range vals {
					vals[i] = math.Ldexp(rng.NormFloat64(), rng.Intn(80)-40)
				}
				raw := make([]byte, 1+len(vals)*fs) // misaligned by one byte
				src := raw[1:]
				for i, v := range vals {
					if d == kx.F64 {
						putF64(src[i*8:], v)
					} else {
						putF32(src[i*4:], float32(v))
					}
				}
				rows := n + 5
				rb := w * ab
				// FromGather: row p from row idx[p], -1 the empty sum.
				gidx := make([]int32, rows)
				for p := range gidx {
					gidx[p] = -1
					if n > 0 && rng.Intn(5) > 0 {
						gidx[p] = int32(rng.Intn(n))
					}
				}
				got := append(make([]byte, rows*rb), 0xEE)
				FromGather(d, got[:rows*rb], src, gidx, w)
				for p, j := range gidx {
					for c := 0; c < w; c++ {
						want := make([]byte, ab)
						if j >= 0 {
							want = acc1(vals[int(j)*w+c])
						}
						if o := (p*w + c) * ab; !bytes.Equal(got[o:o+ab], want) {
							t.Fatalf("FromGather %s w%d n%d: row %d col %d differs", d, w, n, p, c)
						}
					}
				}
				if got[rows*rb] != 0xEE {
					t.Fatalf("FromGather wrote past the end")
				}
				// FromScatter (distinct rows) and FromScatterCombine (repeats fold in).
				perm := rng.Perm(rows)[:n]
				sidx := make([]int32, n)
				for p := range sidx {
					sidx[p] = int32(perm[p])
				}
				sc := append(make([]byte, rows*rb), 0xEE)
				FromScatter(d, sc[:rows*rb], src, sidx, w)
				rep := make([]int32, n)
				for p := range rep {
					rep[p] = int32(rng.Intn(3))
				}
				comb := append(make([]byte, 3*rb), 0xEE)
				FromScatterCombine(d, comb[:3*rb], src, rep, w)
				wantComb := make([]byte, 3*rb)
				for p := 0; p < n; p++ {
					for c := 0; c < w; c++ {
						a := acc1(vals[p*w+c])
						if o := (int(sidx[p])*w + c) * ab; !bytes.Equal(sc[o:o+ab], a) {
							t.Fatalf("FromScatter %s w%d n%d: row %d col %d differs", d, w, n, p, c)
						}
						o := (int(rep[p])*w + c) * ab
						rsum.Add(d == kx.F64, wantComb[o:o+ab], a)
					}
				}
				if !bytes.Equal(comb[:3*rb], wantComb) || sc[rows*rb] != 0xEE || comb[3*rb] != 0xEE {
					t.Fatalf("FromScatterCombine %s w%d n%d differs, or a write past the end", d, w, n)
				}
				// FromScatterCombineFresh: rows from fresh on hold garbage, started by their first
				// value; the indices in order of first appearance, or in any order (gaps cleared).
				for _, ordered := range []bool{true, false} {
					fidx := make([]int32, n)
					next := 1
					for p := range fidx {
						fidx[p] = int32(rng.Intn(5))
						if ordered {
							if next < 4 && rng.Intn(2) == 0 {
								next++
							}
							fidx[p] = int32(rng.Intn(next)) + 1 // row 0 holds a sum already
						}
					}
					fr := append(make([]byte, 5*rb), 0xEE)
					copy(fr, wantComb[:rb])
					for i := rb; i < 5*rb; i++ {
						fr[i] = byte(rng.Intn(256))
					}
					ref := append(make([]byte, 5*rb), 0xEE)
					copy(ref, wantComb[:rb])
					FromScatterCombine(d, ref[:5*rb], src, fidx, w)
					top := FromScatterCombineFresh(d, fr[:5*rb], src, fidx, w, 1)
					wantTop := 1
					for _, j := range fidx {
						wantTop = max(wantTop, int(j)+1)
					}
					if top != wantTop || !bytes.Equal(fr[:top*rb], ref[:top*rb]) || fr[5*rb] != 0xEE {
						t.Fatalf("FromScatterCombineFresh %s w%d n%d ordered %v: bound %d (want %d), or rows differ", d, w, n, ordered, top, wantTop)
					}
				}
				// Round, in place, against ToF64/ToF32 one value at a time.
				inPlace := append([]byte(nil), comb[:3*rb]...)
				Round(d, inPlace[:3*w*fs], inPlace)
				odd := make([]byte, 1+3*w*fs) // a misaligned dst: the chunked path
				Round(d, odd[1:], comb[:3*rb])
				if !bytes.Equal(odd[1:], inPlace[:3*w*fs]) {
					t.Fatalf("Round %s w%d n%d: into a misaligned dst differs from in place", d, w, n)
				}
				for i := 0; i < 3*w; i++ {
					var want []byte
					if d == kx.F64 {
						x := make([]float64, 1)
						rsum.ToF64(x, wantComb[i*ab:i*ab+ab])
						want = kernBytes(x)
					} else {
						x := make([]float32, 1)
						rsum.ToF32(x, wantComb[i*ab:i*ab+ab])
						want = kernBytes(x)
					}
					if !bytes.Equal(inPlace[i*fs:i*fs+fs], want) {
						t.Fatalf("Round %s w%d n%d: value %d differs", d, w, n, i)
					}
				}
			}
		}
	}
}

func putF64(b []byte, v float64) {
	x := math.Float64bits(v)
	for i := range 8 {
		b[i] = byte(x >> (8 * i))
	}
}

func putF32(b []byte, v float32) {
	x := math.Float32bits(v)
	for i := range 4 {
		b[i] = byte(x >> (8 * i))
	}
}
