package core

import (
	"bytes"
	"fmt"
	"kylix/core/kx"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// A Go test cannot make a C function pointer without cgo, so most tests register a Go function
// through the userOp.goFn seam: the kernels around the call (chunking, gathering rows, first
// touch, rounds of repeated rows) are the same code the C callback goes through.
// TestUserOpThroughPurego also runs the real purego call, on a purego.NewCallback pointer.

// Affine is an associative, non-commutative op on raw element bits: an element of 2h bits
// holds (a, b), the map x -> a·x + b mod 2^h, and inout (+) in is "inout, then in":
// (a1, b1) (+) (a2, b2) = (a1·a2, a2·b1 + b2). A wrong operand order or a wrong fold order
// shows up at once. It reads bits only, so float dtypes carry arbitrary patterns (NaNs too).
func Affine(d kx.Dtype, x, y uint64) uint64 {
	h := uint(d.Size() * 4)
	mask := uint64(1)<<h - 1
	a1, b1 := x&mask, x>>h&mask
	a2, b2 := y&mask, y>>h&mask
	return (a1*a2)&mask | ((a2*b1+b2)&mask)<<h
}

// UserOpStats records what the callback saw; Bad holds the first broken promise.
type UserOpStats struct {
	mu       sync.Mutex
	Calls    int
	MaxCount int
	Bad      string
}

func (s *UserOpStats) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Calls, s.MaxCount, s.Bad = 0, 0, ""
}

func (s *UserOpStats) Snapshot() (calls, maxCount int, bad string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Calls, s.MaxCount, s.Bad
}

func (s *UserOpStats) check(inout, in []byte, count int, d kx.Dtype) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Calls++
	s.MaxCount = max(s.MaxCount, count)
	size := d.Size()
	a0 := uintptr(unsafe.Pointer(unsafe.SliceData(inout)))
	b0 := uintptr(unsafe.Pointer(unsafe.SliceData(in)))
	switch {
	case s.Bad != "":
	case !d.Valid():
		s.Bad = fmt.Sprintf("dtype %d", d)
	case count < 1 || count > userChunk:
		s.Bad = fmt.Sprintf("count %d", count)
	case len(inout) != count*size || len(in) != count*size:
		s.Bad = fmt.Sprintf("count %d but %d and %d bytes", count, len(inout), len(in))
	case a0%uintptr(size) != 0 || b0%uintptr(size) != 0:
		s.Bad = fmt.Sprintf("misaligned %s operands %#x %#x", d, a0, b0)
	case a0 < b0+uintptr(len(in)) && b0 < a0+uintptr(len(inout)):
		s.Bad = "inout and in overlap"
	}
}

// RegisterAffineForTest registers Affine as a user op that records its calls in st.
func RegisterAffineForTest(st *UserOpStats) (kx.Op, error) {
	return userOps.add(userOp{goFn: func(inout, in []byte, count int, d kx.Dtype) {
		st.check(inout, in, count, d)
		for i := range count {
			putElem(d, inout, i, Affine(d, getElem(d, inout, i), getElem(d, in, i)))
		}
	}})
}

// UserChunkForTest is the most elements one callback call may get.
const UserChunkForTest = userChunk

var (
	affineOnce  sync.Once
	affineOp    kx.Op
	affineStats UserOpStats
)

func testAffine(t *testing.T) kx.Op {
	t.Helper()
	affineOnce.Do(func() {
		var err error
		if affineOp, err = RegisterAffineForTest(&affineStats); err != nil {
			panic(err)
		}
	})
	affineStats.Reset()
	return affineOp
}

func checkStats(t *testing.T, what string) (calls, maxCount int) {
	t.Helper()
	calls, maxCount, bad := affineStats.Snapshot()
	if bad != "" {
		t.Fatalf("%s: the callback got %s", what, bad)
	}
	return calls, maxCount
}

func randBits(d kx.Dtype, n int, r *rand.Rand) []byte {
	b := make([]byte, n*d.Size())
	for i := range n {
		putElem(d, b, i, trunc(d, r.Uint64()))
	}
	return b
}

