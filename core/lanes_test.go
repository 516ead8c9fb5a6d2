package core_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"kylix/core"
	"kylix/core/kx"
	"kylix/netio/memnet"
)

// laneOpts are a job's options for the lanes' tests.
func laneOpts(m int) func(r int) kx.Options {
	return func(r int) kx.Options {
		return kx.Options{Rank: r, Size: m, Degrees: "auto", Replication: 1, Timeout: jobTimeout}
	}
}

// roundingVals are n values of d whose sums round (floats with mantissas full of bits), so that
// a change of order shows in the bits.
func roundingVals(seed int64, d kx.Dtype, n int) []byte {
	rng := rand.New(rand.NewSource(seed))
	b := make([]byte, n*d.Size())
	for i := 0; i < n; i++ {
		switch d {
		case kx.F32:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(rng.NormFloat64()*1e3)))
		case kx.F64:
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(rng.NormFloat64()*1e9))
		case kx.I32:
			binary.LittleEndian.PutUint32(b[4*i:], rng.Uint32())
		default:
			binary.LittleEndian.PutUint64(b[8*i:], rng.Uint64())
		}
	}
	return b
}

// The lanes compute direct's bits: every rank count from 1 to 8, every dtype and op, sizes on
// both sides of what a lane takes (352 bytes: 44 f64, 88 f32; RSUM's accumulators are larger),
// values whose sums round. Each job runs on lanes and without them on the same data; the lanes
// must have been taken for the sizes they fit.
func TestLaneAllreduceMatchesDirect(t *testing.T) {
	for m := 1; m <= 8; m++ {
		run := func(lanes bool) (map[string][][]byte, []uint64) {
			ts := memnet.NewJob(m, jobTimeout)
			if lanes {
				ts = memnet.NewJobWithLanes(m, jobTimeout)
			}
			got := map[string][][]byte{}
			res := make([]map[string][]byte, m)
			puts := make([]uint64, m)
			errs := runMemJob(t, ts, laneOpts(m), func(c *core.Comm, mem *memnet.Mem) error {
				r := c.Rank()
				res[r] = map[string][]byte{}
				for _, d := range allDtypes {
					for _, o := range opsFor(d) {
						for _, n := range []int{1, 7, 44, 45, 88, 89, 300} {
							send := roundingVals(int64(1000*m+n), d, n)
							if o == kx.RSum || d.IsFloat() && o != kx.Sum && o != kx.Min && o != kx.Max {
								send = encode(d, o, genRank(int64(n), r, n, n, 0, 1).vals) // PROD: exact values
							}
							if o == kx.Sum || o == kx.Min || o == kx.Max {
								send = roundingVals(int64(1000*m+100*r+n), d, n)
							}
							recv := make([]byte, len(send))
							before := mem.LanePuts()
							if err := c.Allreduce(send, recv, d, o); err != nil {
								return fmt.Errorf("%s %s n=%d: %w", d, o, n, err)
							}
							es := d.Size()
							if o == kx.RSum {
								es = map[kx.Dtype]int{kx.F32: 16, kx.F64: 24}[d]
							}
							used := mem.LanePuts() > before
							if want := lanes && m > 1 && n*es <= memnet.LaneMax; used != want {
								return fmt.Errorf("%s %s n=%d (%d bytes): lanes taken %v, want %v", d, o, n, n*es, used, want)
							}
							res[r][fmt.Sprint(d, o, n)] = recv
						}
					}
				}
				puts[r] = mem.LanePuts()
				return nil
			})
			for r, err := range errs {
				if err != nil {
					t.Fatalf("m=%d lanes=%v rank %d: %v", m, lanes, r, err)
				}
			}
			for k := range res[0] {
				for r := 0; r < m; r++ {
					got[k] = append(got[k], res[r][k])
				}
			}
			return got, puts
		}
		withLanes, puts := run(true)
		direct, _ := run(false)
		for k, per := range withLanes {
			for r := range per {
				if !bytes.Equal(per[r], per[0]) {
					t.Errorf("m=%d %s: rank %d got other bits than rank 0 over the lanes", m, k, r)
				}
				if !bytes.Equal(per[r], direct[k][r]) {
					t.Errorf("m=%d %s: rank %d's lanes and direct exchange differ", m, k, r)
				}
			}
		}
		if m > 1 && puts[0] == 0 {
			t.Errorf("m=%d: no lane was taken", m)
		}
	}
}

