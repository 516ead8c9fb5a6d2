package kernels

import (
	"fmt"
	"kylix/core/kx"
	"kylix/core/rsum"
	"math"
	"unsafe"
)

// Reduction kernels over value buffers.
//
// Values are []byte holding elements of a Dtype in native (little-endian) byte order, row-major
// with `width` elements per index. The kernels view a buffer as []T with unsafe.Slice; this
// needs the buffer's address to be aligned to T (4 bytes for f32/i32, 8 for the others). Go
// allocations and malloc'ed C buffers always are, as are offsets that are multiples of the
// element size into them. A misaligned buffer is still accepted: it is copied into an aligned
// temporary (one allocation and one extra pass per misaligned operand per call) and, for dst,
// copied back, so results are bit-identical to the aligned path, just slower.
//
// The dtype and op are switched on once per call; the loops are specialised per element type
// (generic instantiation per shape) and per op, and allocate nothing on the aligned path.
//
// Op semantics, all deterministic: the same inputs in the same order give the same bits.
//   - Sum, Prod: IEEE arithmetic for floats (round to nearest even, no fusion, no
//     reassociation: dst[i] op src[i] element by element); wrapping two's-complement arithmetic
//     for integers. A NaN operand gives that NaN (quieted, payload kept); when both operands
//     are NaN the result is one of the two (the compiler may commute the add or multiply), the
//     same one on every run of a given build.
//   - Min, Max: NaN propagates. If the dst element is NaN it is kept, else a NaN src element is
//     taken, payloads unchanged. Otherwise Min(-0, +0) = -0 and Max(-0, +0) = +0 in either order.
//   - Band, Bor, Bxor: integer dtypes only.
//   - User ops (o >= FirstUserOp, see userop.go): the registered callback, called once per chunk
//     of many elements, never per element. They have no identity: Identity and Gather write
//     zero bytes for them.
//
// dst must not overlap src, except that Combine accepts dst and src being the same slice.
// Invalid dtype/op pairs (see CheckDtypeOp) and inconsistent lengths are caller bugs: the
// kernels panic on them, as they do (via the runtime's bounds checks) on an index out of range.

type kernNum interface {
	~float32 | ~float64 | ~int32 | ~int64 | ~uint64
}

type kernInt interface {
	~int32 | ~int64 | ~uint64
}

type kernFloat interface {
	~float32 | ~float64
}

func kernPanic(format string, args ...any) {
	panic("kylix/core kernel: " + fmt.Sprintf(format, args...))
}

// kernView returns b viewed as []T and true, or an aligned copy of b and false when b's address
// is not aligned for T. len(b) must be a multiple of the element size.
func kernView[T kernNum](b []byte) ([]T, bool) {
	var z T
	size := int(unsafe.Sizeof(z))
	if len(b)%size != 0 {
		kernPanic("buffer of %d bytes is not a whole number of %d-byte elements", len(b), size)
	}
	n := len(b) / size
	if n == 0 {
		return nil, true
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p)%unsafe.Alignof(z) == 0 {
		return unsafe.Slice((*T)(p), n), true
	}
	v := make([]T, n)
	copy(kernBytes(v), b)
	return v, false
}

// AlignedBytes returns n zeroed bytes aligned to 8, so that every dtype's kernels can view
// them: plan buffers, dense scratch, user-op temporaries.
func AlignedBytes(n int) []byte {
	if n == 0 {
		return nil
	}
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), n)
}

// kernBytes views v as bytes (always valid: byte has no alignment).
func kernBytes[T kernNum](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*int(unsafe.Sizeof(v[0])))
}

// kernMin and kernMax implement the documented NaN and signed-zero rules. For integer T the
// NaN tests are constant false and vanish.
func kernMin[T kernNum](a, b T) T {
	if a != a {
		return a
	}
	if b != b {
		return b
	}
	return min(a, b) // the builtin orders -0 before +0
}

func kernMax[T kernNum](a, b T) T {
	if a != a {
		return a
	}
	if b != b {
		return b
	}
	return max(a, b)
}

// ---- Identity ----

