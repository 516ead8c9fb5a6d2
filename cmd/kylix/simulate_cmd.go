package main

import (
	"flag"
	"io"
)

func init() {
	register(&command{
		Name:     "simulate",
		Args:     "--features N --density D --ranks M [flags]",
		Purpose:  "run the real core on virtual ranks in memory, beside the plan's prediction",
		Required: []string{"features", "density", "ranks"},
		Details: `Runs config and one reduce of the library's own code on M in-memory ranks with
Poisson-power-law data (paper eq. 3) and prints, per layer, the keys per node and the message
bytes measured beside those Proposition 4.1 predicts, after what kylix plan prints with the
time model. Memory and time grow with M x D x N, the out keys of all ranks: about 200 bytes and
2 us (one core) per out key, so --features 1e6 --density 0.005 --ranks 1024 (5e6 keys) takes
about 10 s and 1 GB; runs above --max-keys are refused.
`,
		Example: `kylix simulate --features 1e6 --density 0.02 --ranks 64 --degrees 8x4x2 --svg sim.svg`,
		Setup: func(fs *flag.FlagSet) func(io.Writer, []string) error {
			var a planArgs
			a.define(fs, true)
			return func(w io.Writer, _ []string) error { return a.run(w, true) }
		},
	})
}
