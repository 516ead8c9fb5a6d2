package planning

import (
	"errors"
	"kylix/core/kx"
	"math"
	"slices"
	"strings"
	"testing"
)

// exactDensity is eq. 7 summed term by term (Neumaier-compensated), the reference for Density.
func exactDensity(n int64, lambda, alpha float64) float64 {
	var s, c float64
	for r := int64(1); r <= n; r++ {
		x := -math.Expm1(-lambda / math.Pow(float64(r), alpha)) // 1-exp(-x) would cancel
		t := s + x
		if math.Abs(s) >= math.Abs(x) {
			c += (s - t) + x
		} else {
			c += (x - t) + s
		}
		s = t
	}
	return (s + c) / float64(n)
}

// TestDensityTail checks the Euler–Maclaurin tail against the exact sum for n = 1e6, with the
// exact part cut far earlier than in production so that the tail carries most of the sum.
func TestDensityTail(t *testing.T) {
	const n = 1_000_000
	for _, alpha := range []float64{0.5, 1, 2.5} {
		for _, lambda := range []float64{1e-3, 1, 1e3, 1e5, 1e7} {
			want := exactDensity(n, lambda, alpha)
			for _, cut := range []int64{100, 1000, densityExactTerms} {
				got := densityCut(n, lambda, alpha, cut)
				// Absolute for tiny densities, relative otherwise.
				if err := math.Abs(got-want) / max(want, 1e-300); err > 1e-9 {
					t.Errorf("alpha=%g lambda=%g cut=%d: %.15g, exact %.15g (rel err %.2g)",
						alpha, lambda, cut, got, want, err)
				}
			}
			if got := Density(n, lambda, alpha); math.Abs(got-want) > 1e-12*want {
				t.Errorf("Density(1e6,%g,%g) = %.15g, exact %.15g", lambda, alpha, got, want)
			}
		}
	}
}

func TestDensityLimitsAndMonotone(t *testing.T) {
	if Density(100, 0, 1) != 0 || Density(0, 1, 1) != 0 || Density(100, math.Inf(1), 1) != 1 {
		t.Fatal("limits")
	}
	// n = 1: f(λ) = 1 − e^−λ.
	if got, want := Density(1, 0.7, 1.3), -math.Expm1(-0.7); math.Abs(got-want) > 1e-15 {
		t.Fatalf("n=1: %g want %g", got, want)
	}
	for _, n := range []int64{10, 1e6, 1e10} {
		for _, alpha := range []float64{0.5, 1, 2} {
			prev := 0.0
			for e := -4.0; e <= 24; e += 0.5 {
				d := Density(n, math.Pow(10, e), alpha)
				if d < prev || d > 1 || math.IsNaN(d) {
					t.Fatalf("n=%d alpha=%g: f(1e%g) = %g after %g", n, alpha, e, d, prev)
				}
				prev = d
			}
		}
	}
}

func TestSolveLambda(t *testing.T) {
	for _, n := range []int64{1, 10, 1e6, 6e7, 1e10} {
		for _, alpha := range []float64{0.5, 1, 2} {
			for _, d := range []float64{1e-6, 0.035, 0.21, 0.9, 0.999999} {
				l, err := SolveLambda(n, d, alpha)
				if err != nil {
					t.Fatal(err)
				}
				if got := Density(n, l, alpha); math.Abs(got-d) > 1e-10*d {
					t.Errorf("n=%d alpha=%g: f(SolveLambda(%g)) = %.12g", n, alpha, d, got)
				}
				if n == 1 {
					if want := -math.Log1p(-d); math.Abs(l-want) > 1e-11*want {
						t.Errorf("n=1: lambda %g want %g", l, want)
					}
				}
			}
		}
	}
	if l, err := SolveLambda(1000, 1, 1); err != nil || !math.IsInf(l, 1) {
		t.Fatalf("density 1: %g %v", l, err)
	}
}

func TestPlannerArgs(t *testing.T) {
	cases := []struct {
		n       int64
		density float64
		nodes   int
		alpha   float64
		minPkt  int64
		bpv     int
		arg     string
	}{
		{0, 0.1, 4, 1, 1, 4, "nFeatures"},
		{10, 0, 4, 1, 1, 4, "density"},
		{10, 1.5, 4, 1, 1, 4, "density"},
		{10, math.NaN(), 4, 1, 1, 4, "density"},
		{10, 0.1, 0, 1, 1, 4, "nodes"},
		{10, 0.1, 4, 0, 1, 4, "alpha"},
		{10, 0.1, 4, math.Inf(1), 1, 4, "alpha"},
		{10, 0.1, 4, 1, 0, 4, "minPacket"},
		{10, 0.1, 4, 1, 1, 0, "bytesPerValue"},
	}
	for _, c := range cases {
		_, _, err := PlanDegrees(c.n, c.density, c.nodes, c.alpha, c.minPkt, c.bpv)
		if !errors.Is(err, kx.ErrArg) || !strings.HasPrefix(err.Error(), c.arg+":") {
			t.Errorf("%+v: got %v, want CodeArg naming %s", c, err, c.arg)
		}
	}
	if _, err := SolveLambda(10, 0.1, -1); !errors.Is(err, kx.ErrArg) || !strings.HasPrefix(err.Error(), "alpha:") {
		t.Errorf("SolveLambda alpha: %v", err)
	}
}