// Identity writes the op's identity into every element of dst: 0 for Sum (+0 for floats; note
// +0 + -0 = +0, so a Sum over a single -0 yields +0), 1 for Prod, +Inf/-Inf for Min/Max on
// floats, the integer extremes for Min/Max on integers, all ones for Band, 0 for Bor and Bxor.
func Identity(d kx.Dtype, o kx.Op, dst []byte) {
	if o >= kx.FirstUserOp || o == kx.RSum { // RSum: the empty sum's accumulator
		if !d.Valid() {
			kernPanic("invalid dtype %d", int(d))
		}
		clear(dst)
		return
	}
	switch d {
	case kx.F32:
		kernFill(dst, floatIdentity[float32](d, o))
	case kx.F64:
		kernFill(dst, floatIdentity[float64](d, o))
	case kx.I32:
		kernFill(dst, intIdentity[int32](d, o, math.MinInt32, math.MaxInt32))
	case kx.I64:
		kernFill(dst, intIdentity[int64](d, o, math.MinInt64, math.MaxInt64))
	case kx.U64:
		kernFill(dst, intIdentity[uint64](d, o, 0, math.MaxUint64))
	default:
		kernPanic("invalid dtype %d", int(d))
	}
}

func floatIdentity[T kernFloat](d kx.Dtype, o kx.Op) T {
	switch o {
	case kx.Sum:
		return 0
	case kx.Prod:
		return 1
	case kx.Min:
		return T(math.Inf(1))
	case kx.Max:
		return T(math.Inf(-1))
	}
	kernPanic("op %s is not defined for %s", o, d)
	return 0
}

func intIdentity[T kernInt](d kx.Dtype, o kx.Op, lo, hi T) T {
	switch o {
	case kx.Sum, kx.Bor, kx.Bxor:
		return 0
	case kx.Prod:
		return 1
	case kx.Min:
		return hi
	case kx.Max:
		return lo
	case kx.Band:
		return ^T(0)
	}
	kernPanic("op %s is not defined for %s", o, d)
	return 0
}

func kernFill[T kernNum](dst []byte, id T) {
	x, aligned := kernView[T](dst)
	if id == 0 { // no identity is -0, so this is all-zero bits
		clear(x)
	} else {
		for i := range x {
			x[i] = id
		}
	}
	if !aligned {
		copy(dst, kernBytes(x))
	}
}

// ---- Combine ----

// Combine sets dst[i] = op(dst[i], src[i]) for every element; len(dst) must equal len(src).
func Combine(d kx.Dtype, o kx.Op, dst, src []byte) {
	if len(dst) != len(src) {
		kernPanic("Combine: len(dst) = %d, len(src) = %d", len(dst), len(src))
	}
	if o >= kx.FirstUserOp && d.Valid() {
		userCombine(mustUserOp(o), d, dst, src)
		return
	}
	if o == kx.RSum {
		rsumRows("Combine", d, dst, src, -1, 1)
		rsum.Add(d == kx.F64, dst, src)
		return
	}
	switch d {
	case kx.F32:
		combineBytes[float32](d, o, dst, src, kernAddF32)
	case kx.F64:
		combineBytes[float64](d, o, dst, src, kernAddF64)
	case kx.I32:
		combineBytes[int32](d, o, dst, src, kernAddI32)
	case kx.I64:
		combineBytes[int64](d, o, dst, src, kernAddI64)
	case kx.U64:
		combineBytes[uint64](d, o, dst, src, kernAddU64)
	default:
		kernPanic("invalid dtype %d", int(d))
	}
}

// combineBytes views the buffers and runs the op's loop. add, when not nil, is the dense Sum
// kernel for T (the SIMD path where there is one).
func combineBytes[T kernNum](d kx.Dtype, o kx.Op, dst, src []byte, add func(x, y []T)) {
	x, aligned := kernView[T](dst)
	y, _ := kernView[T](src)
	y = y[:len(x)]
	switch o {
	case kx.Sum:
		if add != nil {
			add(x, y)
		} else {
			kernAddGo(x, y)
		}
	case kx.Prod:
		for i := range x {
			x[i] *= y[i]
		}
	case kx.Min:
		for i := kernMinMax(o, x, y); i < len(x); i++ { // SIMD prefix, if any
			x[i] = kernMin(x[i], y[i])
		}
	case kx.Max:
		for i := kernMinMax(o, x, y); i < len(x); i++ {
			x[i] = kernMax(x[i], y[i])
		}
	case kx.Band, kx.Bor, kx.Bxor:
		if !kernBitwise(d, o, x, y) {
			kernPanic("op %s is not defined for %s", o, d)
		}
	default:
		kernPanic("invalid op %d", int(o))
	}
	if !aligned {
		copy(dst, kernBytes(x))
	}
}

