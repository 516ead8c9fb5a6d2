package core_test

import (
	"bytes"
	"fmt"
	"kylix/core/keyset"
	"kylix/core/kx"
	"kylix/core/planning"
	"kylix/netio/memnet"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"kylix/core"
)

// Compression changes how index lists travel, never what arrives: every result is bitwise the
// same with compress off, lz4 and auto (auto on a slow link, where it compresses, and on the
// in-memory transport's measured "link"), on random floats whose sums change bits with any
// change in order.
func TestCompressBitwise(t *testing.T) {
	plans := []struct {
		m       int
		degrees string
		k       int
	}{{2, "direct", 3000}, {3, "direct", 2000}, {4, "2x2", 20000}, {5, "direct", 1500}, {6, "3x2", 2000}, {8, "auto", 3000}}
	modes := []string{"off", "lz4", "auto-slow", "auto"}
	for _, pl := range plans {
		t.Run(fmt.Sprintf("m%d_%s", pl.m, pl.degrees), func(t *testing.T) {
			var want [][]byte
			for _, mode := range modes {
				compress := strings.TrimSuffix(mode, "-slow")
				j := newLiveJob(t, pl.m, kx.Options{Degrees: pl.degrees, Compress: compress, Threads: 2})
				if mode == "auto-slow" {
					for _, c := range j.comms {
						core.SetTestLinks(c, 100e-6, 25e6) // 200 Mbit/s
					}
				}
				got := make([][][]byte, pl.m)
				j.each(t, func(r int, c *core.Comm) error {
					for _, width := range []int{1, 3} {
						rd := randomData(int64(pl.m*10+width), r, 10*pl.k, pl.k, width)
						p, err := c.Config(rd.out, rd.in)
						if err != nil {
							return err
						}
						for _, d := range []kx.Dtype{kx.F32, kx.F64} {
							in := make([]byte, len(rd.in)*width*d.Size())
							if err := p.Reduce(encodeRaw(d, rd.vals), in, d, kx.Sum, width); err != nil {
								return err
							}
							in2 := make([]byte, len(in))
							if _, err := c.ConfigReduce(rd.out, encodeRaw(d, rd.vals), rd.in, in2, d, kx.Sum, width, false); err != nil {
								return err
							}
							got[r] = append(got[r], in, in2)
						}
						p.Free()
					}
					return nil
				})
				for r, c := range j.comms {
					st := c.Stats()
					packed := st.Compression.Active
					// Plain auto decides on the in-memory transport's measured rate, which on
					// shared cores can be low: either way is right there.
					if want := mode == "lz4" || mode == "auto-slow"; packed != want && mode != "auto" || mode == "off" && packed {
						t.Errorf("%s rank %d: compression active %v, want %v", mode, r, packed, want)
					}
					// auto weighs the codec's measured speed: slowed down (the race detector),
					// it rightly compresses fewer messages.
					if mode == "lz4" && st.Compression.Ratio < 1.5 {
						t.Errorf("%s rank %d: index ratio %.2f", mode, r, st.Compression.Ratio)
					}
					if len(st.Plans) == 0 || len(st.Plans[0].Layers) == 0 {
						t.Fatalf("%s rank %d: no layer statistics", mode, r)
					}
					ix := st.Plans[0].Layers[0].Index
					if ix.RawSent == 0 || mode == "lz4" && ix.WireSent >= ix.RawSent || mode == "off" && ix.WireSent != ix.RawSent {
						t.Errorf("%s rank %d: layer 0 index bytes %+v", mode, r, ix)
					}
					var flat [][]byte
					for _, b := range got[r] {
						flat = append(flat, b)
					}
					if mode == "off" {
						want = append(want, flat...)
						continue
					}
					for i, b := range flat {
						if !bytes.Equal(b, want[r*len(flat)+i]) {
							t.Fatalf("%s rank %d result %d differs from compress=off", mode, r, i)
						}
					}
				}
			}
		})
	}
}

// With compress=lz4 every dtype and op still matches the brute force, config_reduce included.
func TestCompressAgainstBruteForce(t *testing.T) {
	for _, pl := range []struct {
		m       int
		degrees string
	}{{4, "2x2"}, {6, "2x3"}, {7, "direct"}} {
		const n = 5000
		all := make([]rankData, pl.m)
		for r := range all {
			all[r] = genRank(int64(pl.m), r, n, 400+50*r, 300+30*r, 2)
		}
		j := newLiveJob(t, pl.m, kx.Options{Degrees: pl.degrees, Compress: "lz4"})
		j.each(t, func(_ int, c *core.Comm) error { return checkEveryDtypeOp(t, c, all, 2, true) })
	}
}

// corruptingTransport flips a byte in the compressed index list of every config message rank
// `bad` sends.
type corruptingTransport struct {
	kx.Transport
	bad int
}

func (ct corruptingTransport) Sender() kx.Sender { return corruptingSender{ct.Transport.Sender(), ct} }

// corruptingSender is corruptingTransport's Sender.
type corruptingSender struct {
	kx.Sender
	ct corruptingTransport
}

func (cs corruptingSender) Send(to int, tag kx.Tag, bufs ...[]byte) error {
	ct := cs.ct
	if ct.Rank() == ct.bad && tag.Phase == kx.PhaseConfig && len(bufs) > 0 && len(bufs[0]) > keyset.ConfigListStart(bufs[0])+8 {
		b := bytes.Clone(bufs[0])
		b[keyset.ConfigListStart(b)+4] ^= 0xff // inside the out list's first chunk header
		bufs = append([][]byte{b}, bufs[1:]...)
	}
	return cs.Sender.Send(to, tag, bufs...)
}

