package planning

import (
	"kylix/core/kx"
	"math"
)

// Degree planning for power-law data (paper §IV, Proposition 4.1).
//
// Feature r (rank by frequency, 1..n) occurs in one node's initial share with Poisson rate
// λ0·r^-α, so the expected density of a share is
//
//	f(λ) = (1/n) Σ_{r=1..n} (1 − exp(−λ r^−α))                         (eq. 7)
//
// and λ0 solves f(λ0) = D0, the measured density. After layers with degrees d1..di a node holds
// the merge of K_i = d1·…·di initial shares restricted to a hash range of n/K_i features, so its
// density is D_i = f(K_i λ0) (eq. 4) and it holds D_i·n/K_i elements (eq. 5). In the next layer it
// sends about D_i·n/(K_i·d_{i+1}) elements to each of its d_{i+1} group members.

// LayerPrediction is the model's view of one communication layer: Density and ElemsPerNode
// describe the data a node holds before the layer (node layer i: D_i and D_i·n/K_i), and
// MessageBytes = ElemsPerNode·bytesPerValue/Degree is the expected message to each neighbour.
type LayerPrediction struct {
	Degree       int
	Density      float64
	ElemsPerNode float64
	MessageBytes float64
}

// densityExactTerms is how many leading ranks Density sums term by term; the tail is
// integrated (Euler–Maclaurin). Beyond the first few hundred ranks the summand is so smooth in
// r that the tail formula is exact to rounding: against the full sum at n = 1e6 the relative
// error is ~3e-11 with 100 exact terms and ~1e-14 from 1000 on (see TestDensityTail).
const densityExactTerms = 2000

// Density is f(λ) of Proposition 4.1 for nFeatures features and power-law exponent alpha:
// the expected fraction of features present in a vector whose feature r occurs with Poisson
// rate lambda·r^-alpha. It is increasing in lambda, 0 for lambda <= 0 (or nFeatures < 1) and 1
// for lambda = +Inf. The cost is O(min(n, 2000) + ~1000) whatever n (10^10 and beyond).
func Density(nFeatures int64, lambda, alpha float64) float64 {
	return densityCut(nFeatures, lambda, alpha, densityExactTerms)
}

// densityCut sums ranks 1..cut exactly and approximates ranks cut+1..n.
func densityCut(n int64, lambda, alpha float64, cut int64) float64 {
	switch {
	case n < 1 || lambda <= 0:
		return 0
	case math.IsInf(lambda, 1):
		return 1
	case math.IsNaN(lambda) || math.IsNaN(alpha):
		return math.NaN()
	}
	cut = min(cut, n)
	// Sum small terms first is not needed at this size; terms are in (0,1].
	s := 0.0
	for r := int64(1); r <= cut; r++ {
		s += -math.Expm1(-lambda * math.Pow(float64(r), -alpha))
	}
	if cut < n {
		s += powerTailSum(float64(cut+1), float64(n), lambda, alpha)
	}
	d := s / float64(n)
	return min(d, 1)
}

// powerTailSum approximates Σ_{r=a..b} g(r), g(r) = 1 − exp(−λ r^−α), by Euler–Maclaurin:
// ∫_a^b g + (g(a)+g(b))/2 + (g'(b) − g'(a))/12. The integral is taken in t = ln r, where the
// integrand g(e^t)·e^t is smooth on the scale 1/α, with composite 8-point Gauss–Legendre.
func powerTailSum(a, b, lambda, alpha float64) float64 {
	g := func(r float64) float64 { return -math.Expm1(-lambda * math.Pow(r, -alpha)) }
	dg := func(r float64) float64 { // g'(r) = −α u e^−u / r with u = λ r^−α
		u := lambda * math.Pow(r, -alpha)
		return -alpha * u * math.Exp(-u) / r
	}
	if b < a {
		return 0
	}
	ta, tb := math.Log(a), math.Log(b)
	panels := int(math.Ceil((tb - ta) * max(alpha, 1) * 8))
	panels = min(max(panels, 1), 1<<16)
	h := (tb - ta) / float64(panels)
	integral := 0.0
	for p := range panels {
		mid := ta + (float64(p)+0.5)*h
		ps := 0.0
		for k, x := range glNodes8 {
			t := mid + 0.5*h*x
			r := math.Exp(t)
			ps += glWeights8[k] * g(r) * r
		}
		integral += 0.5 * h * ps
	}
	return integral + (g(a)+g(b))/2 + (dg(b)-dg(a))/12
}

// 8-point Gauss–Legendre nodes and weights on [-1,1].
var (
	glNodes8 = [8]float64{
		-0.9602898564975363, -0.7966664774136267, -0.5255324099163290, -0.1834346424956498,
		0.1834346424956498, 0.5255324099163290, 0.7966664774136267, 0.9602898564975363,
	}
	glWeights8 = [8]float64{
		0.1012285362903763, 0.2223810344533745, 0.3137066458778873, 0.3626837833783620,
		0.3626837833783620, 0.3137066458778873, 0.2223810344533745, 0.1012285362903763,
	}
)

func checkPowerLawArgs(nFeatures int64, density, alpha float64) error {
	if nFeatures < 1 {
		return kx.Errorf(kx.CodeArg, "nFeatures: %d must be at least 1", nFeatures)
	}
	if !(density > 0 && density <= 1) {
		return kx.Errorf(kx.CodeArg, "density: %g is not in (0,1]", density)
	}
	if !(alpha > 0) || math.IsInf(alpha, 1) {
		return kx.Errorf(kx.CodeArg, "alpha: %g must be a finite number > 0", alpha)
	}
	return nil
}