// kernAddGo is the portable dense Sum loop, unrolled by four.
func kernAddGo[T kernNum](x, y []T) {
	y = y[:len(x)]
	i := 0
	for ; i+4 <= len(x); i += 4 {
		xs, ys := x[i:i+4:i+4], y[i:i+4:i+4]
		xs[0] += ys[0]
		xs[1] += ys[1]
		xs[2] += ys[2]
		xs[3] += ys[3]
	}
	for ; i < len(x); i++ {
		x[i] += y[i]
	}
}

// kernBitwise dispatches the bitwise ops to their integer instantiation; false for floats.
func kernBitwise[T kernNum](d kx.Dtype, o kx.Op, x, y []T) bool {
	if d.IsFloat() {
		return false
	}
	p := kernBitwisePrefix(o, x, y) // SIMD prefix, if any
	x, y = x[p:], y[p:]
	switch xv := any(x).(type) {
	case []int32:
		bitwiseLoop(o, xv, any(y).([]int32))
	case []int64:
		bitwiseLoop(o, xv, any(y).([]int64))
	case []uint64:
		bitwiseLoop(o, xv, any(y).([]uint64))
	default:
		return false
	}
	return true
}

func bitwiseLoop[T kernInt](o kx.Op, x, y []T) {
	y = y[:len(x)]
	switch o {
	case kx.Band:
		for i := range x {
			x[i] &= y[i]
		}
	case kx.Bor:
		for i := range x {
			x[i] |= y[i]
		}
	case kx.Bxor:
		for i := range x {
			x[i] ^= y[i]
		}
	}
}

// ---- ScatterCombine ----

// kernAsmRowMin is the row width from which ScatterCombine's f32/f64 Sum uses the dense
// (assembly) kernel per row instead of the inline loop.
const kernAsmRowMin = 32

// ScatterCombine folds row p of src into row idx[p] of dst for p = 0, 1, …, len(idx)-1 in that
// order: dst[idx[p]*w+c] = op(dst[idx[p]*w+c], src[p*w+c]) for c in [0,w). Repeated indices
// are combined in increasing p, so the result is deterministic. len(src) must be
// len(idx)·w·size and len(dst) a multiple of w·size; an index outside dst's rows panics.
func ScatterCombine(d kx.Dtype, o kx.Op, dst, src []byte, idx []int32, w int) {
	if w < 1 {
		kernPanic("ScatterCombine: width %d < 1", w)
	}
	if o == kx.RSum {
		rsumScatterCombine(d, dst, src, idx, w)
		return
	}
	if size := d.Size(); size == 0 || len(src) != len(idx)*w*size || len(dst)%(w*size) != 0 {
		kernPanic("ScatterCombine: %s dst %d bytes, src %d bytes, %d indices of width %d",
			d, len(dst), len(src), len(idx), w)
	}
	if o >= kx.FirstUserOp {
		userScatter(mustUserOp(o), d, dst, src, idx, w, nil)
		return
	}
	switch d {
	case kx.F32:
		scatterBytes[float32](d, o, dst, src, idx, w, kernAddF32)
	case kx.F64:
		scatterBytes[float64](d, o, dst, src, idx, w, kernAddF64)
	case kx.I32:
		scatterBytes[int32](d, o, dst, src, idx, w, kernAddI32)
	case kx.I64:
		scatterBytes[int64](d, o, dst, src, idx, w, kernAddI64)
	case kx.U64:
		scatterBytes[uint64](d, o, dst, src, idx, w, kernAddU64)
	default:
		kernPanic("invalid dtype %d", int(d))
	}
}

