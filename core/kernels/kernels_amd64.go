//go:build amd64 && !noasm

package kernels

// SIMD kernels for amd64, chosen at start-up with github.com/klauspost/cpuid/v2. Build with
// -tags noasm for the plain-Go loops everywhere; set KYLIX_NOSIMD=1 (or =avx512, to stop at
// AVX2) to switch them off at run time; tests force each path with kernSetLevel.
//
// Every kernel does, element by element, what the Go loop it replaces does, with dst as the
// first operand (x86 returns the first operand's NaN when both are NaN, as the Go loop does
// unless the compiler commutes it), so results are bitwise the Go loop's. kernels_simd_test.go
// checks every length 0..257 on every path with sentinels past the end of dst.
//
// What won and what was dropped after measuring (AVX-512 dense Sum, gather-add-scatter,
// prefetching random gathers) is in docs/measurements.md, with the command that measured it.

import (
	"kylix/core/kx"
	"kylix/core/rsum"
	"os"
	"strings"
	"unsafe"

	"github.com/klauspost/cpuid/v2"
)

//go:noescape
func kernAddF32AVX2(dst, src []float32)

//go:noescape
func kernAddF64AVX2(dst, src []float64)

//go:noescape
func kernAddI32AVX2(dst, src []int32)

//go:noescape
func kernAddI64AVX2(dst, src []int64)

//go:noescape
func kernMinF32AVX2(dst, src []float32) int

//go:noescape
func kernMinF64AVX2(dst, src []float64) int

//go:noescape
func kernMaxF32AVX2(dst, src []float32) int

//go:noescape
func kernMaxF64AVX2(dst, src []float64) int

//go:noescape
func kernMinI32AVX2(dst, src []int32) int

//go:noescape
func kernMaxI32AVX2(dst, src []int32) int

//go:noescape
func kernMinI64AVX512(dst, src []int64) int

//go:noescape
func kernMaxI64AVX512(dst, src []int64) int

//go:noescape
func kernMinU64AVX512(dst, src []uint64) int

//go:noescape
func kernMaxU64AVX512(dst, src []uint64) int

//go:noescape
func kernAndAVX2(dst, src []uint32) int

//go:noescape
func kernOrAVX2(dst, src []uint32) int

//go:noescape
func kernXorAVX2(dst, src []uint32) int

//go:noescape
func kernGather32AVX512(dst, src []uint32, idx []int32, id uint32) int

//go:noescape
func kernGather64AVX512(dst, src []uint64, idx []int32, id uint64) int

//go:noescape
func kernGather32AVX2(dst, src []uint32, idx []int32, id uint32) int

//go:noescape
func kernGather64AVX2(dst, src []uint64, idx []int32, id uint64) int

// Instruction-set levels, lowest first.
const (
	kernLevelGo     = "go"
	kernLevelAVX2   = "avx2"
	kernLevelAVX512 = "avx512"
)

// kernCPULevels lists the levels this CPU and OS support (cpuid checks the XCR0 state bits).
// The AVX-512 kernels need F and DQ (VEXTRACTI32X8).
var kernCPULevels = func() []string {
	l := []string{kernLevelGo}
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2) {
		l = append(l, kernLevelAVX2)
		if cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512DQ) {
			l = append(l, kernLevelAVX512)
		}
	}
	return l
}()

// The active paths. Read on every kernel call; written only at start-up and by tests.
var kernAVX2, kernAVX512 bool

func init() { kernSetLevel(kernDefaultLevel(os.Getenv("KYLIX_NOSIMD"))) }

// kernDefaultLevel is the best supported level, capped by KYLIX_NOSIMD: empty or "0" means no
// cap, "avx512" stops at AVX2, anything else (e.g. "1") means the Go loops.
func kernDefaultLevel(nosimd string) string {
	best := kernCPULevels[len(kernCPULevels)-1]
	switch strings.ToLower(strings.TrimSpace(nosimd)) {
	case "", "0", "false":
		return best
	case kernLevelAVX512:
		if best == kernLevelAVX512 {
			return kernLevelAVX2
		}
		return best
	}
	return kernLevelGo
}

// kernLevels returns the levels the tests can force on this machine.
func kernLevels() []string { return kernCPULevels }

// kernLevel returns the active level.
func Level() string {
	switch {
	case kernAVX512:
		return kernLevelAVX512
	case kernAVX2:
		return kernLevelAVX2
	}
	return kernLevelGo
}

// kernSetLevel makes level the active one; it panics on a level the CPU lacks. Not safe to
// call while kernels run.
func kernSetLevel(level string) {
	for _, l := range kernCPULevels {
		if l == level {
			kernAVX2 = level == kernLevelAVX2 || level == kernLevelAVX512
			kernAVX512 = level == kernLevelAVX512
			rsum.SetAsm(kernAVX2, kernAVX512) // core/rsum's loops: off with the Go level
			return
		}
	}
	kernPanic("SIMD level %q not supported on this CPU", level)
}

// kernAsmMin is the length below which the Go loop is used (call and tail overhead dominate).
const kernAsmMin = 16

