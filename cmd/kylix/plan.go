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

const planUsage = `usage: kylix plan --features N --density D --ranks M [flags]

Prints the butterfly degrees Proposition 4.1 picks (as degrees=auto does) and, per layer, the
predicted density, distinct keys per node going into the layer, message size per neighbour and
the layer's total volume (all nodes, own share included: the paper's Fig. 5 "Kylix shape").

  --simulate        run the real core (config + one reduce) on M in-memory virtual ranks with
                    Poisson–power-law data (paper eq. 3) and print the measured figures beside
                    the prediction. Memory and time grow with M·D·N, the keys of all out sets:
                    about 200 bytes and 2 µs (on 2 cores) per out key, the in sets included, so
                    --features 1e6 --density 0.005 --ranks 1024 (5e6 keys) takes ~10 s and ~1 GB.
                    Larger runs than --max-keys are refused.
  --degrees SPEC    simulate/predict these degrees instead of the planned ones (4x2, binary, direct)
  --svg FILE        write the per-layer volume chart (predicted; measured too with --simulate)
  --seed S          data seed for --simulate (default 1)
  --max-keys K      refuse simulations of more than K out keys over all ranks (default 1e7)

Time (core's cost model; printed with --simulate or --link): config and reduce for the planned
degrees, direct and binary side by side, and the planned ones by layer, from the link, the
hosts' shape and this machine's measured compute rates.
  --link SPEC       ec2 (the paper's 10 Gb/s curve, the default), a file written by
                    kylix bench --links --links-json FILE, or OVERHEAD,RATE like 100us,200mbit
  --local-link SPEC the link between ranks of one host (default: as --link)
  --ranks-per-host R  ranks placed in blocks of R per host (default 1)
  --cores-per-host C  compute slows by R/C when R > C (default R)
  --value-bytes B   bytes per reduced value (default 4: f32)
  --in-equals-out   config sends each key once (in = out, as PageRank's iterations)
  --index-ratio X   config index lists travel compressed X-fold (default 1: not compressed)
  --compress MODE   lz4 (the default): every message compressed; auto: only between hosts
  --rates-json FILE this machine's compute rates: read from FILE when it exists, else measured
                    (0.2 s) and written to it (without the flag: measured every time)

flags:
`

func planCmd(args []string) error {
	return planMain(args, os.Stdout)
}

