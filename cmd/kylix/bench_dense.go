package main

import (
	"fmt"
	"io"
	"kylix/core/kx"
	"strconv"
	"strings"
	"time"

	"kylix/core"
)

// benchDense times Allreduce of f32 vectors of the given sizes twice, once forced onto the
// direct exchange and once onto the butterfly, so the switch point can be read off on the
// machine at hand. Rank 0 prints; the time is rank 0's mean per call after a warm-up call.
func benchDense(w io.Writer, c *core.Comm, sizes string, iters int) error {
	if c.Rank() == 0 {
		fmt.Fprintf(w, "%-12s %-14s %-14s %s\n", "f32 count", "direct ms", "butterfly ms", "faster")
	}
	for _, f := range strings.Split(sizes, ",") {
		n, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || n < 0 {
			return fmt.Errorf("--sizes: %q is not a count", f)
		}
		buf := make([]byte, int(n)*4)
		var times [2]time.Duration
		for k, sw := range []int{1 << 62, 0} {
			c.SetDenseSwitch(sw)
			if err := c.Allreduce(buf, buf, kx.F32, kx.Sum); err != nil { // warm-up
				return err
			}
			if err := c.Barrier(); err != nil {
				return err
			}
			start := time.Now()
			for i := 0; i < iters; i++ {
				if err := c.Allreduce(buf, buf, kx.F32, kx.Sum); err != nil {
					return err
				}
			}
			times[k] = time.Since(start) / time.Duration(iters)
		}
		c.SetDenseSwitch(-1)
		if c.Rank() == 0 {
			faster := "direct"
			if times[1] < times[0] {
				faster = "butterfly"
			}
			fmt.Fprintf(w, "%-12d %-14.3f %-14.3f %s\n", int(n), ms(times[0]), ms(times[1]), faster)
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
