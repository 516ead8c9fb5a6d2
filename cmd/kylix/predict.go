package main

import (
	"encoding/json"
	"fmt"
	"io"
	"kylix/core/kx"
	"kylix/core/planning"
	"math"
	"os"
	"strconv"
	"strings"
)

// The time prediction of `kylix plan` (core's cost model): config and reduce for the planned
// degrees, direct and binary side by side, and the planned degrees layer by layer.

// ec2Link is the paper's EC2 curve ("Kylix: A Sparse Allreduce for Commodity Clusters", §II and
// Fig. 2: 64 cc2.8xlarge nodes, 10 Gb/s): 0.4 MB packets reach about 30% of the bandwidth and
// 5 MB packets are efficient. On overhead + bytes/rate with the rated 10 Gb/s, 30% at 0.4 MB
// puts the overhead·rate product at 0.4 MB·0.7/0.3 = 0.93 MB, an overhead of 0.75 ms; 5 MB then
// reach 84%.
var ec2Link = givenLink(0.4e6*0.7/0.3/1.25e9, 1.25e9, "the paper's EC2 10 Gb/s curve (Fig. 2: 30% at 0.4 MB)")

// givenLink is a link model from its two parameters.
func givenLink(overhead, bytesPerSec float64, source string) *planning.Links {
	return &planning.Links{LatencyS: overhead, OverheadS: overhead, BytesPerSec: bytesPerSec, Source: source,
		MinPacket: int64(math.Ceil(4 * overhead * bytesPerSec))}
}

// parseLink reads a link: "ec2", a JSON file written by `kylix bench --links --links-json`, or
// "OVERHEAD,RATE" such as "100us,200mbit" (overhead in s, ms or us; rate in bit/s with k/m/g
// and "bit", or bytes/s with "B/s", e.g. "2GB/s").
func parseLink(spec string) (*planning.Links, error) {
	if spec == "ec2" {
		return ec2Link, nil
	}
	if b, err := os.ReadFile(spec); err == nil {
		var l planning.Links
		if err := json.Unmarshal(b, &l); err != nil || l.BytesPerSec <= 0 {
			return nil, fmt.Errorf("link file %s: not a link model from kylix bench --links-json (%v)", spec, err)
		}
		l.Source = "measured, " + spec
		return &l, nil
	}
	o, r, ok := strings.Cut(spec, ",")
	if !ok {
		return nil, fmt.Errorf("link %q: want ec2, a file from kylix bench --links-json, or OVERHEAD,RATE like 100us,200mbit", spec)
	}
	overhead, err := parseUnit(o, map[string]float64{"us": 1e-6, "ms": 1e-3, "s": 1})
	if err != nil {
		return nil, fmt.Errorf("link %q: overhead: %v", spec, err)
	}
	rate, err := parseUnit(strings.ToLower(r), map[string]float64{"kbit": 1e3 / 8, "mbit": 1e6 / 8, "gbit": 1e9 / 8,
		"bit": 1.0 / 8, "kb/s": 1e3, "mb/s": 1e6, "gb/s": 1e9, "b/s": 1})
	if err != nil || rate <= 0 {
		return nil, fmt.Errorf("link %q: rate: want a positive rate like 200mbit or 2GB/s", spec)
	}
	return givenLink(overhead, rate, "given, "+spec), nil
}

// parseUnit reads a number followed by one of units (longest suffix first).
func parseUnit(s string, units map[string]float64) (float64, error) {
	s = strings.TrimSpace(s)
	best := ""
	for u := range units {
		if strings.HasSuffix(s, u) && len(u) > len(best) {
			best = u
		}
	}
	if best == "" {
		return 0, fmt.Errorf("%q has no unit", s)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, best)), 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a number of %s", s, best)
	}
	return v * units[best], nil
}

// timeSetup is everything the prediction needs beside the data.
type timeSetup struct {
	link    *planning.Links
	cluster planning.Cluster
	rates   planning.ComputeRates
	work    planning.Workload
}

// timeSetupFrom reads the time model's flags (checked by planArgs.check); the compute rates
// are measured here and now unless ratesFile holds them.
func timeSetupFrom(linkSpec, localSpec string, rph, cph int, work planning.Workload, ratesFile string) (timeSetup, error) {
	if linkSpec == "" {
		linkSpec = "ec2"
	}
	link, err := parseLink(linkSpec)
	if err != nil {
		return timeSetup{}, usagef("--%v", err) // "link %q: ..."
	}
	cl := planning.Cluster{RanksPerHost: rph, Slowdown: 1}
	if cph > 0 && rph > cph {
		cl.Slowdown = float64(rph) / float64(cph)
	}
	if localSpec != "" {
		if cl.Local, err = parseLink(localSpec); err != nil {
			return timeSetup{}, usagef("--local-%v", err)
		}
	}
	rates, err := loadRates(ratesFile)
	if err != nil {
		return timeSetup{}, err
	}
	return timeSetup{link: link, cluster: cl, rates: rates, work: work}, nil
}