// TestPlanDegreesRule checks the greedy rule on a grid: degrees divide the remaining count and
// multiply to nodes; each layer's degree is the largest divisor whose predicted message reaches
// minPacket, or the smallest divisor when none does; predictions follow Proposition 4.1.
func TestPlanDegreesRule(t *testing.T) {
	for _, nodes := range []int{1, 6, 7, 64, 360} {
		for _, density := range []float64{1e-5, 0.2, 1} {
			for _, minPkt := range []int64{1, 1 << 20, 64 << 20} {
				const n, alpha, bpv = 5e7, 1.0, 8
				ds, preds, err := PlanDegrees(n, density, nodes, alpha, minPkt, bpv)
				if err != nil {
					t.Fatal(err)
				}
				if len(ds) != len(preds) {
					t.Fatalf("%d degrees, %d predictions", len(ds), len(preds))
				}
				if _, err := NewTopology(ds, nodes); err != nil {
					t.Fatalf("nodes=%d: %v", nodes, err)
				}
				if nodes == 1 {
					continue
				}
				lambda0, _ := SolveLambda(n, density, alpha)
				rem, k := nodes, 1
				for i, d := range ds {
					p := preds[i]
					wantD := density
					if i > 0 {
						wantD = Density(n, float64(k)*lambda0, alpha)
					}
					if p.Degree != d || math.Abs(p.Density-wantD) > 1e-12 ||
						math.Abs(p.ElemsPerNode-wantD*n/float64(k)) > 1e-6*p.ElemsPerNode ||
						math.Abs(p.MessageBytes-p.ElemsPerNode*bpv/float64(d)) > 1e-6*p.MessageBytes {
						t.Fatalf("layer %d prediction %+v (density %g, K %d)", i, p, wantD, k)
					}
					if rem%d != 0 || d < 2 {
						t.Fatalf("degree %d for remaining %d", d, rem)
					}
					bytes := p.ElemsPerNode * bpv
					var best, smallest int
					for c := rem; c >= 2; c-- {
						if rem%c != 0 {
							continue
						}
						smallest = c
						if best == 0 && bytes/float64(c) >= float64(minPkt) {
							best = c
						}
					}
					if best == 0 {
						best = smallest
					}
					if d != best {
						t.Fatalf("nodes=%d density=%g minPkt=%d layer %d: degree %d, rule gives %d (%v)",
							nodes, density, minPkt, i, d, best, ds)
					}
					rem /= d
					k *= d
				}
			}
		}
	}
	// Prime node counts go direct; tiny data goes binary; huge packets allowed go direct.
	if ds, _, _ := PlanDegrees(1e6, 0.01, 97, 1, 1<<30, 4); !slices.Equal(ds, []int{97}) {
		t.Errorf("prime: %v", ds)
	}
	if ds, _, _ := PlanDegrees(1e6, 1e-4, 64, 1, 1<<20, 4); !slices.Equal(ds, []int{2, 2, 2, 2, 2, 2}) {
		t.Errorf("tiny data: %v", ds)
	}
	if ds, _, _ := PlanDegrees(1e9, 0.5, 64, 1, 1<<20, 4); !slices.Equal(ds, []int{64}) {
		t.Errorf("big data: %v", ds)
	}
	if ds, p, _ := PlanDegrees(1e6, 0.5, 1, 1, 1<<20, 4); !slices.Equal(ds, []int{1}) || len(p) != 1 {
		t.Errorf("one node: %v %v", ds, p)
	}
}

// Paper §VII-A: 64 EC2 nodes, minimum efficient packet 5 MB. Twitter followers: n = 60e6,
// 64-way density 0.21, chosen degrees 8x4x2. Yahoo web graph: n = 1.4e9, density 0.035,
// chosen degrees 16x4.
const (
	twitterN, twitterD = 60e6, 0.21
	yahooN, yahooD     = 1.4e9, 0.035
	paperMinPacket     = 5e6
)

