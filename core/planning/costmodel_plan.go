package planning

import (
	"kylix/core/kx"
	"math"
	"slices"
)

// Planning by predicted time. Proposition 4.1's rule (PlanDegrees) takes the largest degree
// whose messages reach min_packet, the size where a message gets 80% of the link; it does not
// weigh what a layer costs by itself (its messages' overheads, one more merge, one more pass of
// combining). When the links were measured, degrees=auto asks the cost model instead: every
// ordered factorisation of the node count (up to maxPlanCandidates of them, direct and binary
// always among them) is priced for one config and one reduce, and the plan of fewest layers
// within planSlack of the cheapest wins. On loopback, where a layer's merge and combine cost
// more than any message's overhead, that is direct; on a link whose overhead·rate is large
// (the paper's EC2 figures) it is a butterfly.

// maxPlanCandidates bounds the degree lists priced (64 nodes have 32 ordered factorisations,
// 1024 have 512; highly composite counts have many more).
const maxPlanCandidates = 2048

// PlanDegreesByCost returns the degrees with the least predicted config + reduce time on the
// link and cluster with the given compute rates and workload, and that prediction.
func PlanDegreesByCost(nFeatures int64, density float64, nodes int, alpha float64, link *Links, cl Cluster, r ComputeRates, w Workload) ([]int, TimePrediction, error) {
	if err := checkPowerLawArgs(nFeatures, density, alpha); err != nil {
		return nil, TimePrediction{}, err
	}
	if nodes < 1 || link == nil || !(link.BytesPerSec > 0) {
		return nil, TimePrediction{}, kx.Errorf(kx.CodeArg, "nodes: %d, link: want nodes >= 1 and a link with a positive rate", nodes)
	}
	if nodes == 1 {
		return []int{1}, TimePrediction{Degrees: []int{1}}, nil
	}
	lambda0, err := SolveLambda(nFeatures, density, alpha)
	if err != nil {
		return nil, TimePrediction{}, err
	}
	dens := map[float64]float64{1: density} // Density(K·λ0) by K, shared by every candidate
	layersOf := func(ds []int) ([]LayerPrediction, float64) {
		var ls []LayerPrediction
		k := 1.0
		fn := float64(nFeatures)
		at := func(k float64) float64 {
			if d, ok := dens[k]; ok {
				return d
			}
			d := Density(nFeatures, k*lambda0, alpha)
			dens[k] = d
			return d
		}
		for _, d := range ds {
			e := at(k) * fn / k
			ls = append(ls, LayerPrediction{Degree: d, Density: at(k), ElemsPerNode: e})
			k *= float64(d)
		}
		return ls, at(k) * fn / k
	}
	cands := planCandidates(nodes)
	preds := make([]TimePrediction, len(cands))
	cheapest := math.Inf(1)
	for i, ds := range cands {
		ls, bottom := layersOf(ds)
		preds[i] = PredictTime(ds, ls, bottom, link, cl, r, w)
		cheapest = min(cheapest, preds[i].ConfigS+preds[i].ReduceS)
	}
	// Among the plans within the slack of the cheapest, the fewest layers win, then the cheaper,
	// then the first listed: every rank picks the same. Each layer also costs a round of
	// waiting for the slowest member, which the model does not price (on loopback a second layer
	// measured 5-20% slower where the model put two plans within 5%).
	best := fewestLayersWithin(cands, preds, cheapest, PlanSlack(cl))
	return cands[best], preds[best], nil
}

// fewestLayersWithin is the index of the plan of fewest layers among those predicted within
// slack of the cheapest (then the cheaper, then the first listed).
func fewestLayersWithin(cands [][]int, preds []TimePrediction, cheapest, slack float64) int {
	best := -1
	for i, tp := range preds {
		c := tp.ConfigS + tp.ReduceS
		if c > cheapest*(1+slack) {
			continue
		}
		if best < 0 || len(cands[i]) < len(cands[best]) ||
			len(cands[i]) == len(cands[best]) && c < preds[best].ConfigS+preds[best].ReduceS {
			best = i
		}
	}
	return best
}

// PlanSlack is how much dearer (predicted, a fraction) a plan of fewer layers may be than the
// cheapest and still be chosen on cluster cl: planSlack, or crowdedPlanSlack on a crowded host.
func PlanSlack(cl Cluster) float64 {
	if cl.Slowdown > 1 {
		return crowdedPlanSlack
	}
	return planSlack
}

// planSlack is how much dearer (predicted) a plan of fewer layers may be and still be chosen.
const planSlack = 0.05

// crowdedPlanSlack is planSlack where a host's ranks outnumber its CPUs (Cluster.Slowdown above
// 1). There each layer also waits for cores, which the model does not price (pricing.go), and
// the compute rates it does price are measured under that crowding: on 8 ranks of a 2-core host
// (n = 10^7, density 0.2) [4,2] was predicted within 1-6% of [8], so 5% let degrees=auto pick it
// in about one run of 16, and it measured 1.1x [8]'s config and 1.5x its reduce
// (docs/measurements.md, "8 ranks on 2 cores: a plan that flips").
const crowdedPlanSlack = 0.15

// planCandidates lists ordered factorisations of m into factors >= 2, larger first factors
// first, at most maxPlanCandidates, always with direct ([m]) and binary.
func planCandidates(m int) [][]int {
	var out [][]int
	var walk func(rest int, prefix []int)
	walk = func(rest int, prefix []int) {
		if len(out) >= maxPlanCandidates {
			return
		}
		if rest == 1 {
			out = append(out, slices.Clone(prefix))
			return
		}
		divs := divisorsFrom2(rest)
		for i := len(divs) - 1; i >= 0; i-- {
			walk(rest/divs[i], append(prefix, divs[i]))
		}
	}
	walk(m, nil)
	bin, _ := kx.ParseDegreesSpec("binary", m)
	if !slices.ContainsFunc(out, func(ds []int) bool { return slices.Equal(ds, bin) }) {
		out = append(out, bin)
	}
	return out
}
