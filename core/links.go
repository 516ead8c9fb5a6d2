package core

import (
	"kylix/core/kx"
	"math"
	"slices"
	"time"
)

// Link measurement: latency and one-way time against message size (the paper's Fig. 2 curve,
// "Kylix: A Sparse Allreduce for Commodity Clusters" §II), measured on the job's own connections
// by the first config that needs it (degrees=auto without min_packet, or compress=auto), or by
// MeasureLinks.
//
// Every rank runs the same rounds at once: it sends a probe of s bytes to rank+k, receives the
// probe of rank-k, acknowledges it, and times its own probe until the acknowledgement returns.
// All links are loaded together, as a collective loads them. k is 1 and, beyond 2 ranks, m/2,
// which crosses the middle of the rank order (another host, when ranks are placed in blocks).
// Sizes double from probeMinBytes; after each size the ranks exchange their times, so every
// rank sees the same figures and takes the same decision to go on: the sweep ends at
// probeMaxBytes, at a size whose median round took longer than probeStepBudget (a slow link:
// the sizes so far are all bytes), or when the rounds so far have used probeBudget and two
// sizes took probeByteBound times the tiny probe's round trip, so that the rate can be fitted
// (on loopback that means sizes of half a megabyte, even when a busy machine runs late). The agreed curve takes, at each size, the median over
// all measured links of their best of probeReps rounds (the best: a 2-core machine shared with
// other work preempts ranks; the median: one slow link does not set the job's figures).
//
// min_packet (unless the option gives one) is the smallest size whose throughput reaches
// peakFraction of the link's, on the model fitted to the points: below it, per-message
// overhead costs more than a fifth of the link (the paper's "minimum efficient packet size").

const (
	probeTinyBytes  = 64
	probeMinBytes   = 16 << 10
	probeMaxBytes   = 8 << 20
	probeByteBound  = 4 // a round trip this many times the tiny one's is mostly bytes
	probeReps       = 3
	probeBudget     = 40 * time.Millisecond
	probeStepBudget = 8 * time.Millisecond
	peakFraction    = 0.8
)

