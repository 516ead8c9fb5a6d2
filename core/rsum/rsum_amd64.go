//go:build amd64 && !noasm

package rsum

import "github.com/klauspost/cpuid/v2"

// prefetchRows asks for the rows idx[j] of an accumulator vector at base, size bytes a row,
// to be brought into cache. Every index must be a row of the vector.
//
//go:noescape
func prefetchRows(base *byte, idx []int32, size int)

//go:noescape
func addValues64BMI2(dst *byte, rows int, vals []float64, idx []int32, j, fresh int) (int, int)

//go:noescape
func addValues32BMI2(dst *byte, rows int, vals []float32, idx []int32, j, fresh int) (int, int)

//go:noescape
func toF64BMI2(dst *float64, acc *byte, n int) int

// asmOK says whether this CPU runs the assembly loops (BMI2's SHLX/SHRX); useAsm whether they
// run (SetAsm).
var asmOK = cpuid.CPU.Supports(cpuid.BMI2)

var useAsm = asmOK

// SetAsm turns the assembly loops on or off (on only where the CPU has them) and returns
// whether they are on. kernels' SIMD level sets it (KYLIX_NOSIMD turns it off); tests force
// both paths. Not safe to call while kernels run.
func SetAsm(on bool) bool {
	useAsm = on && asmOK
	return useAsm
}

// addValues64Asm is addValues64Go through the assembly loop: the values it leaves (zeros,
// subnormals, infinities, NaNs, gaps, rows out of range) go one at a time through
// addValues64Go.
func addValues64Asm(dst []byte, vals []float64, idx []int32, fresh int) int {
	return addValuesAsm(dst, vals, idx, fresh, Acc64Bytes, addValues64BMI2, addValues64Go)
}

// addValues32Asm is addValues64Asm for F32.
func addValues32Asm(dst []byte, vals []float32, idx []int32, fresh int) int {
	return addValuesAsm(dst, vals, idx, fresh, Acc32Bytes, addValues32BMI2, addValues32Go)
}

func addValuesAsm[T float32 | float64](dst []byte, vals []T, idx []int32, fresh, ab int,
	asm func(*byte, int, []T, []int32, int, int) (int, int), goLoop func([]byte, []T, []int32, int) int) int {
	idx = idx[:len(vals)]
	var base *byte
	if len(dst) > 0 {
		base = &dst[0]
	}
	for j := 0; j < len(vals); j++ {
		j, fresh = asm(base, len(dst)/ab, vals, idx, j, fresh)
		if j == len(vals) {
			break
		}
		fresh = goLoop(dst, vals[j:j+1], idx[j:j+1], fresh)
	}
	return fresh
}

// toF64Asm is toF64Go through the assembly loop; the accumulators it leaves go one at a time
// through toF64Go.
func toF64Asm(dst []float64, acc []byte) {
	acc = acc[:len(dst)*Acc64Bytes]
	for i := 0; i < len(dst); i++ {
		i += toF64BMI2(&dst[i], &acc[i*Acc64Bytes], len(dst)-i)
		if i == len(dst) {
			break
		}
		toF64Go(dst[i:i+1], acc[i*Acc64Bytes:i*Acc64Bytes+Acc64Bytes])
	}
}
