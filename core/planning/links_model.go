package planning

import (
	"math"
)

// peakFraction of the link's throughput is what a message of min_packet bytes reaches.
const peakFraction = 0.8

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
	ProbeBytes  int64       `json:"probe_bytes"`     // probe bytes this rank sent and received
	Peers       []LinkPeer  `json:"peers,omitempty"` // this rank's own measured links
	Source      string      `json:"source,omitempty"`
	// Rates are the compute rates every rank plans with (degrees=auto): each rank's quick
	// measurement, the median over ranks.
	Rates ComputeRates `json:"compute_rates"`
	// RanksPerHost is the job's placement as the cost model takes it (links_hosts.go), with the
	// links within a host (Local) and between hosts (Remote) fitted apart when both kinds were
	// measured.
	RanksPerHost int    `json:"ranks_per_host"`
	Local        *Links `json:"local,omitempty"`
	Remote       *Links `json:"remote,omitempty"`
	// RanksPerCPU is the most ranks per usable CPU on any host (links_oversub.go): above 1 the
	// links were fitted from each size's fastest round trip and the planner slows compute by it.
	RanksPerCPU float64     `json:"ranks_per_cpu,omitempty"`
	peerIdx     map[int]int // rank -> index in Peers
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

// Finish fits the model to the points, derives min_packet and indexes the peers.
func (l *Links) Finish() {
	l.OverheadS, l.BytesPerSec = fitLink(l.LatencyS, l.Points)
	l.MinPacket = max(1, int64(math.Ceil(peakFraction/(1-peakFraction)*l.OverheadS*l.BytesPerSec)))
	l.peerIdx = map[int]int{}
	for i := range l.Peers {
		p := &l.Peers[i]
		p.OverheadS, p.BytesPerSec = fitLink(l.LatencyS, p.Points)
		l.peerIdx[p.Rank] = i
	}
}

// LinksFrom turns the gathered round trips into the agreed model: per size stat (Median where
// ranks fit their CPUs) over all (rank, shift) links. Every rank computes it from the same
// numbers in the same order. Each rank's words are stride long, its nShifts round trips first.
func LinksFrom(sizes []int, agreed [][]uint64, nShifts, stride, m int, stat RoundStat) *Links {
	med := make([]float64, len(sizes))
	for j, all := range agreed {
		med[j] = statOf(stat, rounds(all, nShifts, stride, m))
	}
	return &Links{LatencyS: med[0] / 2, Points: CurvePoints(sizes, med), Measured: m * nShifts}
}

// MedianRound is the median, in seconds, of one size's round trips gathered from m ranks (the
// first nShifts of each rank's stride words).
func MedianRound(all []uint64, nShifts, stride, m int) float64 {
	return statOf(Median, rounds(all, nShifts, stride, m))
}

// rounds are one size's round trips, in seconds, gathered from m ranks (the first nShifts of
// each rank's stride words).
func rounds(all []uint64, nShifts, stride, m int) []float64 {
	var v []float64
	for r := 0; r < m; r++ {
		for h := 0; h < nShifts; h++ {
			v = append(v, float64(all[r*stride+h])/1e9)
		}
	}
	return v
}

// CurvePoints turns round trips (sizes[0] the tiny probe) into one-way points: the round trip
// less the acknowledgement's latency (half the tiny round trip), never below the latency.
func CurvePoints(sizes []int, rtt []float64) []LinkPoint {
	lat := rtt[0] / 2
	var pts []LinkPoint
	for j := 1; j < len(sizes); j++ {
		t := max(rtt[j]-lat, lat)
		pts = append(pts, LinkPoint{Bytes: int64(sizes[j]), Seconds: t, BytesPerSec: float64(sizes[j]) / t})
	}
	return pts
}
