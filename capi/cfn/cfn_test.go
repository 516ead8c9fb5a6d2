package cfn

import (
	"bytes"
	"fmt"
	"kylix/core/kernels"
	"kylix/core/kernels/kerneltest"
	"kylix/core/kx"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// TestUserFnThroughC calls a real C function pointer (a purego callback into Go) the way
// kylix_op_create's ops are called, checking the argument order, ctx and dtype, and that the
// kernels fold through it exactly as through the same op written in Go.
func TestUserFnThroughC(t *testing.T) {
	const ctx = 0x5eed
	var st kerneltest.UserOpStats
	var badCtx string
	var mu sync.Mutex
	fn := purego.NewCallback(func(inout, in, count, dtype, c uintptr) {
		d := kx.Dtype(uint32(dtype))
		n := int(count)
		a := unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&inout))), n*d.Size())
		b := unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&in))), n*d.Size())
		kerneltest.AffineFn(&st, kernels.MaxUserChunk)(a, b, n, d)
		if c != ctx {
			mu.Lock()
			badCtx = fmt.Sprintf("ctx %#x", c)
			mu.Unlock()
		}
	})
	viaC, err := kernels.RegisterUserOp(UserFn(fn, ctx))
	if err != nil {
		t.Fatal(err)
	}
	var goStats kerneltest.UserOpStats
	viaGo, err := kernels.RegisterUserOp(kerneltest.AffineFn(&goStats, kernels.MaxUserChunk))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, d := range []kx.Dtype{kx.F32, kx.F64, kx.I32, kx.I64, kx.U64} {
		const rows, n, w = 50, 300, 3
		idx := make([]int32, n)
		for i := range idx {
			idx[i] = int32(r.IntN(rows))
		}
		dst, src := randBytes(d, rows*w, r), randBytes(d, n*w, r)
		want := bytes.Clone(dst)
		kernels.ScatterCombine(d, viaGo, want, src, idx, w)
		kernels.ScatterCombine(d, viaC, dst, src, idx, w)
		if !bytes.Equal(dst, want) {
			t.Errorf("ScatterCombine %s through C differs from Go", d)
		}
		m := kernels.MaxUserChunk + 9
		a, b := randBytes(d, m, r), randBytes(d, m, r)
		want = bytes.Clone(a)
		kernels.Combine(d, viaGo, want, b)
		kernels.Combine(d, viaC, a, b)
		if !bytes.Equal(a, want) {
			t.Errorf("Combine %s through C differs from Go", d)
		}
	}
	calls, maxCount, bad := st.Snapshot()
	if bad != "" || badCtx != "" {
		t.Errorf("callback arguments: %s %s", bad, badCtx)
	}
	if maxCount != kernels.MaxUserChunk || calls < 5 {
		t.Errorf("%d calls, largest %d", calls, maxCount)
	}
}

func randBytes(d kx.Dtype, n int, r *rand.Rand) []byte {
	b := make([]byte, n*d.Size())
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