// SolveLambda returns λ0 with Density(nFeatures, λ0, alpha) == density (to ~1e-12 relative in
// the density), found by the Illinois variant of regula falsi on ln f versus ln λ inside a
// bracket, with bisection steps as a safeguard. density 1 gives +Inf.
func SolveLambda(nFeatures int64, density, alpha float64) (float64, error) {
	if err := checkPowerLawArgs(nFeatures, density, alpha); err != nil {
		return 0, err
	}
	if density == 1 {
		return math.Inf(1), nil
	}
	// Bracket: 1−e^−x <= x and r^−α <= 1 give f(λ) <= λ, so f(density) <= density; every term
	// is at least 1 − exp(−λ n^−α), so f(−ln(1−D)·n^α) >= D.
	lo := density
	hi := -math.Log1p(-density) * math.Pow(float64(nFeatures), alpha)
	hi = min(hi, math.MaxFloat64/4)
	if !(hi > lo) {
		hi = 2 * lo
	}
	// On ln λ, ln f is smooth, increasing and close to linear (slope ≈ 1/α while f is small),
	// which suits the secant steps.
	lnD := math.Log(density)
	g := func(t float64) float64 { return math.Log(Density(nFeatures, math.Exp(t), alpha)) - lnD }
	a, b := math.Log(lo), math.Log(hi)
	ga, gb := g(a), g(b)
	if ga >= 0 {
		return lo, nil
	}
	if gb <= 0 {
		return hi, nil
	}
	const tol = 1e-12 // on ln f: relative error of the density
	side := 0
	for i := range 200 {
		c := (a*gb - b*ga) / (gb - ga)
		// Bisect when the secant point falls outside the bracket (or is NaN from ln 0), and
		// every 8th step, which bounds the count of slow steps in any case.
		if !(c > a && c < b) || i%8 == 7 {
			c = a + (b-a)/2
		}
		gc := g(c)
		if math.Abs(gc) <= tol || b-a <= 1e-14*max(1, math.Abs(c)) {
			return math.Exp(c), nil
		}
		if gc > 0 {
			b, gb = c, gc
			if side == -1 {
				ga /= 2
			}
			side = -1
		} else {
			a, ga = c, gc
			if side == 1 {
				gb /= 2
			}
			side = 1
		}
	}
	return math.Exp((a + b) / 2), nil
}

// PlanDegrees chooses butterfly degrees for `nodes` nodes from the power-law model (paper
// §IV): layer by layer it takes the largest degree d dividing the remaining node count whose
// expected message per neighbour, ElemsPerNode·bytesPerValue/d, is at least minPacket. When no
// d >= 2 reaches minPacket the data is too small for the network anyway and the layer takes the
// smallest divisor >= 2: with latency-bound messages the cost is the number of messages,
// Σ(d_i − 1), which prime factors minimise. Layers follow until the degrees multiply to
// `nodes`; the last layer is whatever remains (a prime remainder becomes one direct layer).
// density is the measured per-node density D0 of the initial shares; bytesPerValue counts the
// bytes sent per element (value width times dtype size, plus index bytes if they travel too).
// For nodes == 1 it returns the single degree 1.
func PlanDegrees(nFeatures int64, density float64, nodes int, alpha float64, minPacket int64, bytesPerValue int) ([]int, []LayerPrediction, error) {
	if err := checkPowerLawArgs(nFeatures, density, alpha); err != nil {
		return nil, nil, err
	}
	if nodes < 1 {
		return nil, nil, kx.Errorf(kx.CodeArg, "nodes: %d must be at least 1", nodes)
	}
	if minPacket < 1 {
		return nil, nil, kx.Errorf(kx.CodeArg, "minPacket: %d must be at least 1 byte", minPacket)
	}
	if bytesPerValue < 1 {
		return nil, nil, kx.Errorf(kx.CodeArg, "bytesPerValue: %d must be at least 1", bytesPerValue)
	}
	lambda0, err := SolveLambda(nFeatures, density, alpha)
	if err != nil {
		return nil, nil, err
	}
	n := float64(nFeatures)
	if nodes == 1 {
		e := density * n
		return []int{1}, []LayerPrediction{{Degree: 1, Density: density, ElemsPerNode: e,
			MessageBytes: e * float64(bytesPerValue)}}, nil
	}
	var ds []int
	var preds []LayerPrediction
	k := 1.0 // K_i, the product of the degrees so far
	for rem := nodes; rem > 1; {
		d0 := density // node layer 0 is the measured density itself, not a model value
		if len(ds) > 0 {
			d0 = Density(nFeatures, k*lambda0, alpha)
		}
		elems := d0 * n / k
		bytes := elems * float64(bytesPerValue)
		divs := divisorsFrom2(rem)
		deg := divs[0] // smallest divisor >= 2: as binary as possible
		for i := len(divs) - 1; i >= 0; i-- {
			if bytes/float64(divs[i]) >= float64(minPacket) {
				deg = divs[i]
				break
			}
		}
		ds = append(ds, deg)
		preds = append(preds, LayerPrediction{Degree: deg, Density: d0, ElemsPerNode: elems,
			MessageBytes: bytes / float64(deg)})
		k *= float64(deg)
		rem /= deg
	}
	return ds, preds, nil
}

// divisorsFrom2 lists the divisors >= 2 of m >= 2 in increasing order.
func divisorsFrom2(m int) []int {
	var small, large []int
	for d := 2; d*d <= m; d++ {
		if m%d == 0 {
			small = append(small, d)
			if d*d != m {
				large = append(large, m/d)
			}
		}
	}
	for i := len(large) - 1; i >= 0; i-- {
		small = append(small, large[i])
	}
	return append(small, m)
}

// DefaultAlpha is the power-law exponent degrees=auto assumes. Prop. 4.1's density curve
// depends only weakly on it (paper Fig. 4), and the data does not reveal it cheaply.
const DefaultAlpha = 1.0
