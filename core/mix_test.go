package core_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"kylix/core/kx"
	"kylix/core/planning"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"kylix/core"
)

// mixVector is rank r's starting vector: n values in [-scale, scale), as float64 (exactly
// representable in d).
func mixVector(seed int64, r, n int, d kx.Dtype) []float64 {
	rng := rand.New(rand.NewSource(seed*7919 + int64(r)))
	v := make([]float64, n)
	for i := range v {
		x := (rng.Float64()*2 - 1) * float64(1+r%3) * 100
		if d == kx.F32 {
			x = float64(float32(x))
		}
		v[i] = x
	}
	return v
}

func mixEncode(d kx.Dtype, v []float64) []byte {
	b := make([]byte, len(v)*d.Size())
	for i, x := range v {
		if d == kx.F32 {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
		} else {
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
		}
	}
	return b
}

func mixDecode(d kx.Dtype, b []byte, i int) float64 {
	if d == kx.F32 {
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
}

// mixRef is the group average as the library must compute it: the members' vectors summed in
// member order in the dtype's own arithmetic, then divided by the group size.
func mixRef(d kx.Dtype, members [][]byte) []byte {
	n := len(members[0]) / d.Size()
	out := make([]byte, len(members[0]))
	for i := 0; i < n; i++ {
		if d == kx.F32 {
			acc := float32(mixDecode(d, members[0], i))
			for _, m := range members[1:] {
				acc += float32(mixDecode(d, m, i))
			}
			acc /= float32(len(members))
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(acc))
		} else {
			acc := mixDecode(d, members[0], i)
			for _, m := range members[1:] {
				acc += mixDecode(d, m, i)
			}
			acc /= float64(len(members))
			binary.LittleEndian.PutUint64(out[8*i:], math.Float64bits(acc))
		}
	}
	return out
}

