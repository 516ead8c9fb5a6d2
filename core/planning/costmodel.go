package planning

import (
	"math"
)

// A cost model for sizing clusters: the time of config and reduce, layer by layer, for given
// degrees, from three inputs:
//   - the data, through Proposition 4.1 ("Kylix: A Sparse Allreduce for Commodity Clusters"
//     §IV): the distinct keys a node holds going into each layer (PredictLayers);
//   - the link: a message of s bytes takes OverheadS + s/BytesPerSec one way (Links, measured
//     by kylix bench --links or given, such as the paper's EC2 curve of Fig. 2);
//   - the machine: the data path's per-element costs (ComputeRates, measured on this machine).
//
// Ranks sit in blocks of RanksPerHost on hosts whose links are the Links; ranks of one host
// reach each other through Local (loopback). A layer's network time is what its busiest host
// link carries (every byte that leaves a host crosses its link, shared by the host's ranks)
// plus the per-message overhead of the rank that sends the most messages; its compute time is
// the merge (config), the combine (reduce going down) and the gather (going up) over the keys
// the node handles, slowed by Slowdown when ranks outnumber cores. Network and compute are added:
// the data path overlaps them only in part. Every node is alike, as Prop. 4.1's expectation
// makes them.

// ComputeRates are the data path's costs per element on one core, in nanoseconds.
type ComputeRates struct {
	SortNs    float64 `json:"sort_ns"`    // hash, sort and unique one index (config's top)
	MergeNs   float64 `json:"merge_ns"`   // one key through one level of the tree merge
	CombineNs float64 `json:"combine_ns"` // one value scattered into the layer below (reduce down)
	GatherNs  float64 `json:"gather_ns"`  // one value gathered (reduce up, top and bottom)
	EncodeNs  float64 `json:"encode_ns"`  // one key through the index codec, each way
	DecodeNs  float64 `json:"decode_ns"`
}

// Cluster is how ranks sit on hosts.
type Cluster struct {
	RanksPerHost int     // ranks on one host, placed in blocks (rank r on host r/RanksPerHost)
	Local        *Links  // links between ranks of one host; nil: as the host link
	Slowdown     float64 // compute time factor (ranks per host over cores, when above 1)
}

// Workload is what moves: bytes per value in a reduce, whether in = out (config sends the keys
// once), and the index compression ratio config messages travel with (1: none): on every
// message when CompressLocal (compress=lz4), else only between hosts (compress=auto, which
// leaves messages within a host alone).
type Workload struct {
	ValueBytes    int
	InEqualsOut   bool
	IndexRatio    float64
	CompressLocal bool
}

// LayerTime is the model's time for one layer, network and compute apart, in seconds.
type LayerTime struct {
	Degree           int
	MsgKeys          float64 // keys in each message of the layer
	ConfigNet        float64
	ConfigCPU        float64
	ReduceDownNet    float64
	ReduceDownCPU    float64
	ReduceUpNet      float64
	ReduceUpCPU      float64
	RemoteMsgsPerRnk int // messages a rank sends off its host
}

// TimePrediction is the model's config and reduce time for one plan.
type TimePrediction struct {
	Degrees []int
	Layers  []LayerTime
	SortS   float64 // config's top: hash, sort, unique
	TopS    float64 // reduce's top and bottom gathers
	ConfigS float64
	ReduceS float64
}

// PredictLayers evaluates Proposition 4.1 for degrees: layer i's ElemsPerNode is D_i·n/K_i, the
// distinct keys a node holds going into it (K_i = d_1…d_{i-1}), and MessageBytes its message to
// each member at bpv bytes per key; the bottom's density and keys per node (the fully reduced
// values) are returned apart.
func PredictLayers(n int64, density, alpha float64, degrees []int, bpv int) (layers []LayerPrediction, bottomDensity, bottomElems float64, err error) {
	if err := checkPowerLawArgs(n, density, alpha); err != nil {
		return nil, 0, 0, err
	}
	lambda0, err := SolveLambda(n, density, alpha)
	if err != nil {
		return nil, 0, 0, err
	}
	fn, k, dens := float64(n), 1.0, density
	for i, d := range degrees {
		if i > 0 {
			dens = Density(n, k*lambda0, alpha)
		}
		e := dens * fn / k
		layers = append(layers, LayerPrediction{Degree: d, Density: dens, ElemsPerNode: e, MessageBytes: e * float64(bpv) / float64(d)})
		k *= float64(d)
	}
	if len(degrees) > 0 {
		dens = Density(n, k*lambda0, alpha)
	}
	return layers, dens, dens * fn / k, nil
}

