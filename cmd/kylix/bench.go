package main

import (
	"flag"
	"fmt"
	"kylix/core/kx"
	"kylix/core/planning"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"time"

	"kylix/core"
	"kylix/netio"
)

// benchCmd runs config and reduce on synthetic Poisson–power-law data (paper eq. 3): feature r
// is present on a rank with probability 1-exp(-λ r^-α), λ solved for the requested density,
// feature ids scattered by a hash so the popular ones are not all small numbers.
func benchCmd(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	n := fs.Float64("features", 1e7, "number of features")
	density := fs.Float64("density", 0.2, "per-rank density")
	alpha := fs.Float64("alpha", planning.DefaultAlpha, "power-law exponent of the data")
	width := fs.Int("width", 1, "values per index (f32)")
	iters := fs.Int("iters", 5, "reduces to time")
	dense := fs.Bool("dense", false, "time dense allreduce (direct vs butterfly) instead")
	sizes := fs.String("sizes", "1,256,1024,4096,16384,65536,262144,1048576", "f32 counts for --dense")
	same := fs.Bool("in-equals-out", false, "ask for the indices contributed (in = out, as PageRank does)")
	cpuprofile := fs.String("cpuprofile", "", "write this rank's CPU profile of the reduces to FILE.<rank>")
	links := fs.Bool("links", false, "measure the job's links (latency, throughput against message size) instead")
	linksJSON := fs.String("links-json", "", "with --links: rank 0 writes the model to this JSON file (for kylix plan --simulate --links)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts, err := kx.ParseOptions("", os.Getenv)
	if err != nil {
		return err
	}
	t, err := netio.Connect(opts)
	if err != nil {
		return err
	}
	c, err := core.NewComm(t, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	if *dense {
		return benchDense(c, *sizes, *iters)
	}
	if *links {
		return benchLinks(c, *linksJSON)
	}

	out, err := powerLawSet(int64(*n), *density, *alpha, int64(c.Rank())*2+1)
	if err != nil {
		return err
	}
	in := out
	if !*same {
		if in, err = powerLawSet(int64(*n), *density, *alpha, int64(c.Rank())*2+2); err != nil {
			return err
		}
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	start := time.Now()
	p, err := c.Config(out, in)
	if err != nil {
		return err
	}
	cfg := time.Since(start)
	vals := make([]byte, len(out)**width*4)
	res := make([]byte, len(in)**width*4)
	if err := c.Barrier(); err != nil {
		return err
	}
	if *cpuprofile != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", *cpuprofile, c.Rank()))
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	start = time.Now()
	for i := 0; i < *iters; i++ {
		if err := p.Reduce(vals, res, kx.F32, kx.Sum, *width); err != nil {
			return err
		}
	}
	red := time.Since(start) / time.Duration(*iters)
	idx := float64(len(out) + len(in))
	fmt.Printf("rank %d: degrees %s, %d out + %d in indices; config %.3fs (%.3g indices/s); reduce %.3fs (%.3g values/s)\n",
		c.Rank(), kx.FormatDegrees(p.Degrees()), len(out), len(in), cfg.Seconds(), idx/cfg.Seconds(),
		red.Seconds(), idx*float64(*width)/red.Seconds())
	return p.Free()
}

// powerLawSet is one rank's Poisson–power-law feature set (the simulator's sampler), ids
// scattered over [0, n) by a bijection.
func powerLawSet(n int64, density, alpha float64, seed int64) ([]int64, error) {
	lambda, err := planning.SolveLambda(n, density, alpha)
	if err != nil {
		return nil, err
	}
	return powerLawSample(n, lambda, alpha, rand.New(rand.NewPCG(uint64(seed), 0x6b796c6978)), newPermutation(n)), nil
}