func scatterBytes[T kernNum](d kx.Dtype, o kx.Op, dst, src []byte, idx []int32, w int, add func(x, y []T)) {
	x, aligned := kernView[T](dst)
	y, _ := kernView[T](src)
	y = y[:len(idx)*w]
	switch o {
	case kx.Sum:
		if add != nil && w >= kernAsmRowMin {
			for p, j := range idx {
				r := int(j) * w
				add(x[r:r+w], y[p*w:p*w+w])
			}
		} else {
			scatterSum(x, y, idx, w)
		}
	case kx.Prod:
		scatterProd(x, y, idx, w)
	case kx.Min:
		scatterMin(x, y, idx, w)
	case kx.Max:
		scatterMax(x, y, idx, w)
	case kx.Band, kx.Bor, kx.Bxor:
		if !scatterBitwise(o, x, y, idx, w) {
			kernPanic("op %s is not defined for %s", o, d)
		}
	default:
		kernPanic("invalid op %d", int(o))
	}
	if !aligned {
		copy(dst, kernBytes(x))
	}
}

// The scatter loops below are written out per op so that each inner loop is a plain
// load-op-store with no call: one w == 1 form and one row form.

func scatterSum[T kernNum](x, y []T, idx []int32, w int) {
	if w == 1 {
		y = y[:len(idx)]
		for p, j := range idx {
			x[j] += y[p]
		}
		return
	}
	for p, j := range idx {
		r := int(j) * w
		xr, yr := x[r:r+w], y[p*w:p*w+w]
		yr = yr[:len(xr)]
		for c := range xr {
			xr[c] += yr[c]
		}
	}
}

func scatterProd[T kernNum](x, y []T, idx []int32, w int) {
	if w == 1 {
		y = y[:len(idx)]
		for p, j := range idx {
			x[j] *= y[p]
		}
		return
	}
	for p, j := range idx {
		r := int(j) * w
		xr, yr := x[r:r+w], y[p*w:p*w+w]
		yr = yr[:len(xr)]
		for c := range xr {
			xr[c] *= yr[c]
		}
	}
}

func scatterMin[T kernNum](x, y []T, idx []int32, w int) {
	if w == 1 {
		y = y[:len(idx)]
		for p, j := range idx {
			x[j] = kernMin(x[j], y[p])
		}
		return
	}
	for p, j := range idx {
		r := int(j) * w
		xr, yr := x[r:r+w], y[p*w:p*w+w]
		yr = yr[:len(xr)]
		for c := range xr {
			xr[c] = kernMin(xr[c], yr[c])
		}
	}
}

func scatterMax[T kernNum](x, y []T, idx []int32, w int) {
	if w == 1 {
		y = y[:len(idx)]
		for p, j := range idx {
			x[j] = kernMax(x[j], y[p])
		}
		return
	}
	for p, j := range idx {
		r := int(j) * w
		xr, yr := x[r:r+w], y[p*w:p*w+w]
		yr = yr[:len(xr)]
		for c := range xr {
			xr[c] = kernMax(xr[c], yr[c])
		}
	}
}

func scatterBitwise[T kernNum](o kx.Op, x, y []T, idx []int32, w int) bool {
	switch xv := any(x).(type) {
	case []int32:
		scatterBitwiseLoop(o, xv, any(y).([]int32), idx, w)
	case []int64:
		scatterBitwiseLoop(o, xv, any(y).([]int64), idx, w)
	case []uint64:
		scatterBitwiseLoop(o, xv, any(y).([]uint64), idx, w)
	default:
		return false
	}
	return true
}

func scatterBitwiseLoop[T kernInt](o kx.Op, x, y []T, idx []int32, w int) {
	if w == 1 {
		y = y[:len(idx)]
		switch o {
		case kx.Band:
			for p, j := range idx {
				x[j] &= y[p]
			}
		case kx.Bor:
			for p, j := range idx {
				x[j] |= y[p]
			}
		case kx.Bxor:
			for p, j := range idx {
				x[j] ^= y[p]
			}
		}
		return
	}
	for p, j := range idx {
		r := int(j) * w
		bitwiseLoop(o, x[r:r+w], y[p*w:p*w+w])
	}
}

// ---- Gather ----

// kernGatherMin is the index count below which the w == 1 gather stays in Go.
const kernGatherMin = 16

