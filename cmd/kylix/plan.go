package main

import (
	"flag"
	"fmt"
	"io"
	"kylix/core/kx"
	"kylix/core/planning"
	"math"
	"os"
)

func init() {
	register(&command{
		Name:     "plan",
		Args:     "--features N --density D --ranks M [flags]",
		Purpose:  "print the degrees the planner picks for a data set and cluster, and the predicted times",
		Required: []string{"features", "density", "ranks"},
		Details: `Prints the degrees Proposition 4.1 picks (what degrees=auto picks with a given min_packet)
and, per layer, the predicted density, distinct keys per node going into the layer, message
bytes per neighbour and the layer's volume (all nodes, own share included: the paper's Fig. 5).
With --link it also prints config and reduce seconds of the planned degrees, direct and binary
side by side, degrees=auto's choice by cost, and the planned ones layer by layer, from the
link, the hosts' shape and this machine's compute rates (measured in 0.2 s).
`,
		Example: `kylix plan --features 6e7 --density 0.21 --ranks 64 --bytes-per-value 4 --min-packet 3733334 --link ec2
kylix plan --features 1e7 --density 0.03 --ranks 16 --link 100us,1gbit --ranks-per-host 4 --svg plan.svg`,
		Setup: func(fs *flag.FlagSet) func(io.Writer, []string) error {
			var a planArgs
			a.define(fs, false)
			return func(w io.Writer, _ []string) error { return a.run(w, false) }
		},
	})
}

// planArgs are the flags plan and simulate share: the data set, the cluster, the degrees and
// the time model's inputs.
type planArgs struct {
	features, density, alpha, indexRatio, maxKeys float64
	ranks, bpv, rph, cph                          int
	minPacket                                     int64
	seed                                          uint64
	degrees, svg, link, localLink, compress       string
	ratesJSON                                     string
	inEqOut                                       bool
}

func (a *planArgs) define(fs *flag.FlagSet, sim bool) {
	fs.Float64Var(&a.features, "features", 0, "`N` features: the distinct indices of the whole data set, such as 1e7")
	fs.Float64Var(&a.density, "density", 0, "`D`, the fraction of the features one rank holds, in (0, 1]")
	fs.IntVar(&a.ranks, "ranks", 0, "`M` nodes: the ranks of the job, or ranks / replication with replicas")
	fs.Float64Var(&a.alpha, "alpha", planning.DefaultAlpha, "power-law exponent `A` of how often the features occur (paper eq. 3)")
	fs.Int64Var(&a.minPacket, "min-packet", kx.DefaultMinPacket, "smallest efficient message, in `BYTES` (default 1048576: the library's min_packet when no link is measured)")
	bpvUsage := "`B` bytes each reduced index sends: dtype size x width, 4 for one f32 (default 8: what degrees=auto plans with, given a min_packet)"
	if sim {
		bpvUsage += "; a multiple of 4, since the simulation reduces B/4 f32 values per index"
	}
	fs.IntVar(&a.bpv, "bytes-per-value", 8, bpvUsage)
	fs.StringVar(&a.degrees, "degrees", "", "`SPEC` to use instead of the planned degrees: 8x4x2, direct, binary or auto (default: the planned ones)")
	fs.StringVar(&a.svg, "svg", "", "write the per-layer volume chart to `FILE` (SVG)")
	linkUsage := "`SPEC` of the network for the predicted times: ec2 (the paper's 10 Gb/s EC2 curve, Fig. 2), a file from kylix bench --links --links-json FILE, or OVERHEAD,RATE such as 100us,200mbit or 40us,2GB/s. Without it plan prints no times"
	if sim {
		linkUsage = "`SPEC` of the network for the predicted times: ec2 (the paper's 10 Gb/s EC2 curve, Fig. 2), a file from kylix bench --links --links-json FILE, or OVERHEAD,RATE such as 100us,200mbit or 40us,2GB/s (default ec2)"
	}
	fs.StringVar(&a.link, "link", "", linkUsage)
	fs.StringVar(&a.localLink, "local-link", "", "`SPEC` of the link between ranks of one host, as --link (default: as --link)")
	fs.IntVar(&a.rph, "ranks-per-host", 1, "`R` ranks on each host, placed in blocks (rank r on host r/R)")
	fs.IntVar(&a.cph, "cores-per-host", 0, "`C` cores of each host: compute slows by R/C when R > C (default: R, no slowdown)")
	fs.BoolVar(&a.inEqOut, "in-equals-out", false, "every rank asks for the indices it contributes (as PageRank): config sends each key once")
	fs.Float64Var(&a.indexRatio, "index-ratio", 1, "`X`-fold: how much smaller config's index lists travel where they are compressed (1: not at all; lz4 gives 6-8 on power-law data)")
	fs.StringVar(&a.compress, "compress", "auto", "`MODE`, as the library's compress option: off, lz4 (--index-ratio on every message) or auto (on messages between hosts)")
	fs.StringVar(&a.ratesJSON, "rates-json", "", "this machine's compute rates: read from `FILE` when it exists, else measured (0.2 s) and written to it (default: measured every time)")
	if sim {
		fs.Uint64Var(&a.seed, "seed", 1, "`S`, the seed of the generated data")
		fs.Float64Var(&a.maxKeys, "max-keys", 1e7, "refuse simulations of more than `K` out keys over all ranks (about 200 bytes and 2 us each)")
	}
}

