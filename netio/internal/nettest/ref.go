package nettest

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"kylix/core/kx"
	"kylix/internal/freeport"
)

// The brute-force reference of the transport suite (netio/linksuite_test.go). It shares no code
// with core or its tests: a rank's data is regenerated from (seed, node), reduced here in the
// dtype's own Go arithmetic, one element at a time, and compared with what the library returned
// byte for byte.

// Contribution is one node's sparse data: the indices it gives values for (Out, repeats
// included), width values each, and the indices it asks for (In).
type Contribution struct {
	Out, In []int64
	Vals    []int8 // width per Out entry, in -1..3
}

// GenNode regenerates node's contribution of a job with seed over the index range 0..n-1:
// nOut picks and nIn requests, a third of them from a popular head (repeats within and across
// nodes), one request repeated and one that nobody contributes.
func GenNode(seed int64, node, n, nOut, nIn, width int) Contribution {
	rng := rand.New(rand.NewSource(seed*7919 + int64(node)))
	pick := func() int64 {
		if rng.Intn(3) == 0 {
			return int64(rng.Intn(1 + n/40))
		}
		return int64(rng.Intn(n))
	}
	var c Contribution
	for i := 0; i < nOut; i++ {
		c.Out = append(c.Out, pick())
	}
	for i := 0; i < nIn; i++ {
		c.In = append(c.In, pick())
	}
	if nIn > 2 {
		c.In[nIn-1] = c.In[0]
		c.In[nIn-2] = int64(n + 77)
	}
	for i := 0; i < nOut*width; i++ {
		c.Vals = append(c.Vals, int8(rng.Intn(5)-1))
	}
	return c
}

// DenseNode is node's dense vector of n values (the Out indices 0..n-1).
func DenseNode(seed int64, node, n int) []int8 {
	rng := rand.New(rand.NewSource(seed*104729 + int64(node)))
	v := make([]int8, n)
	for i := range v {
		v[i] = int8(rng.Intn(5) - 1)
	}
	return v
}

// Dtypes are every built-in dtype; OpsFor every built-in op defined on d.
var Dtypes = []kx.Dtype{kx.F32, kx.F64, kx.I32, kx.I64, kx.U64}

func OpsFor(d kx.Dtype) []kx.Op {
	if d.IsFloat() {
		return []kx.Op{kx.Sum, kx.Prod, kx.Min, kx.Max, kx.RSum}
	}
	return []kx.Op{kx.Sum, kx.Prod, kx.Min, kx.Max, kx.Band, kx.Bor, kx.Bxor}
}

// operand is the value op o sees for a test value: a product sees only -1, 1 and 2, so every
// product is ±2^k and exact in any order, as are the sums of small integers.
func operand(o kx.Op, v int8) int8 {
	if o == kx.Prod && v != -1 && v != 2 {
		return 1
	}
	return v
}

// Encode writes test values as dtype d, as op o sees them.
func Encode(d kx.Dtype, o kx.Op, vals []int8) []byte {
	b := make([]byte, 0, len(vals)*d.Size())
	for _, v := range vals {
		x := int64(operand(o, v))
		switch d {
		case kx.F32:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(x)))
		case kx.F64:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(x)))
		case kx.I32:
			b = binary.LittleEndian.AppendUint32(b, uint32(int32(x)))
		case kx.I64, kx.U64:
			b = binary.LittleEndian.AppendUint64(b, uint64(x))
		}
	}
	return b
}

type elem interface {
	~int32 | ~int64 | ~uint64 | ~float32 | ~float64
}

// identity is what an element nobody contributes to holds after a reduce with o. (Values go
// through variables: a constant converts to T only if every type of elem could hold it.)
func identity[T elem](o kx.Op) T {
	var z T
	ones := ^uint64(0)
	switch o {
	case kx.Prod:
		return 1
	case kx.Band:
		return T(ones) // int32: truncated to -1, all bits set
	case kx.Min, kx.Max:
		hi := o == kx.Min
		var lo, up any
		switch any(z).(type) {
		case float32, float64:
			if hi {
				return T(math.Inf(1))
			}
			return T(math.Inf(-1))
		case int32:
			lo, up = int64(math.MinInt32), int64(math.MaxInt32)
		case int64:
			lo, up = int64(math.MinInt64), int64(math.MaxInt64)
		case uint64:
			lo, up = uint64(0), ones
		}
		v := lo
		if hi {
			v = up
		}
		switch x := v.(type) {
		case int64:
			return T(x)
		case uint64:
			return T(x)
		}
	}
	return z
}

