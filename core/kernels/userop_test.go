package kernels

import (
	"bytes"
	"kylix/core/kernels/kerneltest"
	"kylix/core/kx"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The kernels see user ops only as Go functions; capi/cfn's tests call them through a real C
// function pointer.

var (
	affineOnce  sync.Once
	affineOp    kx.Op
	affineStats kerneltest.UserOpStats
)

func testAffine(t *testing.T) kx.Op {
	t.Helper()
	affineOnce.Do(func() {
		var err error
		if affineOp, err = RegisterUserOp(kerneltest.AffineFn(&affineStats, MaxUserChunk)); err != nil {
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
		kerneltest.SetElem(d, b, i, trunc(d, r.Uint64()))
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
			v := kerneltest.Elem(d, src, p*w+c)
			if seen == nil || seen[j] {
				v = kerneltest.Affine(d, kerneltest.Elem(d, want, k), v)
			}
			kerneltest.SetElem(d, want, k, v)
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
			{3, 5, MaxUserChunk + 3}, // rows wider than a chunk
			{40000, 150000, 1},       // many chunks per round, a few rounds
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
			// through a Combiner: three sources onto some rows that were seen already
			dst = make([]byte, sh.rows*sh.w*d.Size())
			seen := make([]bool, sh.rows)
			want = slices.Clone(dst)
			cb := NewCombiner(d, op, sh.w, dst)
			for range 3 {
				k := r.IntN(sh.n + 1)
				sub, ssrc := idx[:k], src[:k*sh.w*d.Size()]
				want = refFirstTouch(d, want, ssrc, sub, sh.w, seen)
				cb.Scatter(ssrc, sub)
			}
			if !bytes.Equal(dst, want) {
				t.Fatalf("Combiner %s rows %d n %d w %d differs from first-touch fold", d, sh.rows, sh.n, sh.w)
			}
			checkStats(t, "Combiner")
		}
	}
}

// TestUserScatterCallsPerChunk: distinct rows cost one call per chunk, not per element; a row
// repeated k times costs k rounds.
func TestUserScatterCallsPerChunk(t *testing.T) {
	op := testAffine(t)
	const n = 3*MaxUserChunk + 5
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32((i * 7919) % n) // a permutation: 7919 is prime, n is not a multiple
	}
	dst, src := make([]byte, n*8), make([]byte, n*8)
	ScatterCombine(kx.U64, op, dst, src, idx, 1)
	if calls, maxCount := checkStats(t, "permutation"); calls != 4 || maxCount != MaxUserChunk {
		t.Errorf("%d distinct rows: %d calls, largest %d; want 4 calls of up to %d", n, calls, maxCount, MaxUserChunk)
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
		for _, n := range []int{0, 1, 5, 2*MaxUserChunk + 7} {
			for _, off := range []int{0, 1, 4} { // misaligned buffers go through temporaries
				dst0, src0 := randBits(d, n, r), randBits(d, n, r)
				want := make([]byte, len(dst0))
				for i := range n {
					kerneltest.SetElem(d, want, i, kerneltest.Affine(d, kerneltest.Elem(d, dst0, i), kerneltest.Elem(d, src0, i)))
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
				if wantCalls := (n + MaxUserChunk - 1) / MaxUserChunk; calls != wantCalls {
					t.Errorf("Combine %s n %d: %d calls, want %d", d, n, calls, wantCalls)
				}
			}
			// dst and src the same slice: the callback still gets two distinct buffers
			x := randBits(d, n, r)
			want := make([]byte, len(x))
			for i := range n {
				v := kerneltest.Elem(d, x, i)
				kerneltest.SetElem(d, want, i, kerneltest.Affine(d, v, v))
			}
			Combine(d, op, x, x)
			if !bytes.Equal(x, want) {
				t.Fatalf("Combine %s n %d in place differs", d, n)
			}
			checkStats(t, "Combine in place")
			// a dense Combiner copies the first source, combines the rest
			a, b := randBits(d, n, r), randBits(d, n, r)
			acc := randBits(d, n, r)
			cb := NewCombiner(d, op, 1, acc)
			cb.Combine(a)
			cb.Combine(b)
			for i := range n {
				if g, w := kerneltest.Elem(d, acc, i), kerneltest.Affine(d, kerneltest.Elem(d, a, i), kerneltest.Elem(d, b, i)); g != w {
					t.Fatalf("dense Combiner %s element %d = %#x, want %#x", d, i, g, w)
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
	for _, o := range []kx.Op{kx.FirstUserOp + MaxUserOps, 65535, 9, 63} {
		if err := CheckDtypeOp(kx.F32, o); kx.CodeOf(err) != kx.CodeArg {
			t.Errorf("CheckDtypeOp(f32, %d) = %v, want CodeArg", o, err)
		}
	}
	if err := CheckDtypeOp(kx.F32, kx.Band); kx.CodeOf(err) != kx.CodeArg {
		t.Errorf("built-in rules changed: f32 band: %v", err)
	}
	for _, d := range []kx.Dtype{kx.I32, kx.I64, kx.U64} {
		err := CheckDtypeOp(d, kx.RSum)
		if kx.CodeOf(err) != kx.CodeArg || !strings.Contains(err.Error(), "rsum") || !strings.Contains(err.Error(), d.String()) {
			t.Errorf("CheckDtypeOp(%s, rsum) = %v, want CodeArg naming the op and dtype", d, err)
		}
	}
	for _, d := range []kx.Dtype{kx.F32, kx.F64} {
		if err := CheckDtypeOp(d, kx.RSum); err != nil {
			t.Errorf("CheckDtypeOp(%s, rsum) = %v", d, err)
		}
	}
	if _, err := RegisterUserOp(nil); kx.CodeOf(err) != kx.CodeArg {
		t.Errorf("RegisterUserOp(NULL) = %v, want CodeArg", err)
	}
	// a private table: ids in order, CodeNoMem when full
	var tb userOpTable
	called := -1
	for i := range MaxUserOps {
		o, err := tb.add(userOp{fn: func([]byte, []byte, int, kx.Dtype) { called = i }})
		if err != nil || o != kx.FirstUserOp+kx.Op(i) {
			t.Fatalf("add %d: %d, %v", i, o, err)
		}
	}
	if _, err := tb.add(userOp{fn: func([]byte, []byte, int, kx.Dtype) {}}); kx.CodeOf(err) != kx.CodeNoMem {
		t.Errorf("add to a full table: %v, want CodeNoMem", err)
	}
	if u := tb.lookup(kx.FirstUserOp + MaxUserOps - 1); u == nil {
		t.Errorf("lookup of the last op: nil")
	} else if u.call(kx.F32, nil, nil, 0); called != MaxUserOps-1 {
		t.Errorf("lookup of the last op: %+v", u)
	}
	if int(kx.FirstUserOp)+MaxUserOps-1 > 0xffff {
		t.Errorf("user op ids do not fit the fingerprint's uint16")
	}
}