// refFirstTouch is the sequential meaning of a user-op scatter: row p of src goes to row idx[p]
// in increasing p, copied when the row has no value yet (seen, updated), combined when it has.
func refFirstTouch(d kx.Dtype, dst, src []byte, idx []int32, w int, seen []bool) []byte {
	want := slices.Clone(dst)
	for p, j := range idx {
		for c := range w {
			k := int(j)*w + c
			v := getElem(d, src, p*w+c)
			if seen == nil || seen[j] {
				v = Affine(d, getElem(d, want, k), v)
			}
			putElem(d, want, k, v)
		}
		if seen != nil {
			seen[j] = true
		}
	}
	return want
}

func TestUserScatterReference(t *testing.T) {
	op := testAffine(t)
	r := rand.New(rand.NewPCG(3, 4))
	for _, d := range allDtypes {
		for _, sh := range []struct{ rows, n, w int }{
			{1, 0, 1}, {1, 1, 1}, {1, 50, 1}, {7, 40, 1}, {13, 200, 3}, {500, 300, 2},
			{3, 5, userChunk + 3}, // rows wider than a chunk
			{40000, 150000, 1},    // many chunks per round, a few rounds
		} {
			idx := make([]int32, sh.n)
			for i := range idx {
				idx[i] = int32(r.IntN(sh.rows))
			}
			src := randBits(d, sh.n*sh.w, r)
			// plain ScatterCombine: every row already holds a value
			dst := randBits(d, sh.rows*sh.w, r)
			want := refFirstTouch(d, dst, src, idx, sh.w, nil)
			affineStats.Reset()
			ScatterCombine(d, op, dst, src, idx, sh.w)
			if !bytes.Equal(dst, want) {
				t.Fatalf("ScatterCombine %s rows %d n %d w %d differs from the sequential fold", d, sh.rows, sh.n, sh.w)
			}
			calls, maxCount := checkStats(t, "ScatterCombine")
			if sh.n > 1000 && maxCount < sh.rows/2 { // round 0 holds most rows
				t.Errorf("%s rows %d n %d: largest call %d elements: not batched", d, sh.rows, sh.n, maxCount)
			}
			if sh.n == 0 && calls != 0 {
				t.Errorf("%d calls for nothing", calls)
			}
			// through a combiner: three sources onto some rows that were seen already
			dst = make([]byte, sh.rows*sh.w*d.Size())
			seen := make([]bool, sh.rows)
			want = slices.Clone(dst)
			cb := newCombiner(d, op, sh.w, dst)
			for range 3 {
				k := r.IntN(sh.n + 1)
				sub, ssrc := idx[:k], src[:k*sh.w*d.Size()]
				want = refFirstTouch(d, want, ssrc, sub, sh.w, seen)
				cb.scatter(ssrc, sub)
			}
			if !bytes.Equal(dst, want) {
				t.Fatalf("combiner %s rows %d n %d w %d differs from first-touch fold", d, sh.rows, sh.n, sh.w)
			}
			checkStats(t, "combiner")
		}
	}
}

// TestUserScatterCallsPerChunk: distinct rows cost one call per chunk, not per element; a row
// repeated k times costs k rounds.
func TestUserScatterCallsPerChunk(t *testing.T) {
	op := testAffine(t)
	const n = 3*userChunk + 5
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32((i * 7919) % n) // a permutation: 7919 is prime, n is not a multiple
	}
	dst, src := make([]byte, n*8), make([]byte, n*8)
	ScatterCombine(kx.U64, op, dst, src, idx, 1)
	if calls, maxCount := checkStats(t, "permutation"); calls != 4 || maxCount != userChunk {
		t.Errorf("%d distinct rows: %d calls, largest %d; want 4 calls of up to %d", n, calls, maxCount, userChunk)
	}
	affineStats.Reset()
	idx = []int32{2, 0, 2, 1, 2, 0}
	ScatterCombine(kx.U64, op, dst[:3*8], src[:6*8], idx, 1)
	if calls, _ := checkStats(t, "repeats"); calls != 3 {
		t.Errorf("row 2 three times: %d calls, want 3 rounds", calls)
	}
}