func combine[T elem](o kx.Op, a, b T) T {
	switch o {
	case kx.Sum, kx.RSum:
		return a + b
	case kx.Prod:
		return a * b
	case kx.Min:
		return min(a, b)
	case kx.Max:
		return max(a, b)
	case kx.Band:
		return T(uint64(a) & uint64(b))
	case kx.Bor:
		return T(uint64(a) | uint64(b))
	case kx.Bxor:
		return T(uint64(a) ^ uint64(b))
	}
	panic(fmt.Sprintf("nettest: op %v", o))
}

func put[T elem](b []byte, v T) []byte {
	switch x := any(v).(type) {
	case float32:
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	case float64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	case int32:
		return binary.LittleEndian.AppendUint32(b, uint32(x))
	case int64:
		return binary.LittleEndian.AppendUint64(b, uint64(x))
	case uint64:
		return binary.LittleEndian.AppendUint64(b, x)
	}
	panic("nettest: put")
}

// sparse is SparseRef in T.
func sparse[T elem](all []Contribution, node int, o kx.Op, width int) []byte {
	acc := map[int64][]T{}
	for _, c := range all {
		for p, idx := range c.Out {
			a := acc[idx]
			if a == nil {
				a = make([]T, width)
				for k := range a {
					a[k] = identity[T](o)
				}
				acc[idx] = a
			}
			for k := range a {
				a[k] = combine(o, a[k], T(operand(o, c.Vals[p*width+k])))
			}
		}
	}
	var b []byte
	for _, idx := range all[node].In {
		for k := 0; k < width; k++ {
			v := identity[T](o)
			if a := acc[idx]; a != nil {
				v = a[k]
			}
			b = put(b, v)
		}
	}
	return b
}

// SparseRef is what node must receive from a sparse reduce of every node's contribution (each
// node counted once, whatever its replicas) with d and o: width values per In index.
func SparseRef(all []Contribution, node int, d kx.Dtype, o kx.Op, width int) []byte {
	switch d {
	case kx.F32:
		return sparse[float32](all, node, o, width)
	case kx.F64:
		return sparse[float64](all, node, o, width)
	case kx.I32:
		return sparse[int32](all, node, o, width)
	case kx.I64:
		return sparse[int64](all, node, o, width)
	case kx.U64:
		return sparse[uint64](all, node, o, width)
	}
	panic("nettest: dtype")
}

func dense[T elem](vecs [][]int8, o kx.Op) []byte {
	var b []byte
	for i := range vecs[0] {
		v := identity[T](o)
		for _, vec := range vecs {
			v = combine(o, v, T(operand(o, vec[i])))
		}
		b = put(b, v)
	}
	return b
}

// DenseRef is the elementwise reduction of the nodes' vectors with d and o.
func DenseRef(vecs [][]int8, d kx.Dtype, o kx.Op) []byte {
	switch d {
	case kx.F32:
		return dense[float32](vecs, o)
	case kx.F64:
		return dense[float64](vecs, o)
	case kx.I32:
		return dense[int32](vecs, o)
	case kx.I64:
		return dense[int64](vecs, o)
	case kx.U64:
		return dense[uint64](vecs, o)
	}
	panic("nettest: dtype")
}

// FirstDiff is the index of the first element (of size bytes) in which got and want differ,
// or -1 when they are bitwise equal.
func FirstDiff(got, want []byte, size int) int {
	if len(got) != len(want) {
		return min(len(got), len(want)) / size
	}
	for i := 0; i < len(want); i += size {
		for k := i; k < i+size; k++ {
			if got[k] != want[k] {
				return i / size
			}
		}
	}
	return -1
}

// FreePorts returns n loopback addresses for a static peers table (see internal/freeport for
// why they are not port-0 picks).
func FreePorts(t testing.TB, n int) []string {
	t.Helper()
	return freeport.Loopback(t, n)
}