// The lanes' results against the brute-force reference, with the exact values of the other
// allreduce tests (every rank count from 1 to 8, every dtype and op, in place and not).
func TestLaneAllreduceAgainstReference(t *testing.T) {
	for m := 1; m <= 8; m++ {
		errs := runMemJob(t, memnet.NewJobWithLanes(m, jobTimeout), laneOpts(m), func(c *core.Comm, _ *memnet.Mem) error {
			for _, d := range allDtypes {
				for _, o := range opsFor(d) {
					const n = 7
					all := make([]rankData, m)
					for r := range all {
						all[r] = genRank(int64(n*m), r, n, n, 0, 1)
						all[r].out, all[r].in = make([]int64, n), make([]int64, n)
						for i := range all[r].out {
							all[r].out[i], all[r].in[i] = int64(i), int64(i)
						}
					}
					send := encode(d, o, all[c.Rank()].vals)
					recv := send
					if c.Rank()%2 == 0 {
						recv = make([]byte, len(send))
					}
					if err := c.Allreduce(send, recv, d, o); err != nil {
						return err
					}
					checkResult(t, fmt.Sprintf("lanes m=%d", m), all, c.Rank(), d, o, 1, recv)
				}
			}
			return nil
		})
		for r, err := range errs {
			if err != nil {
				t.Errorf("m=%d rank %d: %v", m, r, err)
			}
		}
	}
}

// A rank that disagrees makes every rank's call fail with CodeMismatch, whether its call takes
// the lanes too (another count that fits) or the messages (a count too large for a lane), and
// the comm goes on over the lanes afterwards.
func TestLaneMismatch(t *testing.T) {
	for _, odd := range []int{16, 5000} {
		const m = 3
		errs := runMemJob(t, memnet.NewJobWithLanes(m, jobTimeout), laneOpts(m), func(c *core.Comm, _ *memnet.Mem) error {
			b := make([]byte, 4*8)
			if err := c.Allreduce(b, b, kx.F32, kx.Sum); err != nil { // agrees on the lanes
				return err
			}
			n := 8
			if c.Rank() == 2 {
				n = odd
			}
			b = make([]byte, 4*n)
			err := c.Allreduce(b, b, kx.F32, kx.Sum)
			if kx.CodeOf(err) != kx.CodeMismatch {
				return fmt.Errorf("count %d on rank 2: got %v, want CodeMismatch", odd, err)
			}
			if c.Rank() != 2 && !strings.Contains(err.Error(), "rank 2") {
				return fmt.Errorf("count %d on rank 2: %v does not name rank 2", odd, err)
			}
			v := make([]byte, 4*8)
			binary.LittleEndian.PutUint32(v, math.Float32bits(float32(c.Rank()+1)))
			if err := c.Allreduce(v, v, kx.F32, kx.Sum); err != nil {
				return fmt.Errorf("after the mismatch: %w", err)
			}
			if got := math.Float32frombits(binary.LittleEndian.Uint32(v)); got != 6 {
				return fmt.Errorf("after the mismatch: sum %v, want 6", got)
			}
			return nil
		})
		for r, err := range errs {
			if err != nil {
				t.Errorf("rank %d: %v", r, err)
			}
		}
	}
}

// A rank killed while the others wait on its lane: CodePeer naming it, at once rather than
// after the timeout.
func TestLaneDeadRank(t *testing.T) {
	const m = 3
	ts := memnet.NewJobWithLanes(m, 5*time.Second)
	start := time.Now()
	errs := runMemJob(t, ts, laneOpts(m), func(c *core.Comm, mem *memnet.Mem) error {
		b := make([]byte, 4*8)
		if err := c.Allreduce(b, b, kx.F32, kx.Sum); err != nil {
			return err
		}
		if c.Rank() == 2 {
			time.Sleep(50 * time.Millisecond) // the others wait on its lane
			mem.Kill()
			return nil
		}
		err := c.Allreduce(b, b, kx.F32, kx.Sum)
		if kx.CodeOf(err) != kx.CodePeer || !strings.Contains(err.Error(), "rank 2") {
			return fmt.Errorf("got %v, want CodePeer naming rank 2", err)
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the death took %v to be reported", d)
	}
}

// A rank that never calls: the lane wait ends with CodeTimeout naming it after the timeout.
func TestLaneTimeout(t *testing.T) {
	const m, timeout = 2, 300 * time.Millisecond
	ts := memnet.NewJobWithLanes(m, timeout)
	release := make(chan struct{})
	errs := runMemJob(t, ts, func(r int) kx.Options {
		return kx.Options{Rank: r, Size: m, Degrees: "auto", Replication: 1, Timeout: timeout}
	}, func(c *core.Comm, _ *memnet.Mem) error {
		b := make([]byte, 4*8)
		if err := c.Allreduce(b, b, kx.F32, kx.Sum); err != nil {
			return err
		}
		if c.Rank() == 1 {
			<-release
			return nil
		}
		defer close(release)
		start := time.Now()
		err := c.Allreduce(b, b, kx.F32, kx.Sum)
		if kx.CodeOf(err) != kx.CodeTimeout || !strings.Contains(err.Error(), "rank 1") {
			return fmt.Errorf("got %v, want CodeTimeout naming rank 1", err)
		}
		if d := time.Since(start); d < timeout {
			return fmt.Errorf("timed out after %v, before the timeout %v", d, timeout)
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}
