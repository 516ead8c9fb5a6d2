package core_test

import (
	"errors"
	"fmt"
	"kylix/core/kx"
	"kylix/netio/memnet"
	"strings"
	"sync"
	"testing"
	"time"

	"kylix/core"
)

// pollDone polls r with Test, sleeping between polls, until it is done or limit passes.
func pollDone(r *core.Request, limit time.Duration) (polls int, err error) {
	deadline := time.Now().Add(limit)
	for {
		polls++
		done, err := r.Test()
		if done {
			return polls, err
		}
		if time.Now().After(deadline) {
			return polls, fmt.Errorf("request not done after %v of polling", limit)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// denseData is every rank's dense vector of n values as rankData, for checkResult.
func denseData(seed int64, m, n int) []rankData {
	all := make([]rankData, m)
	for r := range all {
		all[r] = genRank(seed, r, n, n, 0, 1)
		all[r].out = make([]int64, n)
		all[r].in = make([]int64, n)
		for i := range all[r].out {
			all[r].out[i], all[r].in[i] = int64(i), int64(i)
		}
	}
	return all
}

// Several requests in flight on one comm, mixed with blocking calls, complete in issue order
// with the brute-force results, whether waited for in order, in reverse, or polled.
func TestRequestsInFlight(t *testing.T) {
	for _, pl := range []struct {
		m       int
		degrees string
	}{{1, "auto"}, {2, "direct"}, {3, "direct"}, {4, "2x2"}, {5, "auto"}, {6, "3x2"}} {
		t.Run(fmt.Sprintf("m%d_%s", pl.m, pl.degrees), func(t *testing.T) {
			const n, width = 3000, 2
			sparse := make([]rankData, pl.m)
			for r := range sparse {
				sparse[r] = genRank(int64(pl.m), r, n, 200+40*r, 150+20*r, width)
			}
			dense := denseData(int64(pl.m)+100, pl.m, 777)
			type op struct {
				d kx.Dtype
				o kx.Op
			}
			ops := []op{{kx.F64, kx.Sum}, {kx.I32, kx.Max}, {kx.F32, kx.Min}, {kx.U64, kx.Bxor}}
			errs := runJob(t, pl.m, pl.degrees, func(c *core.Comm) error {
				me := c.Rank()
				sd, dd := sparse[me], dense[me]
				p, err := c.Config(sd.out, sd.in)
				if err != nil {
					return err
				}
				defer p.Free()
				for round := 0; round < 3; round++ {
					var reqs []*core.Request
					var check []func()
					for _, x := range ops {
						in := make([]byte, len(sd.in)*width*x.d.Size())
						r, err := p.IReduce(encode(x.d, x.o, sd.vals), in, x.d, x.o, width)
						if err != nil {
							return fmt.Errorf("ireduce %s %s: %w", x.d, x.o, err)
						}
						reqs = append(reqs, r)
						check = append(check, func() { checkResult(t, "ireduce", sparse, me, x.d, x.o, width, in) })

						send := encode(x.d, x.o, dd.vals)
						recv := send // in place on odd ranks
						if me%2 == 0 {
							recv = make([]byte, len(send))
						}
						r, err = c.IAllreduce(send, recv, x.d, x.o)
						if err != nil {
							return fmt.Errorf("iallreduce %s %s: %w", x.d, x.o, err)
						}
						reqs = append(reqs, r)
						check = append(check, func() { checkResult(t, "iallreduce", dense, me, x.d, x.o, 1, recv) })
					}
					// A blocking reduce with requests in flight queues behind them.
					in := make([]byte, len(sd.in)*width*8)
					if err := p.Reduce(encode(kx.I64, kx.Sum, sd.vals), in, kx.I64, kx.Sum, width); err != nil {
						return fmt.Errorf("blocking reduce behind requests: %w", err)
					}
					checkResult(t, "blocking reduce", sparse, me, kx.I64, kx.Sum, width, in)
					// It completed after every request issued before it.
					for i, r := range reqs {
						if done, err := r.Test(); !done || err != nil {
							return fmt.Errorf("request %d: done=%v err=%v after a later blocking call returned", i, done, err)
						}
					}
					// More requests, completed three ways.
					reqs, check = reqs[:0], check[:0]
					for k := 0; k < 4; k++ {
						x := ops[(k+round)%len(ops)]
						send := encode(x.d, x.o, dd.vals)
						recv := make([]byte, len(send))
						r, err := c.IAllreduce(send, recv, x.d, x.o)
						if err != nil {
							return err
						}
						reqs = append(reqs, r)
						check = append(check, func() { checkResult(t, "iallreduce", dense, me, x.d, x.o, 1, recv) })
					}
					if err := c.Barrier(); err != nil {
						return fmt.Errorf("barrier behind requests: %w", err)
					}
					for i := range reqs {
						k := i
						switch round {
						case 1:
							k = len(reqs) - 1 - i
						case 2:
							if _, err := pollDone(reqs[k], 20*time.Second); err != nil {
								return err
							}
						}
						if err := reqs[k].Wait(); err != nil {
							return fmt.Errorf("round %d request %d: %w", round, k, err)
						}
						check[k]()
					}
				}
				return nil
			})
			for r, err := range errs {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}

// Test polling sees the request run in the background while the caller does other work.
func TestRequestTestPolling(t *testing.T) {
	const m, n = 3, 200_000
	dense := denseData(5, m, n)
	errs := runJob(t, m, "direct", func(c *core.Comm) error {
		send := encode(kx.F64, kx.Sum, dense[c.Rank()].vals)
		recv := make([]byte, len(send))
		r, err := c.IAllreduce(send, recv, kx.F64, kx.Sum)
		if err != nil {
			return err
		}
		polls, err := pollDone(r, 20*time.Second)
		if err != nil {
			return err
		}
		if err := r.Wait(); err != nil { // after Test reported done, Wait returns at once
			return err
		}
		checkResult(t, "polled iallreduce", dense, c.Rank(), kx.F64, kx.Sum, 1, recv)
		t.Logf("rank %d: done after %d polls", c.Rank(), polls)
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// Bad arguments fail at issue time with CodeArg on the rank that passed them; the peers'
// matching requests fail with CodeMismatch at Wait; requests keep the ranks in step.
func TestRequestArgErrors(t *testing.T) {
	const m = 4
	errs := runJob(t, m, "2x2", func(c *core.Comm) error {
		me := c.Rank()
		p, err := c.Config([]int64{int64(me), 10}, []int64{0, 1, 2, 3, 10})
		if err != nil {
			return err
		}
		out, in := make([]byte, 16), make([]byte, 40)
		// A request in flight, so that the rejection below queues behind it.
		first, err := p.IReduce(out, in, kx.F64, kx.Sum, 1)
		if err != nil {
			return err
		}
		w := 1
		if me == 2 {
			w = 0
		}
		r, err := p.IReduce(out, in, kx.F64, kx.Sum, w)
		if me == 2 {
			if !errors.Is(err, kx.ErrArg) || r != nil {
				return fmt.Errorf("width 0: got %v, %v; want CodeArg and no request", r, err)
			}
		} else {
			if err != nil {
				return fmt.Errorf("issue: %v", err)
			}
			if err := r.Wait(); !errors.Is(err, kx.ErrMismatch) {
				return fmt.Errorf("peer of a rejecting rank: got %v, want CodeMismatch", err)
			}
		}
		if err := first.Wait(); err != nil {
			return fmt.Errorf("request before the rejection: %v", err)
		}
		// Every rank rejects: all fail at issue, no request.
		if _, err := c.IAllreduce(make([]byte, 8), make([]byte, 16), kx.F64, kx.Sum); !errors.Is(err, kx.ErrArg) {
			return fmt.Errorf("length mismatch: got %v, want CodeArg", err)
		}
		if _, err := c.IAllreduce(make([]byte, 8), make([]byte, 8), kx.F64, kx.Bor); !errors.Is(err, kx.ErrArg) {
			return fmt.Errorf("bor on floats: got %v, want CodeArg", err)
		}
		// Ranks disagreeing on the op: a mismatch everywhere, and the comm stays usable.
		o := kx.Sum
		if me == 0 {
			o = kx.Max
		}
		r, err = c.IAllreduce(make([]byte, 8), make([]byte, 8), kx.F64, o)
		if err != nil {
			return err
		}
		if err := r.Wait(); !errors.Is(err, kx.ErrMismatch) {
			return fmt.Errorf("op mismatch: got %v, want CodeMismatch", err)
		}
		// A freed plan: the request finishes; a new one fails with CodeState.
		r, err = p.IReduce(out, in, kx.F64, kx.Sum, 1)
		if err != nil {
			return err
		}
		p.Free()
		if _, err := p.IReduce(out, in, kx.F64, kx.Sum, 1); !errors.Is(err, kx.ErrState) {
			return fmt.Errorf("freed plan: got %v, want CodeState", err)
		}
		if err := r.Wait(); err != nil {
			return fmt.Errorf("request on a plan freed while it ran: %v", err)
		}
		return c.Barrier()
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// A peer that dies fails the request in flight with CodePeer naming it; the requests queued
// behind it, and later calls, fail with CodeState.
func TestRequestsAfterPeerFailure(t *testing.T) {
	const m = 3
	ts := memnet.NewJob(m, 2*time.Second)
	errs := make(chan error, m)
	// Rank 2 dies once the others have issued their requests: a kill before that would fail
	// the first request, and break the comm, before the later ones were issued.
	var issued sync.WaitGroup
	issued.Add(m - 1)
	for r := 0; r < m; r++ {
		go func(r int) {
			var once sync.Once
			markIssued := func() { once.Do(issued.Done) }
			if r != 2 {
				defer markIssued() // on every path, so that rank 2 never waits for a rank that gave up
			}
			c, err := core.NewComm(ts[r], kx.Options{Rank: r, Size: m, Degrees: "direct", Replication: 1, Timeout: 2 * time.Second})
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			if err := c.Barrier(); err != nil {
				errs <- err
				return
			}
			if r == 2 {
				issued.Wait()
				ts[r].Kill()
				errs <- nil
				return
			}
			var reqs []*core.Request
			for k := 0; k < 3; k++ {
				req, err := c.IAllreduce(make([]byte, 800), make([]byte, 800), kx.F64, kx.Sum)
				if err != nil {
					errs <- fmt.Errorf("rank %d issue %d: %v", r, k, err)
					return
				}
				reqs = append(reqs, req)
			}
			markIssued()
			// The in-memory transport tells every rank of a kill at once: the request fails
			// with CodePeer naming the dead rank, never by waiting out the timeout (CodeTimeout),
			// and those behind it with CodeState, not after timeouts of their own.
			err = reqs[0].Wait()
			if code := kx.CodeOf(err); code != kx.CodePeer || !strings.Contains(err.Error(), "rank 2") {
				errs <- fmt.Errorf("rank %d: first request got %v (code %v), want CodePeer naming rank 2", r, err, code)
				return
			}
			for k := 1; k < 3; k++ {
				if err := reqs[k].Wait(); !errors.Is(err, kx.ErrState) {
					errs <- fmt.Errorf("rank %d: request %d behind the failure got %v, want CodeState", r, k, err)
					return
				}
			}
			if _, err := c.IAllreduce(make([]byte, 8), make([]byte, 8), kx.F64, kx.Sum); !errors.Is(err, kx.ErrState) {
				errs <- fmt.Errorf("rank %d: issue on a broken comm got %v, want CodeState", r, err)
				return
			}
			errs <- nil
		}(r)
	}
	for i := 0; i < m; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// Close with requests in flight finishes them first; afterwards the comm refuses new ones.
func TestCloseWaitsForRequests(t *testing.T) {
	const m, n = 3, 50_000
	dense := denseData(9, m, n)
	errs := runJob(t, m, "direct", func(c *core.Comm) error {
		send := encode(kx.F64, kx.Sum, dense[c.Rank()].vals)
		var reqs []*core.Request
		var recvs [][]byte
		for k := 0; k < 3; k++ {
			recv := make([]byte, len(send))
			r, err := c.IAllreduce(send, recv, kx.F64, kx.Sum)
			if err != nil {
				return err
			}
			reqs, recvs = append(reqs, r), append(recvs, recv)
		}
		if err := c.Close(); err != nil {
			return err
		}
		for k, r := range reqs {
			done, err := r.Test()
			if !done || err != nil {
				return fmt.Errorf("request %d after Close: done=%v err=%v", k, done, err)
			}
			checkResult(t, "iallreduce before close", dense, c.Rank(), kx.F64, kx.Sum, 1, recvs[k])
		}
		if _, err := c.IAllreduce(send, recvs[0], kx.F64, kx.Sum); !errors.Is(err, kx.ErrState) {
			return fmt.Errorf("after Close: got %v, want CodeState", err)
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// The blocking path with nothing in flight runs inline; the non-blocking one pays a goroutine
// hand-off. Compare the two in one run (2-core machine: ratios, not absolute times).
func BenchmarkAllreduce8BBlocking(b *testing.B)    { benchSmallAllreduce(b, false) }
func BenchmarkAllreduce8BNonblocking(b *testing.B) { benchSmallAllreduce(b, true) }

func benchSmallAllreduce(b *testing.B, nonblocking bool) {
	const m = 2
	b.ReportAllocs()
	runJob(b, m, "direct", func(c *core.Comm) error {
		send, recv := make([]byte, 8), make([]byte, 8)
		if c.Rank() == 0 {
			b.ResetTimer()
		}
		for i := 0; i < b.N; i++ {
			if nonblocking {
				r, err := c.IAllreduce(send, recv, kx.F64, kx.Sum)
				if err != nil {
					return err
				}
				if err := r.Wait(); err != nil {
					return err
				}
			} else if err := c.Allreduce(send, recv, kx.F64, kx.Sum); err != nil {
				return err
			}
		}
		return nil
	})
}
