package core_test

import (
	"fmt"
	"kylix/core/keyset"
	"kylix/core/kx"
	"kylix/netio/memnet"
	"math"
	"sync"
	"testing"
	"time"

	"kylix/core"
)

// benchSets are m ranks' index sets of k indices each over [0, n): uniformly scattered, so
// the ranks' sets overlap as independent samples do.
func benchSets(m, k, n int) [][]int64 {
	sets := make([][]int64, m)
	for r := range sets {
		sets[r] = make([]int64, k)
		for i := range sets[r] {
			sets[r][i] = int64(keyset.Hash(uint64(i*m+r)) % uint64(n))
		}
	}
	return sets
}

// liveJob is an in-memory job whose comms stay open across benchmark iterations, so a
// benchmark times one collective, not the set-up.
type liveJob struct{ comms []*core.Comm }

func newLiveJob(b testing.TB, m int, opts kx.Options) *liveJob {
	b.Helper()
	ts := memnet.NewJob(m, 30*time.Second)
	j := &liveJob{comms: make([]*core.Comm, m)}
	for r := range j.comms {
		o := opts
		o.Rank, o.Size, o.Replication, o.Timeout = r, m, 1, 30*time.Second
		if o.MinPacket == 0 {
			o.MinPacket = 4096
		}
		c, err := core.NewComm(ts[r], o)
		if err != nil {
			b.Fatal(err)
		}
		j.comms[r] = c
	}
	b.Cleanup(func() {
		for _, c := range j.comms {
			c.Close()
		}
	})
	return j
}

// plans configures sets[r] (in = out) on every rank and returns the plans.
func (j *liveJob) plans(tb testing.TB, sets [][]int64) []*core.Plan {
	tb.Helper()
	plans := make([]*core.Plan, len(j.comms))
	j.each(tb, func(r int, c *core.Comm) (err error) {
		plans[r], err = c.Config(sets[r], sets[r])
		return err
	})
	return plans
}

// each runs fn on every rank at once and fails the benchmark on any error.
func (j *liveJob) each(b testing.TB, fn func(r int, c *core.Comm) error) {
	b.Helper()
	errs := make([]error, len(j.comms))
	var wg sync.WaitGroup
	for r, c := range j.comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = fn(r, c)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			b.Fatalf("rank %d: %v", r, err)
		}
	}
}

// BenchmarkConfig4x2M configures 2M-index sets (in = out) on 4 in-memory ranks, direct.
func BenchmarkConfig4x2M(b *testing.B) {
	sets := benchSets(4, 2_000_000, 10_000_000)
	j := newLiveJob(b, 4, kx.Options{Degrees: "direct", Threads: 1})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j.each(b, func(r int, c *core.Comm) error {
			p, err := c.Config(sets[r], sets[r])
			if err == nil {
				p.Free()
			}
			return err
		})
	}
}

// BenchmarkReduceF32x4x2M reduces f32 values of 2M-index sets on 4 in-memory ranks, direct.
func BenchmarkReduceF32x4x2M(b *testing.B) {
	sets := benchSets(4, 2_000_000, 10_000_000)
	j, plans := directPlans(b, sets)
	vals := make([][]byte, 4)
	res := make([][]byte, 4)
	for r := range vals {
		vals[r] = make([]byte, 4*len(sets[r]))
		res[r] = make([]byte, 4*len(sets[r]))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j.each(b, func(r int, c *core.Comm) error {
			return plans[r].Reduce(vals[r], res[r], kx.F32, kx.Sum, 1)
		})
	}
}

// BenchmarkConfig1x4M configures one rank's 4M keys (in != out) in process with 1 and 2
// worker threads: the threads target (threads=2 at least 1.7x threads=1).
func BenchmarkConfig1x4M(b *testing.B) {
	sets := benchSets(2, 4_000_000, 20_000_000)
	for _, th := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", th), func(b *testing.B) {
			j := newLiveJob(b, 1, kx.Options{Degrees: "auto", Threads: th})
			for i := 0; i < b.N; i++ {
				j.each(b, func(r int, c *core.Comm) error {
					p, err := c.Config(sets[0], sets[1])
					if err == nil {
						p.Free()
					}
					return err
				})
			}
		})
	}
}

