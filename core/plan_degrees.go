package core

import "kylix/core/planning"

// planFor is degrees=auto's choice: by predicted time on the measured links (with the rates
// agreed with them), unless min_packet is given or nothing was measured, in which case
// Proposition 4.1's rule keeps messages above min_packet. es is the bytes per value of the
// reduces to come; same tells that every rank's in set is its out set.
func (c *Comm) planFor(n int64, density float64, m int, same bool, es int) ([]int, error) {
	if l := c.Links(); l != nil && c.opts.MinPacket <= 0 {
		link, cl := hostPricing(l)
		ds, _, err := planning.PlanDegreesByCost(n, density, m, planning.DefaultAlpha, link, cl, l.Rates,
			planning.Workload{ValueBytes: es, InEqualsOut: same, IndexRatio: 1})
		return ds, err
	}
	ds, _, err := planning.PlanDegrees(n, density, m, planning.DefaultAlpha, c.minPacket(), 8)
	return ds, err
}

// hostPricing is how the cost model sees the measured links: where nodes share hosts in blocks
// (Links.RanksPerHost), messages within a host at the local links' figures and the rest at the
// network's; else every node a host of its own at the figures of all links. On one host (no link between hosts measured) every link is alike and the plan is as before.
func hostPricing(l *planning.Links) (*planning.Links, planning.Cluster) {
	if l.RanksPerHost <= 1 || l.Local == nil || l.Remote == nil {
		return l, planning.Cluster{RanksPerHost: 1}
	}
	return l.Remote, planning.Cluster{RanksPerHost: l.RanksPerHost, Local: l.Local}
}