func TestUserCombine(t *testing.T) {
	op := testAffine(t)
	r := rand.New(rand.NewPCG(5, 6))
	for _, d := range allDtypes {
		for _, n := range []int{0, 1, 5, 2*userChunk + 7} {
			for _, off := range []int{0, 1, 4} { // misaligned buffers go through temporaries
				dst0, src0 := randBits(d, n, r), randBits(d, n, r)
				want := make([]byte, len(dst0))
				for i := range n {
					putElem(d, want, i, Affine(d, getElem(d, dst0, i), getElem(d, src0, i)))
				}
				bd, bs := make([]byte, len(dst0)+off), make([]byte, len(src0)+off)
				dst, src := bd[off:], bs[off:]
				copy(dst, dst0)
				copy(src, src0)
				affineStats.Reset()
				Combine(d, op, dst, src)
				if !bytes.Equal(dst, want) || !bytes.Equal(src, src0) {
					t.Fatalf("Combine %s n %d offset %d differs", d, n, off)
				}
				calls, _ := checkStats(t, "Combine")
				if wantCalls := (n + userChunk - 1) / userChunk; calls != wantCalls {
					t.Errorf("Combine %s n %d: %d calls, want %d", d, n, calls, wantCalls)
				}
			}
			// dst and src the same slice: the callback still gets two distinct buffers
			x := randBits(d, n, r)
			want := make([]byte, len(x))
			for i := range n {
				v := getElem(d, x, i)
				putElem(d, want, i, Affine(d, v, v))
			}
			Combine(d, op, x, x)
			if !bytes.Equal(x, want) {
				t.Fatalf("Combine %s n %d in place differs", d, n)
			}
			checkStats(t, "Combine in place")
			// a dense combiner copies the first source, combines the rest
			a, b := randBits(d, n, r), randBits(d, n, r)
			acc := randBits(d, n, r)
			cb := newCombiner(d, op, 1, acc)
			cb.combine(a)
			cb.combine(b)
			for i := range n {
				if g, w := getElem(d, acc, i), Affine(d, getElem(d, a, i), getElem(d, b, i)); g != w {
					t.Fatalf("dense combiner %s element %d = %#x, want %#x", d, i, g, w)
				}
			}
		}
	}
}

func TestUserIdentityAndGather(t *testing.T) {
	op := testAffine(t)
	for _, d := range allDtypes {
		b := bytes.Repeat([]byte{0xA5}, 5*d.Size())
		Identity(d, op, b)
		if !bytes.Equal(b, make([]byte, len(b))) {
			t.Errorf("Identity %s for a user op: % x, want zero bytes", d, b)
		}
		src := bytes.Repeat([]byte{0x77}, 2*2*d.Size())
		dst := bytes.Repeat([]byte{0xA5}, 3*2*d.Size())
		Gather(d, op, dst, src, []int32{1, -1, 0}, 2)
		rs := 2 * d.Size()
		if !bytes.Equal(dst[rs:2*rs], make([]byte, rs)) || !bytes.Equal(dst[:rs], src[:rs]) || !bytes.Equal(dst[2*rs:], src[:rs]) {
			t.Errorf("Gather %s for a user op: % x", d, dst)
		}
	}
	if calls, _ := checkStats(t, "identity"); calls != 0 {
		t.Errorf("Identity/Gather called the op %d times", calls)
	}
}

