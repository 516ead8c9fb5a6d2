// Package probe measures a comm's links over its context (core/coll): latency and one-way time
// against message size (the paper's Fig. 2 curve, "Kylix: A Sparse Allreduce for Commodity
// Clusters" §II), measured on the job's own connections by the first config that needs it
// (degrees=auto without min_packet, or compress=auto), or by Comm.MeasureLinks.
//
// Every rank runs the same rounds at once: it sends a probe of s bytes to rank+k, receives the
// probe of rank-k, acknowledges it, and times its own probe until the acknowledgement returns. All
// links are loaded together, as a collective loads them. k is 1 and, beyond 2 ranks, m/2, which
// crosses the middle of the rank order (another host, when ranks are placed in blocks). Sizes
// double from probeMinBytes; after each size the ranks exchange their times, so every rank sees
// the same figures and takes the same decision to go on: the sweep ends at probeMaxBytes, at a
// size whose median round took longer than probeStepBudget (a slow link: the sizes so far are all
// bytes), or when the rounds so far have used probeBudget and two sizes took probeByteBound times
// the tiny probe's round trip, so that the rate can be fitted (on loopback that means sizes of
// half a megabyte, even when a busy machine runs late). The agreed curve takes, at each size, the
// median over all measured links of their best of probeReps rounds (the best: a 2-core machine
// shared with other work preempts ranks; the median: one slow link does not set the job's
// figures). On a host whose ranks outnumber its usable CPUs the figure is instead the fastest
// round of each size over all measured links (planning.Floor, links_oversub.go says why): there
// the median measures how long a rank waits for a core.
//
// min_packet (unless the option gives one) is the smallest size whose throughput reaches
// peakFraction of the link's, on the model fitted to the points: below it, per-message overhead
// costs more than a fifth of the link (the paper's "minimum efficient packet size").
package probe

import (
	"kylix/core/coll"
	"kylix/core/kx"
	"kylix/core/planning"
	"kylix/netio/cpus"
	"math"
	"slices"
	"time"
)

const (
	probeTinyBytes  = 64
	probeMinBytes   = 16 << 10
	probeMaxBytes   = 8 << 20
	probeByteBound  = 4 // a round trip this many times the tiny one's is mostly bytes
	probeReps       = 3
	probeBudget     = 40 * time.Millisecond
	probeStepBudget = 8 * time.Millisecond
)

// Measure runs the probe rounds inside collective seq and returns the agreed model.
func Measure(cx *coll.Ctx, seq uint64) (*planning.Links, error) {
	m, me := cx.Nodes, cx.Node
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
	var moved int64 // probe bytes this rank sent and received
	round := func(s, to, from int) (time.Duration, error) {
		best := time.Duration(math.MaxInt64)
		for range probeReps {
			d, err := probeRound(cx, seq, uint8(layer), to, from, buf[:s])
			layer += 2
			moved += 2 * int64(s)
			if err != nil {
				return 0, err
			}
			best = min(best, d)
		}
		return best, nil
	}
	hostOf, ranksPerCPU, err := agreeHosts(cx, seq)
	if err != nil {
		return nil, err
	}
	tos, froms, localCol := probePartners(me, m, shifts, hostOf)
	stride := len(tos) + 1 // each rank's words: a round trip per partner, then its elapsed time
	// sizes[0] is the tiny probe that gives the latency; then doubling sizes.
	var sizes []int
	var agreed [][]uint64 // per size: every rank's words, in rank order
	own := make([][]time.Duration, len(shifts))
	var tiny time.Duration // the tiny probe's typical round trip
	byteBound := 0         // sizes whose round trip is mostly bytes (probeByteBound x tiny's)
	for s := probeTinyBytes; ; {
		words := make([]uint64, stride)
		for h := range tos {
			d, err := round(s, tos[h], froms[h])
			if err != nil {
				return nil, err
			}
			words[h] = uint64(d)
			if h < len(shifts) {
				own[h] = append(own[h], d)
			}
		}
		words[stride-1] = uint64(time.Since(start))
		all, err := coll.AllgatherSmall(cx, seq, words)
		if err != nil {
			return nil, err
		}
		sizes, agreed = append(sizes, s), append(agreed, all)
		var elapsed uint64
		for r := 0; r < m; r++ {
			elapsed = max(elapsed, all[r*stride+stride-1])
		}
		// The typical (median) round decides, not the slowest: on shared cores one rank's
		// round can take milliseconds of scheduling, which says nothing of the link. The next
		// size costs about twice this one's round, probeReps times per partner.
		typical := time.Duration(1e9 * planning.MedianRound(all, len(shifts), stride, m))
		if len(sizes) == 1 {
			tiny = typical
		} else if typical >= probeByteBound*tiny {
			byteBound++
		}
		next := time.Duration(elapsed) + 2*typical*time.Duration(probeReps*len(tos))
		if s >= probeMaxBytes || len(sizes) > 1 && typical > probeStepBudget || byteBound >= 2 && next > probeBudget {
			break
		}
		if s == probeTinyBytes {
			s = probeMinBytes
		} else {
			s *= 2
		}
	}
	stat := planning.StatFor(ranksPerCPU)
	l := planning.LinksFrom(sizes, agreed, len(shifts), stride, m, stat)
	l.RanksPerCPU = ranksPerCPU
	if l.RanksPerHost = planning.HostBlocks(hostOf); l.RanksPerHost > 1 {
		l.Local, l.Remote = planning.HostLinks(sizes, agreed, shifts, stride, localCol, hostOf, stat)
	}
	l.Peers = ownLinks(me, m, shifts, sizes, own)
	rates, err := agreeRates(cx, seq, planning.QuickComputeRates())
	if err != nil {
		return nil, err
	}
	l.Rates = rates
	l.ProbeS = time.Since(start).Seconds()
	l.ProbeBytes = moved
	l.Source = "measured"
	l.Finish()
	return l, nil
}

