package main

import (
	"fmt"
	"kylix/core/kx"
	"kylix/core/planning"
	"kylix/core/stats"
	"kylix/netio/memnet"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"kylix/core"
)

// The simulator behind `kylix simulate`: the real core (core.NewComm, Config, Reduce)
// over the in-memory transport, one goroutine per virtual rank, on synthetic Poisson–power-law
// data (paper eq. 3), with the per-layer figures read back from the comm statistics.

// layerModel is the prediction for one layer (Proposition 4.1) and the bottom. Layer i's
// ElemsPerNode is D_i·n/K_i, the distinct keys a node holds going INTO layer i (K_i = d_1…d_{i-1});
// it sends (d_i−1)/d_i of them to the other members of its group, ElemsPerNode/d_i to each, so
// the expected message is MessageBytes = ElemsPerNode·bytesPerValue/d_i.
type layerModel struct {
	Layers       []planning.LayerPrediction
	BottomDens   float64 // density below the last layer
	BottomElems  float64 // D_l·n/K_l: keys per node below the last layer (the fully reduced values)
	BytesPerElem int
}

// predictLayers evaluates Proposition 4.1 for the given degrees (core.PredictLayers), as
// core.PlanDegrees does for the degrees it picks (layer 1 uses the density itself, deeper
// layers f(K_i·λ0)).
func predictLayers(n int64, density, alpha float64, degrees []int, bpv int) (layerModel, error) {
	layers, dens, elems, err := planning.PredictLayers(n, density, alpha, degrees, bpv)
	if err != nil {
		return layerModel{}, err
	}
	return layerModel{Layers: layers, BottomDens: dens, BottomElems: elems, BytesPerElem: bpv}, nil
}

// simConfig describes one simulation.
type simConfig struct {
	N       int64
	Density float64
	Alpha   float64
	Ranks   int
	Degrees []int
	Width   int // f32 values per index in the reduce
	Seed    uint64
	Timeout time.Duration
}

// simLayer is what the simulation measured at one layer, over all ranks.
type simLayer struct {
	Degree        int
	OutKeys       float64 // mean distinct out keys per node going into the layer
	InKeys        float64
	OutKeysSent   float64 // mean per node
	DownBytes     uint64  // reduce values sent down, all ranks
	DownMsgs      uint64
	UpBytes       uint64
	ConfigBytes   uint64 // config messages (header + out and in keys), all ranks
	ConfigMsgs    uint64
	VolumeOutKeys uint64 // Σ over nodes of out keys going into the layer (Fig. 5, own packets included)
}

// DownMsgBytes is the mean reduce message going down.
func (l simLayer) DownMsgBytes() float64 {
	return float64(l.DownBytes) / math.Max(1, float64(l.DownMsgs))
}

// ConfigMsgBytes is the mean config message.
func (l simLayer) ConfigMsgBytes() float64 {
	return float64(l.ConfigBytes) / math.Max(1, float64(l.ConfigMsgs))
}

type simResult struct {
	Layers          []simLayer
	BottomOut       float64 // mean keys per node below the last layer
	BottomIn        float64
	BottomVolume    uint64
	Density         float64 // measured mean density of the out sets
	GenTime         time.Duration
	ConfigS         float64 // mean over ranks of the config time
	ReduceS         float64 // mean over ranks of the reduce time (down + up)
	Wall            time.Duration
	HeapMB          float64
	TotalOutKeysTop int64
}

// permutation is a bijection of [0, n): a bijective mix of the k-bit integers (k bits enough
// for n), walked until it lands below n. The popular features get scattered ids, as real
// feature ids are not sorted by frequency.
type permutation struct {
	n     uint64
	mask  uint64
	shift uint
}

func newPermutation(n int64) permutation {
	k := uint(bits.Len64(uint64(max(n-1, 1))))
	return permutation{n: uint64(n), mask: 1<<k - 1, shift: (k + 1) / 2}
}

func (p permutation) step(x uint64) uint64 {
	// Each operation is a bijection of the k-bit integers: xor with a right shift, and
	// multiplication by an odd constant modulo 2^k.
	x ^= x >> p.shift
	x = x * 0x9E3779B97F4A7C15 & p.mask
	x ^= x >> p.shift
	x = x * 0xBF58476D1CE4E5B9 & p.mask
	x ^= x >> p.shift
	return x
}

func (p permutation) at(x uint64) uint64 {
	y := p.step(x)
	for y >= p.n {
		y = p.step(y)
	}
	return y
}

