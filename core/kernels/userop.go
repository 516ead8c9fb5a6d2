package kernels

import (
	"kylix/core/kx"
	"sync"
	"sync/atomic"
	"unsafe"
)

// User-defined reduction ops (kylix_op_create), like MPI_Op_create.
//
// A user op is a Go function (UserFn) that folds count elements of in into inout; capi wraps
// kylix_op_create's C function pointer into one (capi/cfn), so the kernels know nothing of C.
// A call may cost a few hundred nanoseconds (a C call through purego), so the kernels never
// call it per element: dense Combine passes runs of up to MaxUserChunk elements
// straight from the buffers, and ScatterCombine gathers the destination rows a source touches
// into a contiguous temporary, calls once per chunk and scatters the results back.
//
// A user op has no identity element, so it cannot start from one as the built-in ops do. The
// reduction paths therefore fold through a Combiner (below): the first contribution to a row is
// copied, later ones are combined into it with inout = the accumulation of the earlier sources
// and in = the later source. A row nobody contributes to holds all-zero bytes (Identity and
// Gather give zero bytes for user ops).
//
// Order: sources are folded in (layer, source digit) order. Layer 0 groups consecutive ranks, so
// for an associative op the result is exactly the left fold over the contributing ranks in rank
// order, each rank's own contribution being the left fold of its repeated out indices in the
// caller's order; only the bracketing depends on the degrees, never on arrival order.

// MaxUserChunk is the most elements handed to one callback call: large enough that the call cost
// vanishes, small enough that the temporaries stay in cache.
const MaxUserChunk = 1 << 16

// MaxUserOps bounds the number of ops RegisterUserOp hands out (ids FirstUserOp up to
// FirstUserOp+MaxUserOps-1, which fit the uint16 op field of the wire fingerprint).
const MaxUserOps = 1 << 15

// UserFn folds count elements of in into inout (both count elements of d, aligned, not
// overlapping).
type UserFn func(inout, in []byte, count int, d kx.Dtype)

// userOp is one registered op.
type userOp struct {
	fn UserFn
}

const userPage = 256

// userOpTable is a registry of ops. Ops are never freed (neither are MPI's in practice), so a
// lookup is two atomic loads and no lock on the kernel path. Entries are written before n
// publishes them and never change afterwards.
type userOpTable struct {
	mu    sync.Mutex
	n     atomic.Int32
	pages [MaxUserOps / userPage]atomic.Pointer[[userPage]userOp]
}

// userOps is the process-wide registry behind kylix_op_create.
var userOps userOpTable

// RegisterUserOp registers fn and returns the op's id, usable with every dtype wherever an op
// is. Ids are handed out in order from FirstUserOp, so ranks that register the same ops in the
// same order agree on them (collectives compare op ids).
func RegisterUserOp(fn UserFn) (kx.Op, error) {
	if fn == nil {
		return 0, kx.Errorf(kx.CodeArg, "fn is NULL")
	}
	return userOps.add(userOp{fn: fn})
}

func (t *userOpTable) add(u userOp) (kx.Op, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := int(t.n.Load())
	if i >= MaxUserOps {
		return 0, kx.Errorf(kx.CodeNoMem, "no user op ids left: %d ops are registered already", MaxUserOps)
	}
	pg := t.pages[i/userPage].Load()
	if pg == nil {
		pg = new([userPage]userOp)
		t.pages[i/userPage].Store(pg)
	}
	pg[i%userPage] = u
	t.n.Store(int32(i + 1))
	return kx.FirstUserOp + kx.Op(i), nil
}

func (t *userOpTable) lookup(o kx.Op) *userOp {
	if o < kx.FirstUserOp {
		return nil
	}
	i := int(o - kx.FirstUserOp)
	if i >= int(t.n.Load()) {
		return nil
	}
	return &t.pages[i/userPage].Load()[i%userPage]
}

// lookupUserOp returns the registered op o, or nil.
func lookupUserOp(o kx.Op) *userOp { return userOps.lookup(o) }

// mustUserOp is lookupUserOp for the kernels, where an unknown op is a caller bug.
func mustUserOp(o kx.Op) *userOp {
	u := lookupUserOp(o)
	if u == nil {
		kernPanic("op %d is not a registered user op", int(o))
	}
	return u
}

// call folds count elements of in into inout (both non-empty, element-aligned, not
// overlapping).
func (u *userOp) call(d kx.Dtype, inout, in []byte, count int) { u.fn(inout, in, count, d) }

func userAligned(b []byte, size int) bool {
	return len(b) == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(size) == 0
}