// probePartners are whom node me probes (tos) and answers (froms): the job-wide shifts, then,
// where the nodes sit on several hosts in blocks, the next node of its own host, in rounds of
// their own (planning.HostLinks says why) at column local (-1 without).
func probePartners(me, m int, shifts, hostOf []int) (tos, froms []int, local int) {
	for _, k := range shifts {
		tos, froms = append(tos, (me+k)%m), append(froms, (me-k+m)%m)
	}
	local = -1
	if rph := planning.HostBlocks(hostOf); rph > 1 && rph < m {
		lead := me / rph * rph
		local = len(tos)
		tos, froms = append(tos, lead+(me-lead+1)%rph), append(froms, lead+(me-lead-1+rph)%rph)
	}
	return tos, froms, local
}

// ownLinks are the links this node measured itself (own[h]: its round trips to me+shifts[h],
// per size), each peer once.
func ownLinks(me, m int, shifts, sizes []int, own [][]time.Duration) []planning.LinkPeer {
	var peers []planning.LinkPeer
	for h, k := range shifts {
		peer := (me + k) % m
		if slices.ContainsFunc(peers, func(p planning.LinkPeer) bool { return p.Rank == peer }) {
			continue
		}
		rtt := make([]float64, len(sizes))
		for j := range sizes {
			rtt[j] = own[h][j].Seconds()
		}
		peers = append(peers, planning.LinkPeer{Rank: peer, Points: planning.CurvePoints(sizes, rtt)})
	}
	return peers
}

// agreeHosts gives every rank each node's host, named by the lowest node on it (as this
// transport tells same-host peers: View.SameHost), so that all split the links alike, and the
// most ranks per usable CPU on any host (planning.RanksPerCPU), so that all fit them alike.
func agreeHosts(cx *coll.Ctx, seq uint64) ([]int, float64, error) {
	m, me := cx.Nodes, cx.Node
	lead := me
	for r := 0; r < me; r++ {
		if cx.SameHost(r) {
			lead = r
			break
		}
	}
	all, err := coll.AllgatherSmall(cx, seq, []uint64{uint64(lead), uint64(cpus.Usable())})
	if err != nil {
		return nil, 0, err
	}
	hostOf, usable := make([]int, m), make([]int, m)
	for r := range hostOf {
		hostOf[r], usable[r] = int(all[2*r]), int(all[2*r+1])
	}
	return hostOf, planning.RanksPerCPU(hostOf, usable), nil
}

// agreeRates gives every rank the median over ranks of each compute rate, so that all plan
// alike.
func agreeRates(cx *coll.Ctx, seq uint64, mine planning.ComputeRates) (planning.ComputeRates, error) {
	f := []*float64{&mine.SortNs, &mine.MergeNs, &mine.CombineNs, &mine.GatherNs, &mine.EncodeNs, &mine.DecodeNs}
	words := make([]uint64, len(f))
	for i, p := range f {
		words[i] = math.Float64bits(*p)
	}
	all, err := coll.AllgatherSmall(cx, seq, words)
	if err != nil {
		return planning.ComputeRates{}, err
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

// probeRound sends b to rank `to` and times it until to's acknowledgement is back, while
// receiving and acknowledging the probe of rank `from`. Probes use layer, acks layer+1: with
// two ranks to and from are the same peer.
func probeRound(cx *coll.Ctx, seq uint64, layer uint8, to, from int, b []byte) (time.Duration, error) {
	probe := kx.Tag{Seq: seq, Layer: layer, Phase: kx.PhaseLinks, FP: cx.FP}
	ack := kx.Tag{Seq: seq, Layer: layer + 1, Phase: kx.PhaseLinks}
	start := time.Now()
	// The probe goes out on a goroutine of its own whatever its size (coll.Sends writes small
	// messages inline): on a slow link the write blocks until the socket buffer drains, and
	// this rank must meanwhile receive and acknowledge its own incoming probe, or the peer
	// that sent it would time the wait for this rank's link as its own.
	sent := make(chan error, 1)
	go func() { sent <- cx.SendAside(to, probe, b) }()
	p, err := cx.Recv(from, probe)
	if err == nil {
		cx.Release(p)
		ack.FP = cx.FP
		err = cx.Send(from, ack)
	}
	var d time.Duration
	if err == nil {
		var a []byte
		if a, err = cx.Recv(to, ack); err == nil {
			d = time.Since(start)
			cx.Release(a)
		}
	}
	if werr := <-sent; err == nil {
		err = werr
	}
	return d, err
}
