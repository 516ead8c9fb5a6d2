package core_test

import (
	"testing"

	"kylix/core"
)

// BenchmarkConfigReduce4x2M runs config and reduce of 2M-index sets on 4 in-memory ranks:
// the core's own cost, without sockets.
func BenchmarkConfigReduce4x2M(b *testing.B) {
	const m, n = 4, 10_000_000
	sets := make([][]int64, m)
	for r := range sets {
		for i := 0; i < 2_000_000; i++ {
			sets[r] = append(sets[r], int64(core.Mix(uint64(i*m+r))%n))
		}
	}
	for i := 0; i < b.N; i++ {
		runJob(b, m, "direct", func(c *core.Comm) error {
			s := sets[c.Rank()]
			p, err := c.Config(s, s)
			if err != nil {
				return err
			}
			vals := make([]byte, len(s)*4)
			return p.Reduce(vals, make([]byte, len(s)*4), core.F32, core.Sum, 1)
		})
	}
}