// loadRates reads the compute rates from file, or measures them (and writes them to file when
// one is named): a series of predictions then uses one measurement, taken while the machine was
// quiet, instead of whatever load each call meets.
func loadRates(file string) (planning.ComputeRates, error) {
	var r planning.ComputeRates
	if file != "" {
		if b, err := os.ReadFile(file); err == nil {
			if err := json.Unmarshal(b, &r); err != nil || !(r.SortNs > 0) {
				return r, fmt.Errorf("--rates-json %s: not compute rates written by kylix plan (%v)", file, err)
			}
			return r, nil
		}
	}
	r = planning.MeasureComputeRates()
	if file != "" {
		b, _ := json.MarshalIndent(r, "", "  ")
		if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
			return r, err
		}
	}
	return r, nil
}

// predictPlans prints the config and reduce times of the planned, direct and binary degrees,
// then the planned ones layer by layer.
func predictPlans(w io.Writer, n int64, density, alpha float64, ranks int, planned []int, how string, ts timeSetup) error {
	l := ts.link
	fmt.Fprintf(w, "\ntime model: link %s: %.3g ms + bytes / %.4g MB/s (min_packet %d); %d ranks per host",
		l.Source, 1e3*l.OverheadS, l.BytesPerSec/1e6, l.MinPacket, max(ts.cluster.RanksPerHost, 1))
	if loc := ts.cluster.Local; loc != nil {
		fmt.Fprintf(w, " (within a host: %.3g ms + bytes / %.4g MB/s)", 1e3*loc.OverheadS, loc.BytesPerSec/1e6)
	}
	fmt.Fprintf(w, ", compute x%.2g\n", max(ts.cluster.Slowdown, 1))
	r := ts.rates
	where := "every message"
	if !ts.work.CompressLocal {
		where = "between hosts"
	}
	fmt.Fprintf(w, "compute ns per element: sort %.1f, merge level %.2f, combine %.2f, gather %.2f, encode %.1f, decode %.1f; %d-byte values, in=out %v, index ratio %.3g (%s)\n",
		r.SortNs, r.MergeNs, r.CombineNs, r.GatherNs, r.EncodeNs, r.DecodeNs, ts.work.ValueBytes, ts.work.InEqualsOut, max(ts.work.IndexRatio, 1), where)
	direct, _ := kx.ParseDegreesSpec("direct", ranks)
	binary, _ := kx.ParseDegreesSpec("binary", ranks)
	plans := []struct {
		name string
		ds   []int
	}{{how, planned}, {"direct", direct}, {"binary", binary}}
	fmt.Fprintf(w, "%-10s %-12s %-12s %-12s %s\n", "plan", "degrees", "config s", "reduce s", "config+reduce s")
	var preds []planning.TimePrediction
	for _, p := range plans {
		tp, err := predictTime(n, density, alpha, p.ds, ts)
		if err != nil {
			return err
		}
		preds = append(preds, tp)
		fmt.Fprintf(w, "%-10s %-12s %-12.4g %-12.4g %.4g\n", p.name, kx.FormatDegrees(p.ds), tp.ConfigS, tp.ReduceS, tp.ConfigS+tp.ReduceS)
	}
	if best, bt, err := planning.PlanDegreesByCost(n, density, ranks, alpha, ts.link, ts.cluster, ts.rates, ts.work); err == nil {
		fmt.Fprintf(w, "%-10s %-12s %-12.4g %-12.4g %.4g   (degrees=auto on measured links: fewest layers within %.0f%% of the cheapest)\n",
			"by cost", kx.FormatDegrees(best), bt.ConfigS, bt.ReduceS, bt.ConfigS+bt.ReduceS, 100*planning.PlanSlack(ts.cluster))
	}
	tp := preds[0]
	fmt.Fprintf(w, "%s %s by layer (ms): config top sort %.3g, reduce top+bottom gathers %.3g\n", how, kx.FormatDegrees(planned), 1e3*tp.SortS, 1e3*tp.TopS)
	fmt.Fprintf(w, "%-7s %-7s %-12s %-11s %-11s %-11s %-11s %-11s %s\n", "layer", "degree", "keys/msg", "config net", "config cpu", "down net", "down cpu", "up net", "up cpu")
	for i, lt := range tp.Layers {
		fmt.Fprintf(w, "%-7d %-7d %-12.4g %-11.4g %-11.4g %-11.4g %-11.4g %-11.4g %.4g\n", i+1, lt.Degree, lt.MsgKeys,
			1e3*lt.ConfigNet, 1e3*lt.ConfigCPU, 1e3*lt.ReduceDownNet, 1e3*lt.ReduceDownCPU, 1e3*lt.ReduceUpNet, 1e3*lt.ReduceUpCPU)
	}
	return nil
}

// predictTime is core's cost model for one set of degrees.
func predictTime(n int64, density, alpha float64, ds []int, ts timeSetup) (planning.TimePrediction, error) {
	layers, _, bottom, err := planning.PredictLayers(n, density, alpha, ds, ts.work.ValueBytes)
	if err != nil {
		return planning.TimePrediction{}, err
	}
	return planning.PredictTime(ds, layers, bottom, ts.link, ts.cluster, ts.rates, ts.work), nil
}
