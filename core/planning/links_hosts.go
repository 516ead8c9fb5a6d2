package planning

// Hosts: ranks that share a host talk through shared memory, the others through the network,
// and the cost model prices the two apart (Cluster.RanksPerHost and Cluster.Local), so that
// degrees=auto may group a host's ranks within one layer and the network carries each index once
// per host (NCCL's intra-node then inter-node rings, here layers of the butterfly). The link
// probe measures both kinds of pairs; HostLinks splits its figures by kind.

// HostBlocks returns the ranks per host when hostOf (each node's host, as the lowest node on
// it) places nodes in contiguous blocks of one size: the placement the cost model prices
// (node r on host r/RanksPerHost). Any other placement gives 1: every node priced as a host
// of its own, as before the split.
func HostBlocks(hostOf []int) int {
	m := len(hostOf)
	if m == 0 {
		return 1
	}
	k := 0
	for k < m && hostOf[k] == hostOf[0] {
		k++
	}
	if m%k != 0 {
		return 1
	}
	for r, h := range hostOf {
		if h != r/k*k {
			return 1
		}
	}
	return k
}

// HostLinks splits the probe's round trips into the links within a host and those between
// hosts, each fitted as LinksFrom fits all of them. Each rank's words are stride long: first
// the round trips of the job-wide shifts (rank r measured the link to r+shifts[h]), then, at
// column local (when not negative), the round trip to the next rank of its own host, measured in
// rounds of their own: in a job-wide round a host-mate's answer waits behind its own probe
// across the network, so the host's links would look as slow as the network. Without that
// column the host pairs of the job-wide shifts stand for them. Either result is nil when no
// pair of its kind was measured. stat picks each size's figure, as for LinksFrom. Every rank
// computes them from the same numbers.
func HostLinks(sizes []int, agreed [][]uint64, shifts []int, stride, local int, hostOf []int, stat RoundStat) (within, between *Links) {
	m := len(hostOf)
	fit := func(pick func(r int, all []uint64) []float64) *Links {
		med := make([]float64, len(sizes))
		n := 0
		for j, all := range agreed {
			var v []float64
			for r := 0; r < m; r++ {
				v = append(v, pick(r, all[r*stride:(r+1)*stride])...)
			}
			if len(v) == 0 {
				return nil
			}
			med[j], n = statOf(stat, v), len(v)
		}
		l := &Links{LatencyS: med[0] / 2, Points: CurvePoints(sizes, med), Measured: n, Source: "measured"}
		l.Finish()
		return l
	}
	shifted := func(same bool) func(r int, words []uint64) []float64 {
		return func(r int, words []uint64) []float64 {
			var v []float64
			for h, s := range shifts {
				if (hostOf[r] == hostOf[(r+s)%m]) == same {
					v = append(v, float64(words[h])/1e9)
				}
			}
			return v
		}
	}
	between = fit(shifted(false))
	if local < 0 {
		return fit(shifted(true)), between
	}
	return fit(func(_ int, words []uint64) []float64 { return []float64{float64(words[local]) / 1e9} }), between
}
