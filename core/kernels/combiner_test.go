package kernels

import (
	"fmt"
	"kylix/core/kernels/kerneltest"
	"kylix/core/kx"
	"math/rand/v2"
	"testing"
)

// TestCombinerFoldsLikeTheReference folds three sources with a Combiner, as the dense direct
// exchange does, for every valid dtype and op, at lengths on both sides of the SIMD kernels'
// threshold, with aligned buffers (Sum's typed kernels, sumKernels) and misaligned ones (which
// those decline), and compares with the reference folded from the op's identity one element at a
// time.
func TestCombinerFoldsLikeTheReference(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, p := range validPairs() {
		d, o := kx.Dtype(p[0]), kx.Op(p[1])
		for _, n := range []int{1, 2, 8, 15, 16, 17, 100} {
			for _, off := range []int{0, 1, 3} {
				srcs := [][]byte{randBuf(d, n, r), randBuf(d, n, r), randBuf(d, n, r)}
				want := make([]byte, n*d.Size())
				for k := range n {
					kerneltest.SetElem(d, want, k, identityBits(d, o))
				}
				mask := make([]bool, n)
				for _, s := range srcs {
					next, m := refScatter(d, o, want, s, iota32(n), 1)
					want = next
					for k := range mask {
						mask[k] = mask[k] || m[k]
					}
				}
				dst := make([]byte, off+n*d.Size())[off:]
				c := NewCombiner(d, o, 1, dst)
				for _, s := range srcs {
					if off > 0 {
						s = append(make([]byte, off, off+len(s)), s...)[off:]
					}
					c.Combine(s)
				}
				compareBufs(t, fmt.Sprintf("Combiner %s/%s n=%d offset %d", d, o, n, off), d, o, dst, want, mask)
			}
		}
	}
}

// iota32 is the identity index list 0..n-1 (the reference folds a whole vector as a scatter).
func iota32(n int) []int32 {
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	return idx
}