func planMain(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), planUsage); fs.PrintDefaults() }
	n := fs.Float64("features", 0, "number of features n")
	density := fs.Float64("density", 0, "per-rank density of the initial shares")
	ranks := fs.Int("ranks", 0, "number of ranks (nodes)")
	alpha := fs.Float64("alpha", planning.DefaultAlpha, "power-law exponent")
	minPacket := fs.Int64("min-packet", kx.DefaultMinPacket, "smallest efficient message, bytes")
	bpv := fs.Int("bytes-per-value", 8, "bytes sent per element (with --simulate: a multiple of 4, f32 values)")
	degSpec := fs.String("degrees", "", "degrees to use instead of the planned ones")
	svgFile := fs.String("svg", "", "write the per-layer volume chart to this SVG file")
	sim := fs.Bool("simulate", false, "run the real core on virtual ranks and print measured figures")
	seed := fs.Uint64("seed", 1, "data seed for --simulate")
	maxKeys := fs.Float64("max-keys", 1e7, "largest ranks*density*features --simulate accepts")
	linkSpec := fs.String("link", "", "link model for the time prediction: ec2, a --links-json file, or OVERHEAD,RATE")
	localSpec := fs.String("local-link", "", "link between ranks of one host (default: as --link)")
	rph := fs.Int("ranks-per-host", 1, "ranks per host, placed in blocks")
	cph := fs.Int("cores-per-host", 0, "cores per host (default: ranks per host)")
	valueBytes := fs.Int("value-bytes", 4, "bytes per reduced value")
	inEqOut := fs.Bool("in-equals-out", false, "config sends each key once (in = out)")
	indexRatio := fs.Float64("index-ratio", 1, "compression ratio of config index lists")
	compressMode := fs.String("compress", "lz4", "with --index-ratio: lz4 (every message) or auto (between hosts only)")
	ratesFile := fs.String("rates-json", "", "compute rates: read from this file, or measured and written to it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("plan: unexpected argument %q", fs.Arg(0))
	}
	if *n != math.Trunc(*n) || *n > math.MaxInt64/2 {
		return fmt.Errorf("--features: %g is not a whole number of features", *n)
	}
	nf := int64(*n)
	ds, _, err := planning.PlanDegrees(nf, *density, *ranks, *alpha, *minPacket, *bpv)
	if err != nil {
		return err
	}
	how := "planned"
	if *degSpec != "" {
		if ds, err = kx.ParseDegreesSpec(*degSpec, *ranks); err != nil {
			return err
		}
		if ds == nil { // auto
			ds, _, _ = planning.PlanDegrees(nf, *density, *ranks, *alpha, *minPacket, *bpv)
		} else {
			how = "given"
		}
	}
	if *ranks == 1 {
		ds = nil
	}
	md, err := predictLayers(nf, *density, *alpha, ds, *bpv)
	if err != nil {
		return err
	}
	if *sim {
		if *bpv%4 != 0 {
			return fmt.Errorf("--bytes-per-value: %d is not a multiple of 4 (the simulator reduces f32 values)", *bpv)
		}
		if keys := float64(*ranks) * *density * *n; keys > *maxKeys {
			return fmt.Errorf("--simulate: %d ranks x density %g x %.4g features = %.3g out keys in all, above --max-keys %.3g (about 200 bytes each); lower --features or --density, or raise --max-keys", *ranks, *density, *n, keys, *maxKeys)
		}
	}
	shown := ds
	if len(shown) == 0 {
		shown = []int{1}
	}
	fmt.Fprintf(w, "degrees %s (%s) for n=%.4g density=%g ranks=%d alpha=%g min_packet=%d bytes_per_value=%d\n",
		kx.FormatDegrees(shown), how, *n, *density, *ranks, *alpha, *minPacket, *bpv)
	fmt.Fprintf(w, "%-7s %-7s %-10s %-14s %-16s %s\n", "layer", "degree", "density", "keys/node", "message bytes", "layer volume")
	m := float64(*ranks)
	for i, p := range md.Layers {
		fmt.Fprintf(w, "%-7d %-7d %-10.4g %-14.6g %-16.6g %s\n", i+1, p.Degree, p.Density, p.ElemsPerNode,
			p.MessageBytes, fmtBytes(m*p.ElemsPerNode*float64(*bpv)))
	}
	fmt.Fprintf(w, "%-7s %-7s %-10.4g %-14.6g %-16s %s\n", "bottom", "-", md.BottomDens, md.BottomElems, "-",
		fmtBytes(m*md.BottomElems*float64(*bpv)))

	if *sim || *linkSpec != "" {
		if *compressMode != "lz4" && *compressMode != "auto" {
			return fmt.Errorf("--compress: %q is not lz4 or auto", *compressMode)
		}
		work := planning.Workload{ValueBytes: *valueBytes, InEqualsOut: *inEqOut, IndexRatio: *indexRatio,
			CompressLocal: *compressMode == "lz4"}
		ts, err := timeSetupFrom(*linkSpec, *localSpec, *rph, *cph, work, *ratesFile)
		if err != nil {
			return err
		}
		if err := predictPlans(w, nf, *density, *alpha, *ranks, shown, how, ts); err != nil {
			return err
		}
	}
	var res *simResult
	if *sim {
		r, err := simulate(simConfig{N: nf, Density: *density, Alpha: *alpha, Ranks: *ranks, Degrees: ds,
			Width: *bpv / 4, Seed: *seed})
		if err != nil {
			return err
		}
		res = &r
		printSimulation(w, md, r, *ranks)
	}
	if *svgFile != "" {
		title := fmt.Sprintf("n=%.4g, density=%g, %d ranks, degrees %s, %d bytes per value", *n, *density, *ranks,
			kx.FormatDegrees(shown), *bpv)
		if err := os.WriteFile(*svgFile, []byte(volumeSVG(title, md, res, *ranks)), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s\n", *svgFile)
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
