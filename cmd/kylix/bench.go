package main

import (
	"flag"
	"fmt"
	"io"
	"kylix/core/kx"
	"kylix/core/planning"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"time"

	"kylix/core"
	"kylix/netio"
)

func init() {
	register(&command{
		Name:    "bench",
		Args:    "[flags]   (on every rank: kylixrun -n N kylix bench ...)",
		Purpose: "measure config and reduce, dense allreduce or the links of a real job (under kylixrun)",
		Details: `Runs on every rank of a job started by kylixrun (or with KYLIX_RANK, KYLIX_SIZE and peers or
a rendezvous set), with the library's options from the environment (KYLIX_DEGREES,
KYLIX_COMPRESS, ...). By default each rank configures once and reduces --iters times on
Poisson-power-law data (paper eq. 3) and prints its seconds and indices or values per second.
--dense prints rank 0's milliseconds per dense allreduce, direct exchange against butterfly,
for each of --sizes; --links prints the links' latency and throughput against message size.
`,
		Example: `build/kylixrun -n 4 build/kylix bench --features 1e7 --density 0.03
build/kylixrun -n 4 build/kylix bench --dense --sizes 4096,1048576
build/kylixrun -n 4 build/kylix bench --links --links-json links.json   # then: kylix plan --link links.json`,
		Setup: benchSetup,
	})
}

// benchSetup: config and reduce on synthetic Poisson–power-law data (paper eq. 3): feature r
// is present on a rank with probability 1-exp(-λ r^-α), λ solved for the requested density,
// feature ids scattered by a hash so the popular ones are not all small numbers.
func benchSetup(fs *flag.FlagSet) func(io.Writer, []string) error {
	n := fs.Float64("features", 1e7, "`N` features: the distinct indices the ranks draw from")
	density := fs.Float64("density", 0.2, "`D`, the fraction of the features each rank holds, in (0, 1]")
	alpha := fs.Float64("alpha", planning.DefaultAlpha, "power-law exponent `A` of how often the features occur")
	width := fs.Int("width", 1, "`W` f32 values per index")
	iters := fs.Int("iters", 5, "`K` calls to time: reduces, or dense allreduces of each size")
	dense := fs.Bool("dense", false, "time the dense allreduce, direct exchange against butterfly, instead")
	sizes := fs.String("sizes", "1,256,1024,4096,16384,65536,262144,1048576", "with --dense: the vector `COUNTS` of f32 values, comma-separated")
	same := fs.Bool("in-equals-out", false, "every rank asks for the indices it contributes (in = out, as PageRank)")
	cpuprofile := fs.String("cpuprofile", "", "write each rank's CPU profile of the reduces to `FILE`.<rank>")
	links := fs.Bool("links", false, "measure the job's links instead: one-way time and throughput against message size")
	linksJSON := fs.String("links-json", "", "with --links: rank 0 writes the link model to `FILE` (JSON, for kylix plan --link FILE)")
	return func(w io.Writer, _ []string) error {
		switch {
		case !(*n >= 1):
			return usagef("--features %g: want at least 1", *n)
		case !(*density > 0 && *density <= 1):
			return usagef("--density %g: want a fraction in (0, 1]", *density)
		case *width < 1:
			return usagef("--width %d: want at least 1", *width)
		case *iters < 1:
			return usagef("--iters %d: want at least 1", *iters)
		}
		const hint = "\n(kylix bench runs on every rank of a job: kylixrun -n 4 kylix bench ...)"
		opts, err := kx.ParseOptions("", os.Getenv)
		if err != nil {
			return fmt.Errorf("%v%s", err, hint)
		}
		t, err := netio.Connect(opts)
		if err != nil {
			return fmt.Errorf("%v%s", err, hint)
		}
		c, err := core.NewComm(t, opts)
		if err != nil {
			return err
		}
		defer c.Close()
		if *dense {
			return benchDense(w, c, *sizes, *iters)
		}
		if *links {
			return benchLinks(w, c, *linksJSON)
		}
		return benchSparse(w, c, *n, *density, *alpha, *width, *iters, *same, *cpuprofile)
	}
}

// benchSparse configures once and times the reduces; every rank prints its figures.
func benchSparse(w io.Writer, c *core.Comm, n, density, alpha float64, width, iters int, same bool, cpuprofile string) error {
	out, err := powerLawSet(int64(n), density, alpha, int64(c.Rank())*2+1)
	if err != nil {
		return err
	}
	in := out
	if !same {
		if in, err = powerLawSet(int64(n), density, alpha, int64(c.Rank())*2+2); err != nil {
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
	vals := make([]byte, len(out)*width*4)
	res := make([]byte, len(in)*width*4)
	if err := c.Barrier(); err != nil {
		return err
	}
	if cpuprofile != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", cpuprofile, c.Rank()))
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
	for i := 0; i < iters; i++ {
		if err := p.Reduce(vals, res, kx.F32, kx.Sum, width); err != nil {
			return err
		}
	}
	red := time.Since(start) / time.Duration(iters)
	idx := float64(len(out) + len(in))
	fmt.Fprintf(w, "rank %d: degrees %s, %d out + %d in indices; config %.3fs (%.3g indices/s); reduce %.3fs (%.3g values/s)\n",
		c.Rank(), kx.FormatDegrees(p.Degrees()), len(out), len(in), cfg.Seconds(), idx/cfg.Seconds(),
		red.Seconds(), idx*float64(width)/red.Seconds())
	p.Free()
	return nil
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