// powerLawSample draws one rank's feature set: feature r (1..n) is present with probability
// p(r) = 1−exp(−λ r^−α) (the Poisson count of eq. 3 is at least 1), independently. The head is
// tested feature by feature; the tail goes by blocks [a, 2a) in which candidates are drawn with
// the block's largest probability p(a) (geometric skips) and kept with probability p(r)/p(a), so
// the cost is proportional to the set, not to n. Ids are perm(r−1).
func powerLawSample(n int64, lambda, alpha float64, rng *rand.Rand, perm permutation) []int64 {
	p := func(r int64) float64 { return -math.Expm1(-lambda * math.Pow(float64(r), -alpha)) }
	set := make([]int64, 0, 64)
	r := int64(1)
	for ; r <= n && p(r) >= 0.25; r++ {
		if rng.Float64() < p(r) {
			set = append(set, int64(perm.at(uint64(r-1))))
		}
	}
	for a := r; a <= n; {
		b := min(2*a, n+1) // block [a, b)
		pmax := p(a)
		if pmax <= 0 {
			break
		}
		lq := math.Log1p(-pmax)
		x := float64(a - 1)
		for {
			x += 1 + math.Floor(math.Log1p(-rng.Float64())/lq) // next candidate
			if x >= float64(b) {
				break
			}
			c := int64(x)
			if rng.Float64()*pmax < p(c) {
				set = append(set, int64(perm.at(uint64(c-1))))
			}
		}
		a = b
	}
	return set
}

// simulate runs config and one reduce of f32 values on cfg.Ranks virtual ranks and gathers the
// per-layer figures from every rank's statistics.
func simulate(cfg simConfig) (simResult, error) {
	m := cfg.Ranks
	lambda, err := planning.SolveLambda(cfg.N, cfg.Density, cfg.Alpha)
	if err != nil {
		return simResult{}, err
	}
	perm := newPermutation(cfg.N)
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ts := memnet.NewJob(m, timeout)
	degrees := kx.FormatDegrees(cfg.Degrees)
	if m == 1 {
		degrees = "direct"
	}
	stats := make([]stats.Stats, m)
	errs := make([]error, m)
	var genNS, topKeys int64
	var mu sync.Mutex
	// Generating the data is the only part that does not wait on peers: a semaphore keeps it
	// from running 1024 goroutines' worth of allocation at once.
	gen := make(chan struct{}, runtime.GOMAXPROCS(0))
	start := time.Now()
	var wg sync.WaitGroup
	for r := 0; r < m; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			opts := kx.Options{Rank: r, Size: m, Degrees: degrees, Replication: 1,
				MinPacket: kx.DefaultMinPacket, Timeout: timeout, Compress: "off"}
			c, err := core.NewComm(ts[r], opts)
			if err != nil {
				errs[r] = err
				return
			}
			defer c.Close()
			gen <- struct{}{}
			t0 := time.Now()
			out := powerLawSample(cfg.N, lambda, cfg.Alpha, rand.New(rand.NewPCG(cfg.Seed, uint64(2*r))), perm)
			in := powerLawSample(cfg.N, lambda, cfg.Alpha, rand.New(rand.NewPCG(cfg.Seed, uint64(2*r+1))), perm)
			vals := make([]byte, len(out)*cfg.Width*4)
			res := make([]byte, len(in)*cfg.Width*4)
			d := time.Since(t0)
			<-gen
			mu.Lock()
			genNS += int64(d)
			topKeys += int64(len(out))
			mu.Unlock()
			p, err := c.Config(out, in)
			if err != nil {
				errs[r] = err
				return
			}
			out, in = nil, nil
			if err := p.Reduce(vals, res, kx.F32, kx.Sum, cfg.Width); err != nil {
				errs[r] = err
				return
			}
			stats[r] = c.Stats()
			p.Free()
		}(r)
	}
	wg.Wait()
	wall := time.Since(start)
	for r, err := range errs {
		if err != nil {
			return simResult{}, fmt.Errorf("rank %d: %w", r, err)
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res := simResult{Wall: wall, GenTime: time.Duration(genNS), HeapMB: float64(ms.HeapSys) / (1 << 20),
		TotalOutKeysTop: topKeys, Density: float64(topKeys) / float64(m) / float64(cfg.N)}
	res.Layers = make([]simLayer, len(cfg.Degrees))
	if m == 1 {
		res.Layers = nil
	}
	fm := float64(m)
	for _, st := range stats {
		if len(st.Plans) == 0 {
			return simResult{}, fmt.Errorf("rank %d: no plan in the statistics", st.Rank)
		}
		pl := st.Plans[0]
		for i := range res.Layers {
			if i >= len(pl.Layers) {
				return simResult{}, fmt.Errorf("rank %d: %d layers in the statistics, want %d", st.Rank, len(pl.Layers), len(res.Layers))
			}
			l, sl := pl.Layers[i], &res.Layers[i]
			sl.Degree = l.Degree
			sl.OutKeys += float64(l.OutKeysAbove) / fm
			sl.InKeys += float64(l.InKeysAbove) / fm
			sl.OutKeysSent += float64(l.OutKeysSent) / fm
			sl.DownBytes += l.ReduceDown.BytesSent
			sl.DownMsgs += l.ReduceDown.MsgsSent
			sl.UpBytes += l.ReduceUp.BytesSent
			sl.ConfigBytes += l.Config.BytesSent
			sl.ConfigMsgs += l.Config.MsgsSent
			sl.VolumeOutKeys += uint64(l.OutKeysAbove)
		}
		res.BottomOut += float64(pl.BottomOut) / fm
		res.BottomIn += float64(pl.BottomIn) / fm
		res.BottomVolume += uint64(pl.BottomOut)
		res.ConfigS += pl.Seconds.Config / fm
		res.ReduceS += (pl.Seconds.ReduceDown + pl.Seconds.ReduceUp) / fm
	}
	return res, nil
}