// BenchmarkConfigReduceOneShot4x2M is one config_reduce of 2M-index sets (in = out) on 4
// in-memory ranks, direct: the mini-batch path.
func BenchmarkConfigReduceOneShot4x2M(b *testing.B) {
	sets := benchSets(4, 2_000_000, 10_000_000)
	j := newLiveJob(b, 4, kx.Options{Degrees: "direct", Threads: 1})
	vals := make([][]byte, 4)
	res := make([][]byte, 4)
	for r := range vals {
		vals[r] = make([]byte, 4*len(sets[r]))
		res[r] = make([]byte, 4*len(sets[r]))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j.each(b, func(r int, c *core.Comm) error {
			_, err := c.ConfigReduce(sets[r], vals[r], sets[r], res[r], kx.F32, kx.Sum, 1, false)
			return err
		})
	}
}

// BenchmarkReduceF64x4x1M reduces f64 values of 1M-index sets on 4 in-memory ranks, direct,
// with SUM and with RSUM on the same plan: what the reproducible sum costs against a plain one.
func BenchmarkReduceF64x4x1M(b *testing.B) {
	sets := benchSets(4, 1_000_000, 4_000_000)
	for _, o := range []kx.Op{kx.Sum, kx.RSum} {
		b.Run(o.String(), func(b *testing.B) {
			j, plans := directPlans(b, sets)
			vals := make([][]byte, 4)
			res := make([][]byte, 4)
			for r := range vals {
				vals[r] = encodeRaw(kx.F64, make([]float64, len(sets[r])))
				for i := range len(sets[r]) { // exponents over +-60
					putU64(vals[r][8*i:], math.Float64bits(math.Ldexp(1+float64(i%977)/977, i%121-60)))
				}
				res[r] = make([]byte, 8*len(sets[r]))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				j.each(b, func(r int, c *core.Comm) error {
					return plans[r].Reduce(vals[r], res[r], kx.F64, o, 1)
				})
			}
		})
	}
}

// directPlans configures sets (in = out) on a 4-rank in-memory job, degrees direct, one thread:
// the plans the reduce benchmarks reduce on.
func directPlans(b *testing.B, sets [][]int64) (*liveJob, []*core.Plan) {
	j := newLiveJob(b, 4, kx.Options{Degrees: "direct", Threads: 1})
	plans := make([]*core.Plan, 4)
	j.each(b, func(r int, c *core.Comm) (err error) {
		plans[r], err = c.Config(sets[r], sets[r])
		return err
	})
	return j, plans
}

// BenchmarkAllreduceF32x4x4M is a dense allreduce of 4M floats on 4 in-memory ranks: the binary
// butterfly, whose two-member layers fold as they receive.
func BenchmarkAllreduceF32x4x4M(b *testing.B) { benchAllreduce(b, 4, 4<<20) }

// benchAllreduce times b.N allreduces of n floats on an m-rank in-memory job.
func benchAllreduce(b *testing.B, m, n int) {
	j := newLiveJob(b, m, kx.Options{Degrees: "auto", Threads: 1})
	send := make([][]byte, m)
	recv := make([][]byte, m)
	for r := range send {
		send[r], recv[r] = make([]byte, 4*n), make([]byte, 4*n)
	}
	b.SetBytes(int64(4 * n))
	b.ReportAllocs()
	b.ResetTimer()
	j.each(b, func(r int, c *core.Comm) error {
		for i := 0; i < b.N; i++ {
			if err := c.Allreduce(send[r], recv[r], kx.F32, kx.Sum); err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkSmallReduce248x2 loops 248-key reduces of a kept plan on 2 in-memory ranks, each
// on its own goroutine (as two processes loop them): the small step's cost without a network,
// and with -benchmem its allocations (none: docs/measurements.md, "Small steps: no allocation
// a reduce").
func BenchmarkSmallReduce248x2(b *testing.B) {
	const m, k = 2, 248
	j := newLiveJob(b, m, kx.Options{Threads: 1})
	plans := j.plans(b, benchSets(m, k, 1_000_000))
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for r := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, res := make([]byte, 4*k), make([]byte, 4*k)
			for i := 0; i < b.N; i++ {
				if err := plans[r].Reduce(v, res, kx.F32, kx.Sum, 1); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
