package main

import (
	"flag"
	"fmt"

	"kylix/core"
)

func planCmd(args []string) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	n := fs.Float64("features", 0, "number of features n")
	density := fs.Float64("density", 0, "per-rank density of the initial shares")
	ranks := fs.Int("ranks", 0, "number of ranks (nodes)")
	alpha := fs.Float64("alpha", core.DefaultAlpha, "power-law exponent")
	minPacket := fs.Int64("min-packet", core.DefaultMinPacket, "smallest efficient message, bytes")
	bpv := fs.Int("bytes-per-value", 8, "bytes sent per element")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ds, preds, err := core.PlanDegrees(int64(*n), *density, *ranks, *alpha, *minPacket, *bpv)
	if err != nil {
		return err
	}
	fmt.Printf("degrees %s for n=%.4g density=%g ranks=%d alpha=%g min_packet=%d\n",
		core.FormatDegrees(ds), *n, *density, *ranks, *alpha, *minPacket)
	fmt.Printf("%-6s %-7s %-10s %-16s %s\n", "layer", "degree", "density", "elems/node", "message bytes")
	for i, p := range preds {
		fmt.Printf("%-6d %-7d %-10.4g %-16.4g %.4g\n", i+1, p.Degree, p.Density, p.ElemsPerNode, p.MessageBytes)
	}
	return nil
}
