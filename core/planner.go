package core

import (
	"kylix/core/coll"
	"kylix/core/keyset"
	"kylix/core/kx"
	"kylix/core/planning"
	"kylix/core/probe"
	"kylix/core/stats"
	"math"
)

// planner is what a comm's configs plan with: the options that steer planning, the link model
// measured on the comm's own connections with the index codec's estimates (netState,
// links_compress.go), and the memoised degrees=auto plans.
type planner struct {
	cx      *coll.Ctx
	rec     *stats.Recorder // config messages' index bytes (noteConfigMsg)
	opts    kx.Options
	degrees []int // fixed degrees from the option, nil for auto
	net     netState
	// cache memoises degrees=auto plans; streamDegrees are the degrees config_reduce chose on
	// its first call and keeps for the rest of the stream.
	cache         map[planKey][]int
	streamDegrees []int
}

// needLinks reports whether this comm's options make its first config measure the links. The
// options (degrees, min_packet, compress) must be the same on every rank, as degrees must be.
//
// A replicated comm does not measure: its messages race, a rank takes whichever replica's copy
// arrives first, and replicas' timings differ, so ranks could see different figures, stop the
// sweep at different sizes and plan different degrees. Such a comm plans with min_packet (1 MiB
// unless given) and compress=auto leaves index lists alone.
func (pl *planner) needLinks() bool {
	return pl.cx.Nodes > 1 && pl.opts.Replication <= 1 &&
		(pl.opts.Compress == "auto" || pl.degrees == nil && pl.opts.MinPacket <= 0)
}

// linksForConfig measures the links in config seq when this is the comm's first config and the
// options need it, and returns the model it measured (nil when it did not measure).
func (pl *planner) linksForConfig(seq uint64) (*planning.Links, error) {
	if pl.net.tried || !pl.needLinks() {
		return nil, nil
	}
	pl.net.tried = true
	l, err := probe.Measure(pl.cx, seq)
	if l != nil {
		pl.setLinks(l)
	}
	return l, err
}

// setLinks keeps a measured model; plans made with the old min_packet are forgotten.
func (pl *planner) setLinks(l *planning.Links) {
	pl.net.mu.Lock()
	pl.net.links = l
	pl.net.mu.Unlock()
	pl.cache = nil
}

// links returns the measured link model, or nil before it is measured. It is shared: do not
// change it.
func (pl *planner) links() *planning.Links {
	pl.net.mu.Lock()
	defer pl.net.mu.Unlock()
	return pl.net.links
}

// minPacket is the min_packet that degrees=auto plans with: the option when given, else the
// measured one, else DefaultMinPacket.
func (pl *planner) minPacket() int64 {
	if pl.opts.MinPacket > 0 {
		return pl.opts.MinPacket
	}
	if l := pl.links(); l != nil && l.MinPacket > 0 {
		return l.MinPacket
	}
	return kx.DefaultMinPacket
}

// autoDegrees agrees with every rank on the feature count, the mean out density and whether
// in = out everywhere, then asks the planner (planFor): the cost model on the measured links,
// or Prop. 4.1's rule with min_packet. Every rank computes the same answer from the same agreed
// numbers.
func (pl *planner) autoDegrees(seq uint64, outIdx []int64, nUnique int, same bool, es int) ([]int, error) {
	m := pl.cx.Nodes
	if m == 1 {
		return nil, nil
	}
	var maxIdx int64 = -1
	for _, x := range outIdx {
		maxIdx = max(maxIdx, x)
	}
	all, err := coll.AllgatherSmall(pl.cx, seq, []uint64{uint64(nUnique), uint64(maxIdx + 1), uint64(keyset.BoolInt(same))})
	if err != nil {
		return nil, err
	}
	var total, n uint64
	for r := 0; r < m; r++ {
		total += all[3*r]
		n = max(n, all[3*r+1])
		same = same && all[3*r+2] == 1
	}
	if n == 0 || total == 0 {
		return []int{m}, nil
	}
	density := min(float64(total)/float64(m)/float64(n), 1)
	// Plans are memoised by feature count and density to two significant digits: the planner
	// costs milliseconds, and repeated configs of similar data must not pay it every time.
	key := planKey{n: n, density: math.Float64bits(roundSig(density, 2)), same: same, es: es}
	if ds, ok := pl.cache[key]; ok {
		return ds, nil
	}
	ds, err := pl.planFor(int64(n), density, m, same, es)
	if err != nil {
		ds = []int{m} // the planner refuses only degenerate inputs; direct always works
	}
	if pl.cache == nil || len(pl.cache) > 256 {
		pl.cache = map[planKey][]int{}
	}
	pl.cache[key] = ds
	return ds, nil
}

type planKey struct {
	n       uint64
	density uint64
	same    bool
	es      int
}

// roundSig rounds x > 0 to d significant digits.
func roundSig(x float64, d int) float64 {
	if x <= 0 {
		return x
	}
	p := math.Pow(10, float64(d)-math.Ceil(math.Log10(x)))
	return math.Round(x*p) / p
}

// planFor is degrees=auto's choice: by predicted time on the measured links (with the rates
// agreed with them), unless min_packet is given or nothing was measured, in which case
// Proposition 4.1's rule keeps messages above min_packet. es is the bytes per value of the
// reduces to come; same tells that every rank's in set is its out set.
func (pl *planner) planFor(n int64, density float64, m int, same bool, es int) ([]int, error) {
	if l := pl.links(); l != nil && pl.opts.MinPacket <= 0 {
		link, cl := planning.Pricing(l)
		ds, _, err := planning.PlanDegreesByCost(n, density, m, planning.DefaultAlpha, link, cl, l.Rates,
			planning.Workload{ValueBytes: es, InEqualsOut: same, IndexRatio: 1})
		return ds, err
	}
	ds, _, err := planning.PlanDegrees(n, density, m, planning.DefaultAlpha, pl.minPacket(), 8)
	return ds, err
}
