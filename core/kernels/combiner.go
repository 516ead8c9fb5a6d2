package kernels

import (
	"kylix/core/kx"
	"unsafe"
)

// Combiner folds sources, in order, into a fresh value vector. For the built-in ops it is
// Identity followed by the plain kernels (for Sum the add kernel is resolved once, sumKernels:
// the same loops without the per-source dispatch). For a user op, which has
// no identity, the first contribution to a row is copied and later ones combined, tracked with
// a bitmap of rows (sparse) or a flag (dense).
type Combiner struct {
	d    kx.Dtype
	o    kx.Op
	w    int
	dst  []byte
	u    *userOp                    // nil for built-in ops
	sum  func(dst, src []byte) bool // Sum of a built-in dtype: the typed kernel (sumKernels)
	seen []uint64                   // user ops, scatter: rows holding a contribution
	any  bool                       // user ops, combine: dst holds the first source
}

// NewCombiner starts a fold into dst (rows of w elements): the op's identity for built-in ops,
// zero bytes for user ops (what a row nobody contributes to keeps).
func NewCombiner(d kx.Dtype, o kx.Op, w int, dst []byte) Combiner {
	c := Combiner{d: d, o: o, w: w, dst: dst}
	if o == kx.Sum && d.Valid() { // Sum's identity is all-zero bits for every dtype (Identity)
		clear(dst)
		c.sum = sumKernels[d]
		return c
	}
	Identity(d, o, dst)
	if o >= kx.FirstUserOp {
		c.u = mustUserOp(o)
	}
	return c
}

// scatter folds row p of src into row idx[p] of dst, in increasing p (ScatterCombine).
func (c *Combiner) Scatter(src []byte, idx []int32) {
	if c.u == nil {
		ScatterCombine(c.d, c.o, c.dst, src, idx, c.w)
		return
	}
	rb := c.w * c.d.Size()
	if c.w < 1 || len(src) != len(idx)*rb || len(c.dst)%rb != 0 {
		kernPanic("ScatterCombine: %s dst %d bytes, src %d bytes, %d indices of width %d",
			c.d, len(c.dst), len(src), len(idx), c.w)
	}
	if c.seen == nil {
		c.seen = make([]uint64, (len(c.dst)/rb+63)/64)
	}
	userScatter(c.u, c.d, c.dst, src, idx, c.w, c.seen)
}

// combine folds src, the whole vector's next source, into dst (Combine).
func (c *Combiner) Combine(src []byte) {
	if c.sum != nil && len(src) == len(c.dst) && c.sum(c.dst, src) {
		return
	}
	if c.u == nil || c.any {
		Combine(c.d, c.o, c.dst, src)
		return
	}
	if len(src) != len(c.dst) {
		kernPanic("Combine: len(dst) = %d, len(src) = %d", len(c.dst), len(src))
	}
	copy(c.dst, src)
	c.any = true
}

// User reports whether the fold is of a user op (no identity: the first contribution is copied).
func (c *Combiner) User() bool { return c.u != nil }

// sumKernels add a whole source into dst for each built-in dtype, resolved once per fold rather
// than through Combine's dtype and op switches and views on every source: for a small vector
// (an 8-float allreduce) those cost several times the additions. They decline (false) buffers
// not aligned for the dtype, which Combine copies to aligned temporaries. Same loops as
// Combine's, so the same bits.
var sumKernels = [...]func(dst, src []byte) bool{
	kx.F32: func(dst, src []byte) bool { return sumAligned(dst, src, kernAddF32) },
	kx.F64: func(dst, src []byte) bool { return sumAligned(dst, src, kernAddF64) },
	kx.I32: func(dst, src []byte) bool { return sumAligned(dst, src, kernAddI32) },
	kx.I64: func(dst, src []byte) bool { return sumAligned(dst, src, kernAddI64) },
	kx.U64: func(dst, src []byte) bool { return sumAligned(dst, src, kernAddU64) },
}

func sumAligned[T kernNum](dst, src []byte, add func(x, y []T)) bool {
	var z T
	size := int(unsafe.Sizeof(z))
	p, q := unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src))
	if (uintptr(p)|uintptr(q))%unsafe.Alignof(z) != 0 || len(dst)%size != 0 || len(dst) == 0 {
		return false
	}
	add(unsafe.Slice((*T)(p), len(dst)/size), unsafe.Slice((*T)(q), len(dst)/size))
	return true
}