// check names the flag whose value is out of range.
func (a *planArgs) check() error {
	switch {
	case !(a.features >= 1) || a.features != math.Trunc(a.features) || a.features > math.MaxInt64/2:
		return usagef("--features %g: want a whole number of features, at least 1", a.features)
	case !(a.density > 0 && a.density <= 1):
		return usagef("--density %g: want a fraction in (0, 1]", a.density)
	case a.ranks < 1:
		return usagef("--ranks %d: want at least 1", a.ranks)
	case !(a.alpha > 0) || math.IsInf(a.alpha, 1):
		return usagef("--alpha %g: want a finite number > 0", a.alpha)
	case a.minPacket < 1:
		return usagef("--min-packet %d: want at least 1 byte", a.minPacket)
	case a.bpv < 1:
		return usagef("--bytes-per-value %d: want at least 1 byte", a.bpv)
	case a.rph < 1:
		return usagef("--ranks-per-host %d: want at least 1", a.rph)
	case a.cph < 0:
		return usagef("--cores-per-host %d: want 0 (as many as ranks) or more", a.cph)
	case !(a.indexRatio >= 1):
		return usagef("--index-ratio %g: want 1 (not compressed) or more", a.indexRatio)
	case a.compress != "off" && a.compress != "lz4" && a.compress != "auto":
		return usagef("--compress %q: want off, lz4 or auto", a.compress)
	}
	return nil
}

// run is kylix plan, and with sim kylix simulate: the planned layers, the predicted times when
// a link is given (always for simulate), the simulation's measured figures, the chart.
func (a *planArgs) run(w io.Writer, sim bool) error {
	if err := a.check(); err != nil {
		return err
	}
	nf := int64(a.features)
	ds, _, err := planning.PlanDegrees(nf, a.density, a.ranks, a.alpha, a.minPacket, a.bpv)
	if err != nil {
		return err
	}
	how := "planned"
	if a.degrees != "" {
		given, err := kx.ParseDegreesSpec(a.degrees, a.ranks)
		if err != nil {
			return usagef("--%v", err) // "degrees: ..." names the flag already
		}
		if given != nil { // nil: auto, the planned ones
			ds, how = given, "given"
		}
	}
	if a.ranks == 1 {
		ds = nil
	}
	md, err := predictLayers(nf, a.density, a.alpha, ds, a.bpv)
	if err != nil {
		return err
	}
	if sim {
		if a.bpv%4 != 0 {
			return usagef("--bytes-per-value %d: want a multiple of 4 (the simulation reduces f32 values)", a.bpv)
		}
		if keys := float64(a.ranks) * a.density * a.features; keys > a.maxKeys {
			return usagef("%d ranks x density %g x %.4g features = %.3g out keys in all, above --max-keys %.3g (about 200 bytes each); lower --features or --density, or raise --max-keys", a.ranks, a.density, a.features, keys, a.maxKeys)
		}
	}
	shown := ds
	if len(shown) == 0 {
		shown = []int{1}
	}
	var ts *timeSetup
	if sim || a.link != "" { // read (and refused) before anything is printed
		ratio := a.indexRatio
		if a.compress == "off" {
			ratio = 1
		}
		work := planning.Workload{ValueBytes: a.bpv, InEqualsOut: a.inEqOut, IndexRatio: ratio,
			CompressLocal: a.compress == "lz4"}
		t, err := timeSetupFrom(a.link, a.localLink, a.rph, a.cph, work, a.ratesJSON)
		if err != nil {
			return err
		}
		ts = &t
	}
	printPlanTable(w, md, shown, how, a.features, a.density, a.ranks, a.alpha, a.minPacket, a.bpv)
	if ts != nil {
		if err := predictPlans(w, nf, a.density, a.alpha, a.ranks, shown, how, *ts); err != nil {
			return err
		}
	}
	var res *simResult
	if sim {
		r, err := simulate(simConfig{N: nf, Density: a.density, Alpha: a.alpha, Ranks: a.ranks, Degrees: ds,
			Width: a.bpv / 4, Seed: a.seed})
		if err != nil {
			return err
		}
		res = &r
		printSimulation(w, md, r, a.ranks)
	}
	if a.svg != "" {
		title := fmt.Sprintf("n=%.4g, density=%g, %d ranks, degrees %s, %d bytes per value", a.features, a.density, a.ranks,
			kx.FormatDegrees(shown), a.bpv)
		if err := os.WriteFile(a.svg, []byte(volumeSVG(title, md, res, a.ranks)), 0o644); err != nil {
			return fmt.Errorf("--svg: %w", err)
		}
		fmt.Fprintf(w, "wrote %s\n", a.svg)
	}
	return nil
}

