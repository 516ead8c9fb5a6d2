// Command gengraph writes a deterministic power-law directed graph as a
// gzipped text edge list ("src dst\n", ids in 0..n-1), the bundled input of
// the PageRank example (examples/c/pagerank.c).
//
// Model (Chung–Lu with Zipf weights):
//
//   - vertex i has an out-weight (po(i)+1)^-beta_out and an in-weight
//     (pi(i)+1)^-beta_in, where po and pi are two independent random
//     permutations (so popular sources and popular targets differ);
//   - every vertex first gets one in-edge whose source is drawn by
//     out-weight (so every id 0..n-1 appears in the file and the union of
//     the non-zero rows of X covers all vertices, as the paper requires);
//   - then edges (src by out-weight, dst by in-weight) are drawn until the
//     graph has m distinct edges; self loops and duplicates are dropped.
//
// With weights k^-beta the expected degrees follow a power law with
// exponent 1+1/beta (beta_in 0.85 -> ~2.2, beta_out 0.70 -> ~2.4), and many
// low-weight vertices end up with out-degree 0 (dangling vertices).
// Ids are shuffled, edges are written sorted by (src, dst) (that compresses
// well), and a first comment line records the parameters:
//
//	# kylix powerlaw graph n=120000 m=1200000 seed=20240601 ...
//
// Readers skip lines starting with '#'; n= in that line is authoritative.
//
// Usage:
//
//	go run ./examples/tools/gengraph -n 120000 -m 1200000 -seed 20240601 \
//	    -o examples/data/powerlaw_graph.el.gz
package main

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
)

func main() {
	n := flag.Int("n", 120000, "number of vertices")
	m := flag.Int("m", 1200000, "number of distinct directed edges")
	seed := flag.Uint64("seed", 20240601, "random seed")
	betaIn := flag.Float64("beta-in", 0.85, "Zipf exponent of in-weights")
	betaOut := flag.Float64("beta-out", 0.70, "Zipf exponent of out-weights")
	out := flag.String("o", "examples/data/powerlaw_graph.el.gz", "output file (.gz is gzipped)")
	stats := flag.Bool("stats", true, "print degree statistics to stderr")
	flag.Parse()
	if *n < 2 || *m < *n || int64(*m) > int64(*n)*int64(*n-1)/2 {
		fail(fmt.Errorf("need n >= 2 and n <= m <= n(n-1)/2"))
	}
	edges := generate(*n, *m, *seed, *betaIn, *betaOut)
	if err := write(*out, *n, edges, fmt.Sprintf("seed=%d beta_in=%g beta_out=%g", *seed, *betaIn, *betaOut)); err != nil {
		fail(err)
	}
	if *stats {
		printStats(os.Stderr, *n, edges)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gengraph:", err)
	os.Exit(1)
}

// sampler draws i with probability w[i]/sum(w) by binary search on the prefix sums.
type sampler struct{ cum []float64 }

func newSampler(w []float64) sampler {
	cum := make([]float64, len(w))
	s := 0.0
	for i, x := range w {
		s += x
		cum[i] = s
	}
	return sampler{cum}
}

func (s sampler) draw(r *rand.Rand) int {
	x := r.Float64() * s.cum[len(s.cum)-1]
	i := sort.SearchFloat64s(s.cum, x)
	if i >= len(s.cum) {
		i = len(s.cum) - 1
	}
	return i
}

func zipfWeights(r *rand.Rand, n int, beta float64) []float64 {
	perm := r.Perm(n)
	w := make([]float64, n)
	for i := range w {
		w[i] = math.Pow(float64(perm[i]+1), -beta)
	}
	return w
}

func generate(n, m int, seed uint64, betaIn, betaOut float64) []uint64 {
	r := rand.New(rand.NewPCG(seed, 0x6b796c6978)) // "kylix"
	outS := newSampler(zipfWeights(r, n, betaOut))
	inS := newSampler(zipfWeights(r, n, betaIn))
	label := r.Perm(n) // final id shuffle
	seen := make(map[uint64]struct{}, m)
	edges := make([]uint64, 0, m)
	add := func(s, d int) bool {
		if s == d {
			return false
		}
		k := uint64(label[s])<<32 | uint64(label[d])
		if _, ok := seen[k]; ok {
			return false
		}
		seen[k] = struct{}{}
		edges = append(edges, k)
		return true
	}
	for d := 0; d < n; d++ { // one in-edge per vertex
		for !add(outS.draw(r), d) {
		}
	}
	for len(edges) < m {
		add(outS.draw(r), inS.draw(r))
	}
	slices.Sort(edges)
	return edges
}

func write(path string, n int, edges []uint64, params string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	var w *bufio.Writer
	var zw *gzip.Writer
	if len(path) > 3 && path[len(path)-3:] == ".gz" {
		zw, _ = gzip.NewWriterLevel(f, gzip.BestCompression)
		w = bufio.NewWriterSize(zw, 1<<20)
	} else {
		w = bufio.NewWriterSize(f, 1<<20)
	}
	fmt.Fprintf(w, "# kylix powerlaw graph n=%d m=%d %s\n", n, len(edges), params)
	buf := make([]byte, 0, 32)
	for _, e := range edges {
		buf = strconv.AppendUint(buf[:0], e>>32, 10)
		buf = append(buf, ' ')
		buf = strconv.AppendUint(buf, e&0xffffffff, 10)
		buf = append(buf, '\n')
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func printStats(w *os.File, n int, edges []uint64) {
	in := make([]int, n)
	out := make([]int, n)
	for _, e := range edges {
		out[e>>32]++
		in[e&0xffffffff]++
	}
	describe := func(name string, deg []int) {
		d := slices.Clone(deg)
		slices.Sort(d)
		zero := 0
		for _, x := range d {
			if x == 0 {
				zero++
			}
		}
		// Fraction of edges on the top 1% of vertices, and a crude log-log
		// slope of the complementary CDF between degree 10 and 1000.
		top := 0
		for _, x := range d[n-n/100:] {
			top += x
		}
		ccdf := func(k int) float64 {
			i := sort.SearchInts(d, k)
			return float64(n-i) / float64(n)
		}
		slope := (math.Log(ccdf(1000)) - math.Log(ccdf(10))) / (math.Log(1000) - math.Log(10))
		fmt.Fprintf(w, "%s-degree: max %d, median %d, zero %d, top 1%% of vertices hold %.1f%% of edges, CCDF slope(10..1000) %.2f (power-law exponent ~%.2f)\n",
			name, d[n-1], d[n/2], zero, 100*float64(top)/float64(len(edges)), slope, 1-slope)
	}
	fmt.Fprintf(w, "n=%d m=%d\n", n, len(edges))
	describe("in", in)
	describe("out", out)
}