// Gather copies row idx[p] of src to row p of dst: dst[p*w+c] = src[idx[p]*w+c]; where
// idx[p] < 0 the row is filled with the op's identity instead (zero bytes for a user op).
// len(dst) must be len(idx)·w·size and len(src) a multiple of w·size.
func Gather(d kx.Dtype, o kx.Op, dst, src []byte, idx []int32, w int) {
	if w < 1 {
		kernPanic("Gather: width %d < 1", w)
	}
	if o == kx.RSum {
		rsumGather(d, dst, src, idx, w)
		return
	}
	if size := d.Size(); size == 0 || len(dst) != len(idx)*w*size || len(src)%(w*size) != 0 {
		kernPanic("Gather: %s dst %d bytes, src %d bytes, %d indices of width %d",
			d, len(dst), len(src), len(idx), w)
	}
	if o >= kx.FirstUserOp {
		o = kx.Sum // no identity: Sum's is zero bytes in every dtype
	}
	switch d {
	case kx.F32:
		gatherBytes(dst, src, idx, w, floatIdentity[float32](d, o))
	case kx.F64:
		gatherBytes(dst, src, idx, w, floatIdentity[float64](d, o))
	case kx.I32:
		gatherBytes(dst, src, idx, w, intIdentity[int32](d, o, math.MinInt32, math.MaxInt32))
	case kx.I64:
		gatherBytes(dst, src, idx, w, intIdentity[int64](d, o, math.MinInt64, math.MaxInt64))
	case kx.U64:
		gatherBytes(dst, src, idx, w, intIdentity[uint64](d, o, 0, math.MaxUint64))
	default:
		kernPanic("invalid dtype %d", int(d))
	}
}

func gatherBytes[T kernNum](dst, src []byte, idx []int32, w int, id T) {
	x, aligned := kernView[T](dst)
	y, _ := kernView[T](src)
	x = x[:len(idx)*w]
	switch {
	case w == 1:
		x = x[:len(idx)]
		p0 := kernGatherW1(x, y, idx, id) // SIMD prefix, if any
		for p, j := range idx[p0:] {
			if j < 0 {
				x[p0+p] = id
			} else {
				x[p0+p] = y[j]
			}
		}
	case w < 16:
		for p, j := range idx {
			xr := x[p*w : p*w+w]
			if j < 0 {
				for c := range xr {
					xr[c] = id
				}
				continue
			}
			r := int(j) * w
			yr := y[r : r+w]
			yr = yr[:len(xr)]
			for c := range xr {
				xr[c] = yr[c]
			}
		}
	default:
		for p, j := range idx {
			xr := x[p*w : p*w+w]
			if j < 0 {
				for c := range xr {
					xr[c] = id
				}
				continue
			}
			r := int(j) * w
			copy(xr, y[r:r+w])
		}
	}
	if !aligned {
		copy(dst, kernBytes(x))
	}
}

// ---- Scatter ----

// Scatter copies row p of src to row idx[p] of dst (rows of es bytes): the move of a stable
// partition (keyset/layer0_pack.go), the inverse of Gather's. Rows go as 8- or 4-byte words where es
// allows, else by copy; an index outside dst's rows panics. With repeated indices the last row
// wins (reduce's maps never repeat one).
func Scatter(dst, src []byte, idx []int32, es int) {
	if es < 1 || len(src) != len(idx)*es || len(dst)%es != 0 {
		kernPanic("Scatter: dst %d bytes, src %d bytes, %d indices of %d bytes", len(dst), len(src), len(idx), es)
	}
	switch {
	case es%8 == 0:
		scatterWords[int64](dst, src, idx, es/8)
	case es%4 == 0:
		scatterWords[int32](dst, src, idx, es/4)
	default:
		for p, j := range idx {
			copy(dst[int(j)*es:int(j)*es+es], src[p*es:p*es+es])
		}
	}
}

func scatterWords[T kernNum](dst, src []byte, idx []int32, w int) {
	x, aligned := kernView[T](dst)
	y, _ := kernView[T](src)
	y = y[:len(idx)*w]
	if w == 1 {
		y = y[:len(idx)]
		for p, j := range idx {
			x[j] = y[p]
		}
	} else {
		for p, j := range idx {
			r := int(j) * w
			copy(x[r:r+w], y[p*w:p*w+w])
		}
	}
	if !aligned {
		copy(dst, kernBytes(x))
	}
}
