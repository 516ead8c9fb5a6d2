package planning

import "slices"

// Oversubscribed hosts. On a host whose ranks outnumber its usable CPUs a probe's round trip is
// the link's time plus the time its two ends wait for a core; the wait is the larger part and
// changes from run to run, so a model fitted to the median prices the scheduler's luck, not the
// link, and the plan that wins changes with it. The paper's degree choice ("Kylix: A Sparse
// Allreduce for Commodity Clusters" §IV, Table I) rests on the link's own curve (its Fig. 2):
// the minimum efficient packet size is a property of the link. On such a host the links are
// therefore fitted from each size's fastest round over all measured links (Floor), the round in
// which both ends held a core, and Pricing (pricing.go) prices messages within the host by their
// bytes and slows compute by the ranks per CPU.

// RoundStat picks one figure from the round trips of one size over the measured links,
// sorted ascending.
type RoundStat func(sorted []float64) float64

// Median is the figure where ranks fit their CPUs: one slow link does not set the job's.
func Median(v []float64) float64 { return (v[(len(v)-1)/2] + v[len(v)/2]) / 2 }

// Floor is the figure on an oversubscribed host: the round in which both ends held a core.
func Floor(v []float64) float64 { return v[0] }

// StatFor is the statistic the links of a job with ranksPerCPU are fitted with.
func StatFor(ranksPerCPU float64) RoundStat {
	if ranksPerCPU > 1 {
		return Floor
	}
	return Median
}

// RanksPerCPU is the largest ratio over hosts of a host's ranks to its usable CPUs (the fewest
// any of its ranks reports, as each rank's waits decide whether to spin), from every node's host
// (hostOf, the lowest node on it) and usable CPUs. Above 1 the host is oversubscribed. Every
// rank computes the same from the same gathered numbers.
func RanksPerCPU(hostOf, cpus []int) float64 {
	ranks := map[int]int{}
	fewest := map[int]int{}
	for r, h := range hostOf {
		ranks[h]++
		if c, ok := fewest[h]; !ok || cpus[r] < c {
			fewest[h] = cpus[r]
		}
	}
	worst := 0.0
	for h, n := range ranks {
		worst = max(worst, float64(n)/float64(max(fewest[h], 1)))
	}
	return worst
}

// statOf applies stat to a copy of v, sorted.
func statOf(stat RoundStat, v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return stat(v)
}
