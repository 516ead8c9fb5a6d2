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

//go:noescape
func toF64AVX512(dst *float64, acc *byte, n int, perm *[48]uint64) int

// toF64Perm is toF64AVX512's VPERMI2Q index vectors: for w0, w1, w2 of eight accumulators
// (24 words in A, B, C), the lanes taken from (A, B), then those from (that, C).
var toF64Perm = [48]uint64{
	0, 3, 6, 9, 12, 15, 0, 0, 0, 1, 2, 3, 4, 5, 8 + 2, 8 + 5,
	1, 4, 7, 10, 13, 0, 0, 0, 0, 1, 2, 3, 4, 8 + 0, 8 + 3, 8 + 6,
	2, 5, 8, 11, 14, 0, 0, 0, 0, 1, 2, 3, 4, 8 + 1, 8 + 4, 8 + 7,
}

//go:noescape
func toF32AVX512(dst *float32, acc *byte, n int, perm *[16]uint64) int

// toF32Perm is toF32AVX512's VPERMI2Q index vectors: w0 and w1 of eight accumulators.
var toF32Perm = [16]uint64{0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15}

// asmOK says whether this CPU runs the assembly loops (BMI2's SHLX/SHRX); useAsm whether they
// run (SetAsm).
var asmOK = cpuid.CPU.Supports(cpuid.BMI2)

// avx512OK says whether it runs toF64AVX512 (F, DQ, CD); useAVX512 whether it does.
var avx512OK = asmOK && cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512DQ, cpuid.AVX512CD)

var useAsm, useAVX512 = asmOK, avx512OK

// SetAsm turns the assembly loops on or off (on only where the CPU has them), the AVX-512 one
// with avx512, and returns whether they are on. kernels' SIMD level sets it (KYLIX_NOSIMD
// turns them off); tests force every path. Not safe to call while kernels run.
func SetAsm(on, avx512 bool) (bool, bool) {
	useAsm = on && asmOK
	useAVX512 = useAsm && avx512 && avx512OK
	return useAsm, useAVX512
}

// addValues64Asm is addValues64Go through the assembly loop: the values it leaves (zeros,
// subnormals, infinities, NaNs, rows out of range) go one at a time through addValues64Go.
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
		if useAVX512 { // eight at a time, then the rest one at a time
			i += toF64AVX512(&dst[i], &acc[i*Acc64Bytes], len(dst)-i, &toF64Perm)
			if i == len(dst) {
				break
			}
		}
		i += toF64BMI2(&dst[i], &acc[i*Acc64Bytes], len(dst)-i)
		if i == len(dst) {
			break
		}
		toF64Go(dst[i:i+1], acc[i*Acc64Bytes:i*Acc64Bytes+Acc64Bytes])
	}
}

// toF32Asm is toF32Go through toF32AVX512; the accumulators it leaves go one at a time through
// toF32Go.
func toF32Asm(dst []float32, acc []byte) {
	acc = acc[:len(dst)*Acc32Bytes]
	for i := 0; i < len(dst); i++ {
		i += toF32AVX512(&dst[i], &acc[i*Acc32Bytes], len(dst)-i, &toF32Perm)
		if i == len(dst) {
			break
		}
		toF32Go(dst[i:i+1], acc[i*Acc32Bytes:i*Acc32Bytes+Acc32Bytes])
	}
}
