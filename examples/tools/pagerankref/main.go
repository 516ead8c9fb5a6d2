// Command pagerankref is the single-process reference for examples/c/pagerank.c:
// plain power iteration over the whole graph, written independently of the
// distributed code, with the same formula:
//
//	v_0[j]     = 1/n
//	D_t        = sum of v_t[j] over dangling j (out-degree 0)
//	v_{t+1}[j] = (1-d)/n + d * ( sum_{i->j} v_t[i]/outdeg(i)  +  D_t/n )
//
// with damping d = 0.85; the scores always sum to 1. It reads the same edge
// list format ("src dst" lines, '#' comment lines, n= in the first comment,
// else n = max id + 1; a .gz file is decompressed) and writes the same output:
// "top10: ..." on stdout and, with -out, one "vertex score" line per vertex.
//
// Usage: go run ./examples/tools/pagerankref [-iters 20] [-out FILE] GRAPH
package main

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

const damping = 0.85

func main() {
	iters := flag.Int("iters", 20, "number of iterations")
	out := flag.String("out", "", "write all scores to this file")
	flag.Parse()
	if flag.NArg() != 1 || *iters < 1 {
		fmt.Fprintln(os.Stderr, "usage: pagerankref [-iters N] [-out FILE] GRAPH")
		os.Exit(2)
	}
	n, src, dst, err := readGraph(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "pagerankref:", err)
		os.Exit(1)
	}
	v := pagerank(n, src, dst, *iters)
	top := topK(v, 10)
	var b strings.Builder
	b.WriteString("top10:")
	for _, j := range top {
		fmt.Fprintf(&b, " %d", j)
	}
	fmt.Println(b.String())
	for i, j := range top {
		fmt.Printf("%3d. vertex %d score %.12g\n", i+1, j, v[j])
	}
	if *out != "" {
		if err := writeScores(*out, v, *iters); err != nil {
			fmt.Fprintln(os.Stderr, "pagerankref:", err)
			os.Exit(1)
		}
	}
}

var nRe = regexp.MustCompile(`\bn=(\d+)`)

func readGraph(path string) (n int, src, dst []int32, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return 0, nil, nil, err
		}
		defer zr.Close()
		r = zr
	}
	sc := bufio.NewScanner(bufio.NewReaderSize(r, 1<<20))
	declared, maxID := -1, -1
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		if s[0] == '#' {
			if m := nRe.FindStringSubmatch(s); m != nil && declared < 0 {
				declared, _ = strconv.Atoi(m[1])
			}
			continue
		}
		fs := strings.Fields(s)
		if len(fs) < 2 {
			return 0, nil, nil, fmt.Errorf("%s:%d: want \"src dst\"", path, line)
		}
		a, err1 := strconv.ParseInt(fs[0], 10, 32)
		b, err2 := strconv.ParseInt(fs[1], 10, 32)
		if err1 != nil || err2 != nil || a < 0 || b < 0 {
			return 0, nil, nil, fmt.Errorf("%s:%d: bad vertex id", path, line)
		}
		src = append(src, int32(a))
		dst = append(dst, int32(b))
		maxID = max(maxID, int(a), int(b))
	}
	if err := sc.Err(); err != nil {
		return 0, nil, nil, err
	}
	n = max(declared, maxID+1)
	if n <= 0 {
		return 0, nil, nil, fmt.Errorf("%s: no edges", path)
	}
	return n, src, dst, nil
}

func pagerank(n int, src, dst []int32, iters int) []float64 {
	outdeg := make([]int, n)
	for _, s := range src {
		outdeg[s]++
	}
	v := make([]float64, n)
	for j := range v {
		v[j] = 1 / float64(n)
	}
	y := make([]float64, n)
	for t := 0; t < iters; t++ {
		dangling := 0.0
		for j, d := range outdeg {
			if d == 0 {
				dangling += v[j]
			}
		}
		clear(y)
		for e := range src {
			y[dst[e]] += v[src[e]] / float64(outdeg[src[e]])
		}
		base := (1-damping)/float64(n) + damping*dangling/float64(n)
		for j := range v {
			v[j] = base + damping*y[j]
		}
	}
	return v
}

// topK: highest scores first, ties broken by smaller vertex id.
func topK(v []float64, k int) []int {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool {
		if v[idx[a]] != v[idx[b]] {
			return v[idx[a]] > v[idx[b]]
		}
		return idx[a] < idx[b]
	})
	return idx[:min(k, len(idx))]
}

func writeScores(path string, v []float64, iters int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "# pagerank n=%d iters=%d damping=%g\n", len(v), iters, damping)
	for j, x := range v {
		fmt.Fprintf(w, "%d %.17g\n", j, x)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