// A corrupt compressed payload fails the config with CodeInternal naming the sender on the
// ranks that received it: no crash, no hang.
func TestCompressCorruptPayload(t *testing.T) {
	const m, bad = 4, 2
	ts := memnet.NewJob(m, jobTimeout)
	errs := make([]error, m)
	var wg sync.WaitGroup
	for r := 0; r < m; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := kx.Options{Rank: r, Size: m, Degrees: "direct", Replication: 1, Timeout: jobTimeout, Compress: "lz4"}
			c, err := core.NewComm(corruptingTransport{ts[r], bad}, opts)
			if err != nil {
				errs[r] = err
				return
			}
			defer c.Close()
			rd := randomData(5, r, 100000, 5000, 1)
			_, errs[r] = c.Config(rd.out, rd.in)
		}()
	}
	wg.Wait()
	named := 0
	for r, err := range errs {
		if err == nil && r != bad { // the sender may finish before the receivers' abort reaches it
			t.Fatalf("rank %d: config succeeded on a corrupt message", r)
		}
		if kx.CodeOf(err) == kx.CodeInternal && strings.Contains(err.Error(), fmt.Sprintf("rank %d sent a corrupt", bad)) {
			named++
		}
	}
	if named == 0 {
		t.Fatalf("no rank reported rank %d's corrupt list: %v", bad, errs)
	}
}

// powerLawRank is one rank's Poisson-power-law feature set of n features (paper eq. 3: feature
// r present with probability 1-exp(-λ r^-α)), ids scattered by a permutation every rank shares,
// in order of popularity (so the caller order is random in id, as in kylix bench).
func powerLawRank(t *testing.T, n int, density float64, ids []int, seed uint64) []int64 {
	lambda, err := planning.SolveLambda(int64(n), density, planning.DefaultAlpha)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	var set []int64
	for r := 1; r <= n; r++ {
		if rng.Float64() < -math.Expm1(-lambda*math.Pow(float64(r), -planning.DefaultAlpha)) {
			set = append(set, int64(ids[r-1]))
		}
	}
	return set
}

// Compressed configs pay on the whole message, not only on its index lists: with degrees
// pinned (no link probe), the config messages' bytes (every layer, every rank, from the stats)
// shrink at least 3x with compress=lz4 at densities 0.03 and 0.2 of power-law data, and the
// reduces' results stay bitwise those of compress=off.
func TestCompressConfigWireBytes(t *testing.T) {
	const m, n = 4, 1 << 19
	ids := rand.New(rand.NewPCG(3, 4)).Perm(n)
	for _, density := range []float64{0.03, 0.2} {
		for _, degrees := range []string{"direct", "2x2"} {
			data := make([][2][]int64, m)
			for r := range data {
				data[r] = [2][]int64{powerLawRank(t, n, density, ids, uint64(2*r+1)), powerLawRank(t, n, density, ids, uint64(2*r+2))}
				data[r][0] = append(data[r][0], data[r][0][:len(data[r][0])/50]...) // a few repeated out indices
			}
			bytesSent := map[string]uint64{}
			var index [2]uint64 // lz4's index bytes, raw and wire
			var results [][][]byte
			for _, mode := range []string{"off", "lz4"} {
				j := newLiveJob(t, m, kx.Options{Degrees: degrees, Compress: mode, Threads: 2})
				got := make([][]byte, m)
				j.each(t, func(r int, c *core.Comm) error {
					out, in := data[r][0], data[r][1]
					p, err := c.Config(out, in)
					if err != nil {
						return err
					}
					defer p.Free()
					vals := make([]float64, len(out))
					rng := rand.New(rand.NewPCG(uint64(r), 9))
					for i := range vals {
						vals[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(8)-4))
					}
					got[r] = make([]byte, len(in)*4)
					return p.Reduce(encodeRaw(kx.F32, vals), got[r], kx.F32, kx.Sum, 1)
				})
				for _, c := range j.comms {
					st := c.Stats()
					if st.Links != nil || len(st.Plans) != 1 {
						t.Fatalf("%s: a link probe ran, or %d plans", mode, len(st.Plans))
					}
					for _, l := range st.Plans[0].Layers {
						bytesSent[mode] += l.Config.BytesSent
						if mode == "lz4" {
							index[0], index[1] = index[0]+l.Index.RawSent, index[1]+l.Index.WireSent
						}
					}
				}
				results = append(results, got)
			}
			for r := range results[0] {
				if !bytes.Equal(results[0][r], results[1][r]) {
					t.Fatalf("density %g %s rank %d: lz4's results differ from compress=off", density, degrees, r)
				}
			}
			ratio := float64(bytesSent["off"]) / float64(bytesSent["lz4"])
			t.Logf("density %g, %s: config bytes sent off %d, lz4 %d: %.2fx (index lists %.2fx)",
				density, degrees, bytesSent["off"], bytesSent["lz4"], ratio, float64(index[0])/float64(index[1]))
			if ratio < 3 {
				t.Errorf("density %g, %s: compress=lz4 shrinks config's bytes %.2fx, want >= 3x", density, degrees, ratio)
			}
		}
	}
}