// userCombine is Combine for a user op: dst = op(dst, src) in chunks, straight from the
// buffers when they are aligned, through temporaries when not (or when dst is src: the
// callback is promised in and inout that do not overlap).
func userCombine(u *userOp, d kx.Dtype, dst, src []byte) {
	size := d.Size()
	step := MaxUserChunk * size
	same := len(dst) > 0 && unsafe.SliceData(dst) == unsafe.SliceData(src)
	var ta, tb []byte
	for off := 0; off < len(dst); off += step {
		end := min(off+step, len(dst))
		a, b := dst[off:end], src[off:end]
		if !userAligned(a, size) {
			if ta == nil {
				ta = AlignedBytes(min(step, len(dst)))
			}
			a = ta[:copy(ta, a)]
		}
		if same || !userAligned(b, size) {
			if tb == nil {
				tb = AlignedBytes(min(step, len(dst)))
			}
			b = tb[:copy(tb, b)]
		}
		u.call(d, a, b, len(a)/size)
		if unsafe.SliceData(a) != unsafe.SliceData(dst[off:end]) {
			copy(dst[off:end], a)
		}
	}
}

// userScatter is ScatterCombine for a user op: row p of src is folded into row idx[p] of dst, in
// increasing p. With seen != nil, a row whose bit is clear takes a copy of its first source row
// (and the bit is set) instead of being combined; seen == nil treats every row as holding a
// value already.
func userScatter(u *userOp, d kx.Dtype, dst, src []byte, idx []int32, w int, seen []uint64) {
	rb := w * d.Size()
	var pend []int32 // positions p still to combine, increasing
	if seen == nil {
		pend = make([]int32, len(idx))
		for p := range pend {
			pend[p] = int32(p)
		}
	} else {
		for p, j := range idx {
			if seen[j>>6]&(1<<(uint(j)&63)) == 0 {
				seen[j>>6] |= 1 << (uint(j) & 63)
				copy(dst[int(j)*rb:int(j)*rb+rb], src[p*rb:p*rb+rb])
			} else {
				pend = append(pend, int32(p))
			}
		}
	}
	if len(pend) == 0 {
		return
	}
	rows := max(1, MaxUserChunk/w)
	ta := AlignedBytes(min(rows, len(pend)) * rb)
	tb := AlignedBytes(min(rows, len(pend)) * rb)
	for _, round := range userRounds(pend, idx, len(dst)/rb) {
		for len(round) > 0 {
			k := min(rows, len(round))
			for q, p := range round[:k] {
				j := int(idx[p])
				copy(ta[q*rb:q*rb+rb], dst[j*rb:j*rb+rb])
				copy(tb[q*rb:q*rb+rb], src[int(p)*rb:int(p)*rb+rb])
			}
			for e := 0; e < k*w; e += MaxUserChunk { // rows wider than a chunk: split them
				n := min(MaxUserChunk, k*w-e)
				sz := d.Size()
				u.call(d, ta[e*sz:(e+n)*sz], tb[e*sz:(e+n)*sz], n)
			}
			for q, p := range round[:k] {
				j := int(idx[p])
				copy(dst[j*rb:j*rb+rb], ta[q*rb:q*rb+rb])
			}
			round = round[k:]
		}
	}
}

// userRounds splits the pending positions into rounds in which every destination row occurs at
// most once: round k holds each row's k-th pending position. Gathering a round, combining it in
// one call and scattering it back then equals combining the positions one by one in increasing
// p. The merge maps of the butterfly are strictly increasing (one round, no work); only repeated
// out indices of one rank need more than one.
func userRounds(pend, idx []int32, nrows int) [][]int32 {
	inc := true
	for q := 1; q < len(pend) && inc; q++ {
		inc = idx[pend[q]] > idx[pend[q-1]]
	}
	if inc {
		return [][]int32{pend}
	}
	occ := make([]int32, nrows)
	rk := make([]int32, len(pend))
	nr := 0
	for q, p := range pend {
		j := idx[p]
		rk[q] = occ[j]
		occ[j]++
		nr = max(nr, int(occ[j]))
	}
	start := make([]int, nr+1) // counting sort by round, stable in p
	for _, r := range rk {
		start[r+1]++
	}
	for r := 1; r <= nr; r++ {
		start[r] += start[r-1]
	}
	sorted := make([]int32, len(pend))
	next := append([]int(nil), start[:nr]...)
	for q, p := range pend {
		sorted[next[rk[q]]] = p
		next[rk[q]]++
	}
	out := make([][]int32, nr)
	for r := range out {
		out[r] = sorted[start[r]:start[r+1]]
	}
	return out
}