// PredictTime is the model's time for config and one reduce with degrees (product m) on the
// layers of PredictLayers (their ElemsPerNode; the message sizes follow from w).
func PredictTime(degrees []int, layers []LayerPrediction, bottomElems float64, link *Links, cl Cluster, r ComputeRates, w Workload) TimePrediction {
	m := 1
	for _, d := range degrees {
		m *= d
	}
	rph := min(max(cl.RanksPerHost, 1), m)
	local := cl.Local
	if local == nil {
		local = link
	}
	slow := max(cl.Slowdown, 1)
	ns := func(x float64) float64 { return x * 1e-9 * slow }
	keyBytes := 16.0
	if w.InEqualsOut {
		keyBytes = 8
	}
	ratio := max(w.IndexRatio, 1)
	vb := float64(max(w.ValueBytes, 1))
	tp := TimePrediction{Degrees: append([]int(nil), degrees...)}
	if len(layers) > 0 {
		e0 := layers[0].ElemsPerNode
		tp.SortS = ns(e0 * r.SortNs)
		tp.TopS = ns((e0 + bottomElems) * r.GatherNs)
	}
	stride := 1
	for i, d := range degrees {
		lp := layers[i]
		keys := lp.ElemsPerNode / float64(d) // per message
		below := lp.ElemsPerNode             // merged below: at most what came in (an upper bound)
		if i+1 < len(layers) {
			below = layers[i+1].ElemsPerNode
		} else {
			below = bottomElems
		}
		remote, localMsgs := remoteMembers(d, stride, rph)
		lt := LayerTime{Degree: d, MsgKeys: keys, RemoteMsgsPerRnk: remote}
		net := func(remoteBytes, localBytes float64) float64 {
			// The host link carries every remote message of the host's ranks; overheads are
			// paid per message by each rank, in parallel across ranks.
			hostBytes := float64(remote*rph) * remoteBytes
			t := float64(remote)*link.OverheadS + hostBytes/link.BytesPerSec
			if localMsgs > 0 {
				t += float64(localMsgs) * local.Time(localBytes)
			}
			return t
		}
		cfgLocal := keys * keyBytes
		packed := remote
		if w.CompressLocal {
			cfgLocal /= ratio
			packed += localMsgs
		}
		// Layer 0's messages carry rows; compressed, the rows are in set order and the message
		// is their set (and a repeat bitmap, negligible): the same bytes as a list.
		lt.ConfigNet = net(keys*keyBytes/ratio, cfgLocal)
		lt.ConfigCPU = ns(lp.ElemsPerNode * math.Ceil(math.Log2(float64(d))) * r.MergeNs)
		if ratio > 1 {
			lt.ConfigCPU += ns(keys * float64(packed) * (r.EncodeNs + r.DecodeNs) * keyBytes / 8)
		}
		lt.ReduceDownNet = net(keys*vb, keys*vb)
		lt.ReduceDownCPU = ns(lp.ElemsPerNode * r.CombineNs)
		lt.ReduceUpNet = net(keys*vb, keys*vb)
		lt.ReduceUpCPU = ns((lp.ElemsPerNode + below) * r.GatherNs)
		tp.Layers = append(tp.Layers, lt)
		tp.ConfigS += lt.ConfigNet + lt.ConfigCPU
		tp.ReduceS += lt.ReduceDownNet + lt.ReduceDownCPU + lt.ReduceUpNet + lt.ReduceUpCPU
		stride *= d
	}
	tp.ConfigS += tp.SortS
	tp.ReduceS += tp.TopS
	return tp
}

// remoteMembers counts, for a rank of a layer of degree d whose members are stride apart, the
// members on other hosts and on its own (blocks of rph ranks per host). All ranks of a layer
// see the same counts when hosts hold whole groups or single members, as block placement of
// powers of two gives; otherwise rank 0's counts stand for all.
func remoteMembers(d, stride, rph int) (remote, local int) {
	for g := 1; g < d; g++ {
		if (g*stride)/rph == 0 {
			local++
		} else {
			remote++
		}
	}
	return remote, local
}
