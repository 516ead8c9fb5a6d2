package main

import (
	"encoding/json"
	"fmt"
	"io"
	"kylix/core/planning"
	"os"

	"kylix/core"
)

// benchLinks measures the job's links (core's probe: every rank at once, agreed across ranks)
// and prints the curve on rank 0: the one-way time and throughput of each message size, with
// the size that becomes min_packet marked. With jsonFile, rank 0 also writes the model as JSON,
// the form `kylix plan --link FILE` reads.
func benchLinks(w io.Writer, c *core.Comm, jsonFile string) error {
	l, err := c.MeasureLinks()
	if err != nil {
		return err
	}
	if c.Rank() != 0 || l == nil {
		return nil
	}
	printLinks(w, l, c.Size())
	if jsonFile == "" {
		return nil
	}
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(jsonFile, append(b, '\n'), 0o644)
}

func printLinks(w io.Writer, l *planning.Links, ranks int) {
	fmt.Fprintf(w, "links of %d ranks, %d measured at each size (median of their best of 3), probe took %.1f ms\n",
		ranks, l.Measured, 1e3*l.ProbeS)
	fmt.Fprintf(w, "latency %.1f us one way; fit t = %.1f us + bytes / %.1f MB/s; min_packet %d bytes (80%% of the rate)\n",
		1e6*l.LatencyS, 1e6*l.OverheadS, l.BytesPerSec/1e6, l.MinPacket)
	fmt.Fprintf(w, "%-12s %-14s %-12s %-10s %s\n", "bytes", "one-way us", "MB/s", "of rate", "fit us")
	for _, p := range l.Points {
		fmt.Fprintf(w, "%-12d %-14.1f %-12.1f %-10s %.1f\n", p.Bytes, 1e6*p.Seconds, p.BytesPerSec/1e6,
			fmt.Sprintf("%.0f%%", 100*p.BytesPerSec/l.BytesPerSec), 1e6*l.Time(float64(p.Bytes)))
	}
	r := l.Rates
	fmt.Fprintf(w, "compute rates agreed for planning (ns per element): sort %.1f, merge level %.2f, combine %.2f, gather %.2f, encode %.1f, decode %.1f\n",
		r.SortNs, r.MergeNs, r.CombineNs, r.GatherNs, r.EncodeNs, r.DecodeNs)
	for _, p := range l.Peers {
		fmt.Fprintf(w, "rank 0 to rank %d: %.1f us + bytes / %.1f MB/s\n", p.Rank, 1e6*p.OverheadS, p.BytesPerSec/1e6)
	}
}
