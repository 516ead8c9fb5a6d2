//go:build amd64 && !noasm

package core

// AVX2 dense Sum for f32/f64, chosen at start-up from CPUID (no dependency: the probe is a few
// lines of assembly). Build with -tags noasm for the plain-Go loops everywhere.
//
// The assembly adds element by element, dst[i] = dst[i] + src[i] (dst as the first operand, as
// in the Go loop), so both paths give identical bits; the tests check every length 0..257.

//go:noescape
func kernAddF32AVX2(dst, src []float32)

//go:noescape
func kernAddF64AVX2(dst, src []float64)

func kernCPUID(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

func kernXGETBV() (eax, edx uint32)

// kernHasAVX2 reports CPU and OS support for AVX2 (CPUID.7.0:EBX[5], AVX and OSXSAVE in
// CPUID.1:ECX, and XMM+YMM state enabled in XCR0).
var kernHasAVX2 = kernDetectAVX2()

func kernDetectAVX2() bool {
	maxLeaf, _, _, _ := kernCPUID(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := kernCPUID(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if ecx1&osxsave == 0 || ecx1&avx == 0 {
		return false
	}
	if xcr0, _ := kernXGETBV(); xcr0&6 != 6 {
		return false
	}
	_, ebx7, _, _ := kernCPUID(7, 0)
	return ebx7&(1<<5) != 0
}

// kernAsmMin is the length below which the Go loop is used (call and tail overhead dominate).
const kernAsmMin = 16

func kernAddF32(x, y []float32) {
	if kernHasAVX2 && len(x) >= kernAsmMin {
		kernAddF32AVX2(x, y[:len(x)])
		return
	}
	kernAddGo(x, y)
}

func kernAddF64(x, y []float64) {
	if kernHasAVX2 && len(x) >= kernAsmMin {
		kernAddF64AVX2(x, y[:len(x)])
		return
	}
	kernAddGo(x, y)
}