// printSimulation prints measured figures beside the predicted ones. "keys/node" compares the
// distinct out and in keys a node holds going into the layer (averaged over nodes) with
// D_i·n/K_i; "down msg" compares the mean reduce message with ElemsPerNode·bpv/d_i. Config
// messages carry a 16-byte header and 8 bytes per out and in key (at the first layer a key per
// caller position, repeats included): predicted 16 + 16·keys/d.
func printSimulation(w io.Writer, md layerModel, r simResult, m int) {
	fmt.Fprintf(w, "\nsimulated %d ranks on the in-memory transport: data generation %.3fs/rank (measured density %.4g), "+
		"config %.3fs, reduce %.3fs (means per rank), %.2fs wall, heap %.0f MiB\n",
		m, r.GenTime.Seconds()/float64(m), r.Density, r.ConfigS, r.ReduceS, r.Wall.Seconds(), r.HeapMB)
	fmt.Fprintf(w, "%-7s %-29s %-12s %-29s %-29s %s\n", "layer", "out keys/node pred/meas err",
		"in keys/node", "down msg bytes pred/meas err", "config msg bytes pred/meas", "volume meas")
	bpv := float64(md.BytesPerElem)
	for i, l := range r.Layers {
		p := md.Layers[i]
		predCfg := predConfigMsg(p.ElemsPerNode, p.Degree)
		fmt.Fprintf(w, "%-7d %-29s %-12.6g %-29s %-29s %s\n", i+1,
			cmp3(p.ElemsPerNode, l.OutKeys), l.InKeys,
			cmp3(p.MessageBytes, l.DownMsgBytes()),
			cmp3(predCfg, l.ConfigMsgBytes()),
			fmtBytes(float64(l.VolumeOutKeys)*bpv))
	}
	fmt.Fprintf(w, "%-7s %-29s %-12.6g %-29s %-29s %s\n", "bottom", cmp3(md.BottomElems, r.BottomOut), r.BottomIn,
		"-", "-", fmtBytes(float64(r.BottomVolume)*bpv))
}

// predConfigMsg is the config message of a layer predicted from the keys a node holds going
// into it and its degree (printSimulation's formula).
func predConfigMsg(elems float64, degree int) float64 {
	return 16 + 16*elems/float64(degree)
}

// cmp3 formats "pred / meas  +x.x%".
func cmp3(pred, meas float64) string {
	return fmt.Sprintf("%.6g / %.6g %+.1f%%", pred, meas, 100*(meas-pred)/pred)
}

// fmtBytes prints a byte count with a binary unit.
func fmtBytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	return fmt.Sprintf("%.4g %s", b, units[i])
}

// printPlanTable prints the planned layers: degree, density, keys a node, message and layer
// bytes.
func printPlanTable(w io.Writer, md layerModel, shown []int, how string, n, density float64,
	ranks int, alpha float64, minPacket int64, bpv int) {
	fmt.Fprintf(w, "degrees %s (%s) for n=%.4g density=%g ranks=%d alpha=%g min_packet=%d bytes_per_value=%d\n",
		kx.FormatDegrees(shown), how, n, density, ranks, alpha, minPacket, bpv)
	fmt.Fprintf(w, "%-7s %-7s %-10s %-14s %-16s %s\n", "layer", "degree", "density", "keys/node", "message bytes", "layer volume")
	m := float64(ranks)
	for i, p := range md.Layers {
		fmt.Fprintf(w, "%-7d %-7d %-10.4g %-14.6g %-16.6g %s\n", i+1, p.Degree, p.Density, p.ElemsPerNode,
			p.MessageBytes, fmtBytes(m*p.ElemsPerNode*float64(bpv)))
	}
	fmt.Fprintf(w, "%-7s %-7s %-10.4g %-14.6g %-16s %s\n", "bottom", "-", md.BottomDens, md.BottomElems, "-",
		fmtBytes(m*md.BottomElems*float64(bpv)))
}