// LinkPoint is one size of the link curve: the one-way time of a message of Bytes (round trip
// less the acknowledgement's latency) and the throughput it gives.
type LinkPoint struct {
	Bytes       int64   `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	BytesPerSec float64 `json:"bytes_per_s"`
}

// Links is the link model, the same on every rank of the job: the measured points and the
// textbook model fitted to them, a message of s bytes taking OverheadS + s/BytesPerSec one way.
// The fit, not the noisy points themselves, prices messages and gives min_packet: at
// s = 4·OverheadS·BytesPerSec a message reaches peakFraction (80%) of the link's throughput.
type Links struct {
	LatencyS    float64     `json:"latency_s"`       // one-way time of a tiny message
	OverheadS   float64     `json:"overhead_s"`      // fitted per-message cost
	BytesPerSec float64     `json:"bytes_per_s"`     // fitted throughput of large messages
	MinPacket   int64       `json:"min_packet"`      // smallest size reaching peakFraction of it
	Points      []LinkPoint `json:"points"`          // ascending sizes
	Measured    int         `json:"links_measured"`  // links per size (ranks x shifts)
	ProbeS      float64     `json:"probe_s"`         // how long the measurement took (this rank)
	Peers       []LinkPeer  `json:"peers,omitempty"` // this rank's own measured links
	Source      string      `json:"source,omitempty"`
	// Rates are the compute rates every rank plans with (degrees=auto): each rank's quick
	// measurement, the median over ranks.
	Rates   ComputeRates `json:"compute_rates"`
	peerIdx map[int]int  // rank -> index in Peers
}

// LinkPeer is one link this rank measured itself, fitted as Links is: for decisions about
// messages to that peer (compress=auto), which need no agreement.
type LinkPeer struct {
	Rank        int         `json:"rank"`
	OverheadS   float64     `json:"overhead_s"`
	BytesPerSec float64     `json:"bytes_per_s"`
	Points      []LinkPoint `json:"points"`
}

// Time is the model's one-way time of a message of b bytes.
func (l *Links) Time(b float64) float64 { return l.OverheadS + max(b, 0)/l.BytesPerSec }

// PeerBytesPerSec is the throughput of the link to rank: this rank's own measurement of it when
// it made one, else the job's.
func (l *Links) PeerBytesPerSec(rank int) float64 {
	if i, ok := l.peerIdx[rank]; ok {
		return l.Peers[i].BytesPerSec
	}
	return l.BytesPerSec
}

// fitLink fits t = L + s/B to the points by least squares, with L at least lat (the tiny
// message's time; below it the fit goes through (0, lat)). Plain least squares lets the large
// sizes, whose times are mostly bytes, set the rate: a small message's time says little about
// it (on a shaped link it may pass in the shaper's burst at memory speed). Points that give no
// positive rate fall back to the best measured throughput.
func fitLink(lat float64, pts []LinkPoint) (overhead, bytesPerSec float64) {
	var n, ss, sss, st, sst, best float64
	for _, p := range pts {
		x := float64(p.Bytes)
		n, ss, sss, st, sst = n+1, ss+x, sss+x*x, st+p.Seconds, sst+x*p.Seconds
		best = max(best, p.BytesPerSec)
	}
	if len(pts) == 0 {
		return lat, 0
	}
	det := n*sss - ss*ss
	l, inv := 0.0, 0.0
	if len(pts) >= 2 && det > 0 {
		l, inv = (st*sss-ss*sst)/det, (n*sst-ss*st)/det
	}
	if l < lat || inv <= 0 { // through (0, lat)
		l, inv = lat, (sst-lat*ss)/sss
	}
	if inv <= 0 {
		return l, best
	}
	return l, 1 / inv
}

// finish fits the model to the points, derives min_packet and indexes the peers.
func (l *Links) finish() {
	l.OverheadS, l.BytesPerSec = fitLink(l.LatencyS, l.Points)
	l.MinPacket = max(1, int64(math.Ceil(peakFraction/(1-peakFraction)*l.OverheadS*l.BytesPerSec)))
	l.peerIdx = map[int]int{}
	for i := range l.Peers {
		p := &l.Peers[i]
		p.OverheadS, p.BytesPerSec = fitLink(l.LatencyS, p.Points)
		l.peerIdx[p.Rank] = i
	}
}

// MeasureLinks measures the links now (a collective: every rank calls it) and keeps the result
// for planning (degrees=auto without min_packet) and compress=auto. A replicated comm cannot
// agree on measured figures (needLinks) and gets CodeArg.
func (c *Comm) MeasureLinks() (*Links, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if c.opts.Replication > 1 {
		return nil, c.Reject(kx.Errorf(kx.CodeArg, "replication: links are not measured with replication %d > 1 (replicas' timings race)", c.opts.Replication))
	}
	var l *Links
	err := c.collective(kx.Fingerprint{Kind: kx.KindLinks}, func(seq uint64) error {
		var err error
		l, err = c.measureLinks(seq)
		return err
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// needLinks reports whether this comm's options make its first config measure the links. The
// options (degrees, min_packet, compress) must be the same on every rank, as degrees must be.
//
// A replicated comm does not measure: its messages race, a rank takes whichever replica's copy
// arrives first, and replicas' timings differ, so ranks could see different figures, stop the
// sweep at different sizes and plan different degrees. Such a comm plans with min_packet (1 MiB
// unless given) and compress=auto leaves index lists alone.
func (c *Comm) needLinks() bool {
	return c.nodes() > 1 && c.opts.Replication <= 1 &&
		(c.opts.Compress == "auto" || c.degrees == nil && c.opts.MinPacket <= 0)
}

// linksForConfig measures the links in config seq when this is the comm's first config and the
// options need it.
func (c *Comm) linksForConfig(seq uint64) error {
	if c.net.tried || !c.needLinks() {
		return nil
	}
	c.net.tried = true
	_, err := c.measureLinks(seq)
	return err
}

// measureLinks runs the probe rounds inside collective seq and keeps the agreed model.
func (c *Comm) measureLinks(seq uint64) (*Links, error) {
	m, me := c.nodes(), c.node()
	if m == 1 {
		return nil, nil
	}
	start := time.Now()
	shifts := []int{1}
	if m > 2 && m/2 != 1 {
		shifts = append(shifts, m/2)
	}
	buf := make([]byte, probeMaxBytes)
	layer := 0
	round := func(s, k int) (time.Duration, error) {
		best := time.Duration(math.MaxInt64)
		for range probeReps {
			d, err := c.probeRound(seq, uint8(layer), (me+k)%m, (me-k+m)%m, buf[:s])
			layer += 2
			if err != nil {
				return 0, err
			}
			best = min(best, d)
		}
		return best, nil
	}
	// sizes[0] is the tiny probe that gives the latency; then doubling sizes.
	var sizes []int
	var agreed [][]uint64 // per size: every rank's best round trip per shift (ns), in rank order
	own := make([][]time.Duration, len(shifts))
	var tiny time.Duration // the tiny probe's typical round trip
	byteBound := 0         // sizes whose round trip is mostly bytes (probeByteBound x tiny's)
	for s := probeTinyBytes; ; {
		words := make([]uint64, len(shifts)+1)
		for h, k := range shifts {
			d, err := round(s, k)
			if err != nil {
				return nil, err
			}
			words[h] = uint64(d)
			own[h] = append(own[h], d)
		}
		words[len(shifts)] = uint64(time.Since(start))
		all, err := c.allgatherSmall(seq, words)
		if err != nil {
			return nil, err
		}
		sizes, agreed = append(sizes, s), append(agreed, all)
		var elapsed uint64
		for r := 0; r < m; r++ {
			elapsed = max(elapsed, all[r*len(words)+len(shifts)])
		}
		// The typical (median) round decides, not the slowest: on shared cores one rank's
		// round can take milliseconds of scheduling, which says nothing of the link. The next
		// size costs about twice this one's round, probeReps times per shift.
		typical := time.Duration(1e9 * medianRound(all, len(shifts), m))
		if len(sizes) == 1 {
			tiny = typical
		} else if typical >= probeByteBound*tiny {
			byteBound++
		}
		next := time.Duration(elapsed) + 2*typical*time.Duration(probeReps*len(shifts))
		if s >= probeMaxBytes || len(sizes) > 1 && typical > probeStepBudget || byteBound >= 2 && next > probeBudget {
			break
		}
		if s == probeTinyBytes {
			s = probeMinBytes
		} else {
			s *= 2
		}
	}
	l := linksFrom(sizes, agreed, len(shifts), m)
	for h, k := range shifts {
		peer := (me + k) % m
		if slices.ContainsFunc(l.Peers, func(p LinkPeer) bool { return p.Rank == peer }) {
			continue
		}
		rtt := make([]float64, len(sizes))
		for j := range sizes {
			rtt[j] = own[h][j].Seconds()
		}
		l.Peers = append(l.Peers, LinkPeer{Rank: peer, Points: curvePoints(sizes, rtt)})
	}
	rates, err := c.agreeRates(seq, quickComputeRates())
	if err != nil {
		return nil, err
	}
	l.Rates = rates
	l.ProbeS = time.Since(start).Seconds()
	l.Source = "measured"
	l.finish()
	c.setLinks(l)
	return l, nil
}

// agreeRates gives every rank the median over ranks of each compute rate, so that all plan
// alike.
func (c *Comm) agreeRates(seq uint64, mine ComputeRates) (ComputeRates, error) {
	f := []*float64{&mine.SortNs, &mine.MergeNs, &mine.CombineNs, &mine.GatherNs, &mine.EncodeNs, &mine.DecodeNs}
	words := make([]uint64, len(f))
	for i, p := range f {
		words[i] = math.Float64bits(*p)
	}
	all, err := c.allgatherSmall(seq, words)
	if err != nil {
		return ComputeRates{}, err
	}
	m := len(all) / len(f)
	for i, p := range f {
		v := make([]float64, m)
		for r := range v {
			v[r] = math.Float64frombits(all[r*len(f)+i])
		}
		slices.Sort(v)
		*p = (v[(m-1)/2] + v[m/2]) / 2
	}
	return mine, nil
}

// linksFrom turns the gathered round trips into the agreed model: per size the median over all
// (rank, shift) links. Every rank computes it from the same numbers in the same order.
func linksFrom(sizes []int, agreed [][]uint64, nShifts, m int) *Links {
	med := make([]float64, len(sizes))
	for j, all := range agreed {
		med[j] = medianRound(all, nShifts, m)
	}
	return &Links{LatencyS: med[0] / 2, Points: curvePoints(sizes, med), Measured: m * nShifts}
}

// medianRound is the median, in seconds, of one size's round trips gathered from m ranks
// (nShifts round trips and the elapsed time per rank).
func medianRound(all []uint64, nShifts, m int) float64 {
	var v []float64
	for r := 0; r < m; r++ {
		for h := 0; h < nShifts; h++ {
			v = append(v, float64(all[r*(nShifts+1)+h])/1e9)
		}
	}
	slices.Sort(v)
	return (v[(len(v)-1)/2] + v[len(v)/2]) / 2
}

// curvePoints turns round trips (sizes[0] the tiny probe) into one-way points: the round trip
// less the acknowledgement's latency (half the tiny round trip), never below the latency.
func curvePoints(sizes []int, rtt []float64) []LinkPoint {
	lat := rtt[0] / 2
	var pts []LinkPoint
	for j := 1; j < len(sizes); j++ {
		t := max(rtt[j]-lat, lat)
		pts = append(pts, LinkPoint{Bytes: int64(sizes[j]), Seconds: t, BytesPerSec: float64(sizes[j]) / t})
	}
	return pts
}

// probeRound sends b to rank `to` and times it until to's acknowledgement is back, while
// receiving and acknowledging the probe of rank `from`. Probes use layer, acks layer+1: with
// two ranks to and from are the same peer.
func (c *Comm) probeRound(seq uint64, layer uint8, to, from int, b []byte) (time.Duration, error) {
	probe := kx.Tag{Seq: seq, Layer: layer, Phase: kx.PhaseLinks, FP: c.fp}
	ack := kx.Tag{Seq: seq, Layer: layer + 1, Phase: kx.PhaseLinks}
	start := time.Now()
	// The probe goes out on a goroutine of its own whatever its size (sendGroup writes small
	// messages inline): on a slow link the write blocks until the socket buffer drains, and
	// this rank must meanwhile receive and acknowledge its own incoming probe, or the peer
	// that sent it would time the wait for this rank's link as its own.
	sent := make(chan error, 1)
	go func() { sent <- c.send(to, probe, b) }()
	p, err := c.recv(from, probe)
	if err == nil {
		c.release(p)
		ack.FP = c.fp
		err = c.send(from, ack)
	}
	var d time.Duration
	if err == nil {
		var a []byte
		if a, err = c.recv(to, ack); err == nil {
			d = time.Since(start)
			c.release(a)
		}
	}
	if werr := <-sent; err == nil {
		err = werr
	}
	return d, err
}

// setLinks keeps a measured model; plans made with the old min_packet are forgotten.
func (c *Comm) setLinks(l *Links) {
	c.net.mu.Lock()
	c.net.links = l
	c.net.mu.Unlock()
	c.planCache = nil
}

// Links returns the measured link model, or nil before it is measured. It is shared: do not
// change it.
func (c *Comm) Links() *Links {
	c.net.mu.Lock()
	defer c.net.mu.Unlock()
	return c.net.links
}

// minPacket is the min_packet that degrees=auto plans with: the option when given, else the
// measured one, else DefaultMinPacket.
func (c *Comm) minPacket() int64 {
	if c.opts.MinPacket > 0 {
		return c.opts.MinPacket
	}
	if l := c.Links(); l != nil && l.MinPacket > 0 {
		return l.MinPacket
	}
	return kx.DefaultMinPacket
}