// The dense Sum: AVX2 from kernAsmMin elements on, else the Go loop kernAddGo.

func kernAddF32(x, y []float32) {
	if kernAVX2 && len(x) >= kernAsmMin {
		kernAddF32AVX2(x, y[:len(x)])
	} else {
		kernAddGo(x, y)
	}
}

func kernAddF64(x, y []float64) {
	if kernAVX2 && len(x) >= kernAsmMin {
		kernAddF64AVX2(x, y[:len(x)])
	} else {
		kernAddGo(x, y)
	}
}

func kernAddI32(x, y []int32) {
	if kernAVX2 && len(x) >= kernAsmMin {
		kernAddI32AVX2(x, y[:len(x)])
	} else {
		kernAddGo(x, y)
	}
}

func kernAddI64(x, y []int64) {
	if kernAVX2 && len(x) >= kernAsmMin {
		kernAddI64AVX2(x, y[:len(x)])
	} else {
		kernAddGo(x, y)
	}
}

// kernMinMax runs the SIMD Min or Max (o) of x and y on a prefix of x and returns its length;
// the caller's Go loop does the rest. 64-bit integers need AVX-512 (VPMINSQ, VPMINUQ).
// It replaces: for i := range x { x[i] = kernMin(x[i], y[i]) } (or kernMax)
func kernMinMax[T kernNum](o kx.Op, x, y []T) int {
	if !kernAVX2 || len(x) < kernAsmMin {
		return 0
	}
	y = y[:len(x)]
	min := o == kx.Min
	switch v := any(x).(type) {
	case []float32:
		return kernPick(min, kernMinF32AVX2, kernMaxF32AVX2)(v, any(y).([]float32))
	case []float64:
		return kernPick(min, kernMinF64AVX2, kernMaxF64AVX2)(v, any(y).([]float64))
	case []int32:
		return kernPick(min, kernMinI32AVX2, kernMaxI32AVX2)(v, any(y).([]int32))
	case []int64:
		if kernAVX512 {
			return kernPick(min, kernMinI64AVX512, kernMaxI64AVX512)(v, any(y).([]int64))
		}
	case []uint64:
		if kernAVX512 {
			return kernPick(min, kernMinU64AVX512, kernMaxU64AVX512)(v, any(y).([]uint64))
		}
	}
	return 0
}

func kernPick[F any](first bool, a, b F) F {
	if first {
		return a
	}
	return b
}

// kernBitwisePrefix runs Band, Bor or Bxor (o) of integer x and y on a prefix of x and returns
// its length; the caller's Go loop does the rest. The bits do not care about element type.
// It replaces: for i := range x { x[i] &= y[i] } (or |=, ^=)
func kernBitwisePrefix[T kernNum](o kx.Op, x, y []T) int {
	if !kernAVX2 || len(x) < kernAsmMin {
		return 0
	}
	words := int(unsafe.Sizeof(x[0])) / 4
	xw := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(x))), len(x)*words)
	yw := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(y))), len(x)*words)
	var n int
	switch o {
	case kx.Band:
		n = kernAndAVX2(xw, yw)
	case kx.Bor:
		n = kernOrAVX2(xw, yw)
	case kx.Bxor:
		n = kernXorAVX2(xw, yw)
	}
	return n / words
}

// kernAddU64 is kernAddI64: wrapping addition has the same bits signed or not.
func kernAddU64(x, y []uint64) { kernAddI64(kernAs[int64](x), kernAs[int64](y)) }

// kernAs reinterprets a slice as another element type of the same size.
func kernAs[U, T any](v []T) []U {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*U)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
}

// kernGatherW1 runs the SIMD w == 1 gather on a prefix of idx and returns its length; the
// caller's Go loop does the rest (and panics on a bad index there). len(x) == len(idx).
// It replaces: for p, j := range idx { if j < 0 { x[p] = id } else { x[p] = y[j] } }
func kernGatherW1[T kernNum](x, y []T, idx []int32, id T) int {
	if !kernAVX2 || len(idx) < kernGatherMin {
		return 0
	}
	if unsafe.Sizeof(id) == 8 && len(y) > kernGatherBigTable/8 {
		return 0
	}
	if unsafe.Sizeof(id) == 4 {
		id32 := *(*uint32)(unsafe.Pointer(&id))
		if kernAVX512 {
			return kernGather32AVX512(kernAs[uint32](x), kernAs[uint32](y), idx, id32)
		}
		return kernGather32AVX2(kernAs[uint32](x), kernAs[uint32](y), idx, id32)
	}
	id64 := *(*uint64)(unsafe.Pointer(&id))
	if kernAVX512 {
		return kernGather64AVX512(kernAs[uint64](x), kernAs[uint64](y), idx, id64)
	}
	return kernGather64AVX2(kernAs[uint64](x), kernAs[uint64](y), idx, id64)
}

// kernGatherBigTable is the table size in bytes above which the 8-byte gather is left to the Go
// loop: past it the SIMD gather lost on random indices and was no steady win on increasing ones,
// while 4-byte gathers won at every size (docs/measurements.md, "SIMD kernels").
const kernGatherBigTable = 16 << 20