func TestUserOpRegistry(t *testing.T) {
	op := testAffine(t)
	for _, d := range allDtypes {
		if err := CheckDtypeOp(d, op); err != nil {
			t.Errorf("CheckDtypeOp(%s, user op %d): %v", d, op, err)
		}
	}
	if err := CheckDtypeOp(kx.Dtype(0), op); kx.CodeOf(err) != kx.CodeArg {
		t.Errorf("bad dtype with a user op: %v", err)
	}
	for _, o := range []kx.Op{kx.FirstUserOp + MaxUserOps, 65535, 8, 63} {
		if err := CheckDtypeOp(kx.F32, o); kx.CodeOf(err) != kx.CodeArg {
			t.Errorf("CheckDtypeOp(f32, %d) = %v, want CodeArg", o, err)
		}
	}
	if err := CheckDtypeOp(kx.F32, kx.Band); kx.CodeOf(err) != kx.CodeArg {
		t.Errorf("built-in rules changed: f32 band: %v", err)
	}
	if _, err := RegisterUserOp(0, 1); kx.CodeOf(err) != kx.CodeArg {
		t.Errorf("RegisterUserOp(NULL) = %v, want CodeArg", err)
	}
	// a private table: ids in order, CodeNoMem when full
	var tb userOpTable
	for i := range MaxUserOps {
		o, err := tb.add(userOp{fn: uintptr(i + 1)})
		if err != nil || o != kx.FirstUserOp+kx.Op(i) {
			t.Fatalf("add %d: %d, %v", i, o, err)
		}
	}
	if _, err := tb.add(userOp{fn: 1}); kx.CodeOf(err) != kx.CodeNoMem {
		t.Errorf("add to a full table: %v, want CodeNoMem", err)
	}
	if u := tb.lookup(kx.FirstUserOp + MaxUserOps - 1); u == nil || u.fn != MaxUserOps {
		t.Errorf("lookup of the last op: %+v", u)
	}
	if int(kx.FirstUserOp)+MaxUserOps-1 > 0xffff {
		t.Errorf("user op ids do not fit the fingerprint's uint16")
	}
}

// TestUserOpThroughPurego calls a real C function pointer (a purego callback into Go) the way
// kylix_op_create's ops are called, checking the argument order, ctx and dtype.
func TestUserOpThroughPurego(t *testing.T) {
	const ctx = 0x5eed
	var st UserOpStats
	var badArgs string
	var mu sync.Mutex
	fn := purego.NewCallback(func(inout, in, count, dtype, c uintptr) {
		d := kx.Dtype(uint32(dtype))
		n := int(count)
		a := unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&inout))), n*d.Size())
		b := unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&in))), n*d.Size())
		st.check(a, b, n, d)
		if c != ctx {
			mu.Lock()
			badArgs = fmt.Sprintf("ctx %#x", c)
			mu.Unlock()
		}
		for i := range n {
			putElem(d, a, i, Affine(d, getElem(d, a, i), getElem(d, b, i)))
		}
	})
	op, err := RegisterUserOp(fn, ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, d := range allDtypes {
		const rows, n, w = 50, 300, 3
		idx := make([]int32, n)
		for i := range idx {
			idx[i] = int32(r.IntN(rows))
		}
		dst, src := randBits(d, rows*w, r), randBits(d, n*w, r)
		want := refFirstTouch(d, dst, src, idx, w, nil)
		ScatterCombine(d, op, dst, src, idx, w)
		if !bytes.Equal(dst, want) {
			t.Errorf("ScatterCombine %s through purego differs", d)
		}
		a, b := randBits(d, userChunk+9, r), randBits(d, userChunk+9, r)
		want = slices.Clone(a)
		for i := range userChunk + 9 {
			putElem(d, want, i, Affine(d, getElem(d, a, i), getElem(d, b, i)))
		}
		Combine(d, op, a, b)
		if !bytes.Equal(a, want) {
			t.Errorf("Combine %s through purego differs", d)
		}
	}
	calls, maxCount, bad := st.Snapshot()
	if bad != "" || badArgs != "" {
		t.Errorf("callback arguments: %s %s", bad, badArgs)
	}
	if maxCount != userChunk || calls < 5 {
		t.Errorf("%d calls, largest %d", calls, maxCount)
	}
}