// TestPlanPaperTwitter: 4-byte values (float32 PageRank) and 5 MB reproduce 8x4x2 for
// α in [0.5, 1]: 12.6M elements·4 B = 50.4 MB per node, 50.4/8 = 6.3 MB >= 5 MB > 50.4/16.
// A node then holds D1·7.5M elements, D1 = f(8λ0) = 0.79 (α=0.5) .. 0.69 (α=1), so a 4-way
// message is D1·7.5 MB >= 5 MB (D1 >= 2/3) but an 8-way one is not. For α >= 1.25, D1 < 2/3
// and the model gives 8x2x2x2.
func TestPlanPaperTwitter(t *testing.T) {
	for _, alpha := range []float64{0.5, 0.75, 1} {
		ds, p, err := PlanDegrees(twitterN, twitterD, 64, alpha, paperMinPacket, 4)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ds, []int{8, 4, 2}) {
			t.Errorf("alpha=%g: %s (%+v), paper 8x4x2", alpha, kx.FormatDegrees(ds), p)
		}
	}
}

// TestPlanPaperYahoo: the first layer does not depend on α: 49M elements per node. With 2- or
// 3-byte elements (98 or 147 MB per node) the largest divisor of 64 with a >= 5 MB message is
// 16, and for every α in [0.5, 2] the second layer takes the remaining 4: 16x4.
func TestPlanPaperYahoo(t *testing.T) {
	for _, bpv := range []int{2, 3} {
		for _, alpha := range []float64{0.5, 1, 1.5, 2} {
			ds, p, err := PlanDegrees(yahooN, yahooD, 64, alpha, paperMinPacket, bpv)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ds, []int{16, 4}) {
				t.Errorf("alpha=%g bytes=%d: %s (%+v), paper 16x4", alpha, bpv, kx.FormatDegrees(ds), p)
			}
		}
	}
}

// TestPlanPaperNoSingleSetting documents why one (α, bytes/value, min packet) cannot give both
// paper designs. Only the ratio R = bytesPerValue/minPacket matters. Layer 1 is α-free:
// Twitter 8 (not 16) needs 12.6e6·R/8 >= 1 > 12.6e6·R/16, Yahoo 16 (not 32) needs
// 49e6·R/16 >= 1 > 49e6·R/32, so R must lie in [8/12.6e6, 32/49e6). Twitter's second layer is
// 4 (not 2) only if D1·(60e6/8)·R/4 >= 1, i.e. D1 >= 4/(7.5e6·R) > 4·49e6/(7.5e6·32) = 0.8167,
// while f(8λ0) stays below that for every α in [0.5, 2] (it tends to 1−0.79^8 = 0.848 only as
// α → 0, i.e. no power law at all).
func TestPlanPaperNoSingleSetting(t *testing.T) {
	rLo, rHi := 8/(twitterN*twitterD), 32/(yahooN*yahooD)
	if !(rLo < rHi) {
		t.Fatalf("layer-1 window empty: [%g, %g)", rLo, rHi)
	}
	need := 4 / (twitterN / 8 * rHi)
	for _, alpha := range []float64{0.5, 0.75, 1, 1.25, 1.5, 1.75, 2} {
		l, _ := SolveLambda(twitterN, twitterD, alpha)
		if d1 := Density(twitterN, 8*l, alpha); d1 >= need {
			t.Errorf("alpha=%g: D1 = %.4f >= %.4f: a single setting would exist", alpha, d1, need)
		}
	}
	// And concretely, inside the window (4 B, 6.2 MB): Yahoo gives 16x4 but Twitter 8x2x2x2.
	ya, _, _ := PlanDegrees(yahooN, yahooD, 64, 1, 6.2e6, 4)
	tw, _, _ := PlanDegrees(twitterN, twitterD, 64, 1, 6.2e6, 4)
	if !slices.Equal(ya, []int{16, 4}) || !slices.Equal(tw, []int{8, 2, 2, 2}) {
		t.Errorf("6.2 MB, 4 B, α=1: Yahoo %v, Twitter %v", ya, tw)
	}
	// With the paper's own 5 MB and 4-byte values Yahoo's first layer is 32: 196 MB/32 = 6.1 MB.
	if ya, _, _ := PlanDegrees(yahooN, yahooD, 64, 1, paperMinPacket, 4); ya[0] != 32 {
		t.Errorf("5 MB, 4 B: Yahoo %v", ya)
	}
}

func BenchmarkSolveLambdaYahoo(b *testing.B) {
	for range b.N {
		if _, err := SolveLambda(yahooN, yahooD, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlanDegreesTwitter(b *testing.B) {
	for range b.N {
		if _, _, err := PlanDegrees(twitterN, twitterD, 64, 1, paperMinPacket, 4); err != nil {
			b.Fatal(err)
		}
	}
}
