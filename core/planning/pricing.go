package planning

// Pricing is how the cost model sees a measured link model (Links from the probe): where nodes
// share hosts in blocks (RanksPerHost), messages within a host at the local links' figures and
// the rest at the network's; else every node a host of its own at the figures of all links. On
// one host whose ranks fit its CPUs every link is alike, priced at the figures of all links.
//
// Where a host's ranks outnumber its CPUs (RanksPerCPU above 1, links_oversub.go):
//   - compute is slowed by the ranks per CPU (Cluster.Slowdown);
//   - messages within a host cost their bytes only. A probe there cannot see the shared-memory
//     link's per-message cost, a few microseconds, under the milliseconds a rank waits for a
//     core, and that wait does not belong to a message: a layer posts all its messages at once
//     and its ranks wait for cores about once per layer, so a plan of more layers pays it more
//     often, not less. The plan for one such host is then the same whatever the scheduler did
//     to the probes: the fewest layers within planSlack, direct where its bytes and compute are
//     the least, as Table I of "Kylix: A Sparse Allreduce for Commodity Clusters" (§IV) picks
//     degrees by the link's own minimum efficient packet size, which shared memory makes small;
//   - messages between hosts keep the network's fitted overhead, fitted from each size's
//     fastest round (a network's per-message cost is real and larger than a core's wait).
func Pricing(l *Links) (*Links, Cluster) {
	cl := Cluster{RanksPerHost: 1, Slowdown: max(l.RanksPerCPU, 1)}
	crowded := l.RanksPerCPU > 1
	if l.RanksPerHost <= 1 || l.Local == nil || l.Remote == nil {
		if crowded && l.RanksPerHost > 1 && l.Remote == nil { // one host, every link within it
			return bytesOnly(l), cl
		}
		return l, cl
	}
	cl.RanksPerHost, cl.Local = l.RanksPerHost, l.Local
	if crowded {
		cl.Local = bytesOnly(l.Local)
	}
	return l.Remote, cl
}

// bytesOnly is l's rate without its per-message overhead, for pricing only.
func bytesOnly(l *Links) *Links {
	return &Links{LatencyS: l.LatencyS, BytesPerSec: l.BytesPerSec, MinPacket: 1, Measured: l.Measured, Source: l.Source}
}