// mixTopo is the topology Mix must use: the fixed degrees, else direct up to 8 ranks and binary
// beyond.
func mixTopo(t *testing.T, m int, degrees string) planning.Topology {
	t.Helper()
	spec := degrees
	if spec == "" || spec == "auto" {
		spec = "binary" // mixing's default (core/mix.go)
	}
	ds, err := kx.ParseDegreesSpec(spec, m)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := planning.NewTopology(ds, m)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// After L consecutive steps from any starting step every rank holds the global mean (and the
// same bits everywhere); after each step every rank holds exactly its group's average, computed
// in member order, so the members of a group agree bitwise.
func TestMixConverges(t *testing.T) {
	cases := []struct {
		m       int
		degrees string
		layers  int
	}{
		{1, "", 1}, {2, "", 1}, {2, "binary", 1}, {4, "2x2", 2}, {4, "", 2}, {6, "3x2", 2},
		{6, "2x3", 2}, {6, "direct", 1}, {8, "2x2x2", 3}, {8, "4x2", 2}, {8, "", 3},
		{8, "2x1x4", 2}, {12, "", 3},
	}
	for _, tc := range cases {
		for _, d := range []kx.Dtype{kx.F32, kx.F64} {
			for _, start := range []int64{0, 5} {
				name := fmt.Sprintf("m%d_%s_%s_from%d", tc.m, degName(tc.degrees), d, start)
				t.Run(name, func(t *testing.T) {
					mixConverges(t, tc.m, tc.degrees, tc.layers, d, start)
				})
			}
		}
	}
}

func degName(d string) string {
	if d == "" {
		return "default"
	}
	return d
}

func mixConverges(t *testing.T, m int, degrees string, wantLayers int, d kx.Dtype, start int64) {
	const n = 1001
	topo := mixTopo(t, m, degrees)
	L := max(1, topo.Layers())
	// snap[s][r]: rank r's vector after s steps (s = 0: the input).
	snap := make([][][]byte, L+1)
	for s := range snap {
		snap[s] = make([][]byte, m)
	}
	inputs := make([][]float64, m)
	for r := 0; r < m; r++ {
		inputs[r] = mixVector(int64(m)*31+start, r, n, d)
	}
	errs := runJob(t, m, degrees, func(c *core.Comm) error {
		r := c.Rank()
		if got := c.MixLayers(); got != wantLayers {
			return fmt.Errorf("MixLayers() = %d, want %d", got, wantLayers)
		}
		buf := mixEncode(d, inputs[r])
		snap[0][r] = append([]byte(nil), buf...)
		for s := 1; s <= L; s++ {
			if err := c.Mix(buf, d, start+int64(s-1)); err != nil {
				return fmt.Errorf("step %d: %v", start+int64(s-1), err)
			}
			snap[s][r] = append([]byte(nil), buf...)
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	// Each step: exactly the group average of the previous vectors, in member order.
	for s := 1; s <= L; s++ {
		for r := 0; r < m; r++ {
			want := snap[s-1][r]
			if topo.Layers() > 0 {
				i := int((start + int64(s-1)) % int64(topo.Layers()))
				var members [][]byte
				for g := 0; g < topo.Degrees[i]; g++ {
					members = append(members, snap[s-1][topo.Member(r, i, g)])
				}
				want = mixRef(d, members)
			}
			if !bytes.Equal(snap[s][r], want) {
				t.Fatalf("step %d rank %d: vector is not the group's member-order average", start+int64(s-1), r)
			}
		}
	}
	// After L steps: the global mean within float tolerance, the same bits on every rank.
	tol := 1e-12
	if d == kx.F32 {
		tol = 2e-6
	}
	for i := 0; i < n; i++ {
		mean, scale := 0.0, 0.0
		for r := 0; r < m; r++ {
			mean += inputs[r][i]
			scale = max(scale, math.Abs(inputs[r][i]))
		}
		mean /= float64(m)
		for r := 0; r < m; r++ {
			got := mixDecode(d, snap[L][r], i)
			if !(math.Abs(got-mean) <= tol*scale) {
				t.Fatalf("after %d steps rank %d element %d = %.17g, global mean %.17g", L, r, i, got, mean)
			}
		}
	}
	for r := 1; r < m; r++ {
		if !bytes.Equal(snap[L][r], snap[L][0]) {
			t.Fatalf("after %d steps rank %d holds other bits than rank 0", L, r)
		}
	}
}

// Bad arguments: CodeArg naming the argument, and the comm stays usable.
func TestMixBadArgs(t *testing.T) {
	errs := runJob(t, 4, "2x2", func(c *core.Comm) error {
		buf := make([]byte, 64)
		bad := []struct {
			name, word string
			err        error
		}{
			{"i32", "dtype", c.Mix(buf, kx.I32, 0)},
			{"i64", "dtype", c.Mix(buf, kx.I64, 0)},
			{"u64", "dtype", c.Mix(buf, kx.U64, 0)},
			{"dtype 99", "dtype", c.Mix(buf, kx.Dtype(99), 0)},
			{"dtype 0", "dtype", c.Mix(buf, kx.Dtype(0), 0)},
			{"negative step", "step", c.Mix(buf, kx.F64, -1)},
			{"min step", "step", c.Mix(buf, kx.F32, math.MinInt64)},
			{"ragged buf", "buf", c.Mix(buf[:12], kx.F64, 0)},
		}
		for _, b := range bad {
			if !errors.Is(b.err, kx.ErrArg) {
				return fmt.Errorf("%s: got %v, want CodeArg", b.name, b.err)
			}
			if !strings.Contains(b.err.Error(), b.word) {
				return fmt.Errorf("%s: message %q does not name %s", b.name, b.err, b.word)
			}
		}
		for i := range 8 {
			binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(float64(c.Rank())))
		}
		for s := int64(0); s < 2; s++ {
			if err := c.Mix(buf, kx.F64, math.MaxInt64-1+s); err != nil { // huge steps are fine
				return fmt.Errorf("after bad calls: %v", err)
			}
		}
		if got := mixDecode(kx.F64, buf, 7); got != 1.5 {
			return fmt.Errorf("after two steps: %v, want the mean 1.5", got)
		}
		return c.Mix(nil, kx.F32, 3) // empty vectors are fine
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// Ranks that disagree on the step (also in its high bits), the count, the dtype or the
// collective fail with CodeMismatch, without waiting for a timeout: the disagreeing rank and its
// butterfly neighbours (the members of its groups at every layer) always; the other ranks fail
// too or, when they finished first, complete a correct step with their agreeing group. The comm
// stays usable.
func TestMixMismatch(t *testing.T) {
	for _, tc := range []struct {
		m       int
		degrees string
	}{{4, "2x2"}, {4, ""}, {8, "2x2x2"}, {6, "3x2"}} {
		t.Run(fmt.Sprintf("m%d_%s", tc.m, degName(tc.degrees)), func(t *testing.T) {
			mixMismatch(t, tc.m, tc.degrees)
		})
	}
}

func mixMismatch(t *testing.T, m int, degrees string) {
	const odd = 2 // the rank that disagrees
	names := []string{"step", "step high bits", "step layer", "count", "dtype", "collective"}
	got := make([][]error, m)
	errs := runJob(t, m, degrees, func(c *core.Comm) error {
		r := c.Rank()
		buf := make([]byte, 80)
		pick := func(a, b int64) int64 {
			if r == odd {
				return b
			}
			return a
		}
		calls := []func() error{
			func() error { return c.Mix(buf, kx.F64, pick(4, 4+int64(6*c.MixLayers()))) },
			func() error { return c.Mix(buf, kx.F64, pick(1, 1+1<<32)) },
			func() error { return c.Mix(buf, kx.F64, pick(0, 1)) },
			func() error { return c.Mix(buf[:pick(80, 72)], kx.F64, 0) },
			func() error {
				if r == odd {
					return c.Mix(buf, kx.F32, 0)
				}
				return c.Mix(buf, kx.F64, 0)
			},
			func() error {
				if r == odd {
					return c.Allreduce(buf, buf, kx.F64, kx.Sum)
				}
				return c.Mix(buf, kx.F64, 0)
			},
		}
		for k, call := range calls {
			t0 := time.Now()
			err := call()
			got[r] = append(got[r], err)
			if el := time.Since(t0); el > jobTimeout/2 { // a timeout would take jobTimeout
				return fmt.Errorf("%s: took %v: it waited for a timeout", names[k], el)
			}
		}
		return c.Mix(buf, kx.F64, 9)
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	if t.Failed() {
		return
	}
	topo := mixTopo(t, m, degrees)
	near := map[int]bool{odd: true}
	for j := 0; j < topo.Layers(); j++ {
		for g := 0; g < topo.Degrees[j]; g++ {
			near[topo.Member(odd, j, g)] = true
		}
	}
	for r := 0; r < m; r++ {
		for k, err := range got[r] {
			switch {
			case errors.Is(err, kx.ErrMismatch):
				if strings.HasPrefix(names[k], "step") && !strings.Contains(err.Error(), "disagrees on step") {
					t.Errorf("%s: rank %d: message %q does not name the step", names[k], r, err)
				}
			case err == nil && !near[r]:
			default:
				t.Errorf("%s: rank %d got %v, want CodeMismatch", names[k], r, err)
			}
		}
	}
}
