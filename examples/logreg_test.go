package examples

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// logreg: examples/c/logreg.c compares three ways to sync a data-parallel model (allreduce
// every step, kylix_mix every step, allreduce every k steps). doBuild compiles only the
// original examples, so logreg (and elastic_logreg) are compiled here, once each, against the
// same library and header.

var (
	extraMu    sync.Mutex
	extraBuilt = map[string]*extraBuild{}
)

type extraBuild struct {
	once sync.Once
	bin  string
	err  error
}

func buildLogreg(t *testing.T) string { return buildExample(t, "logreg") }

// buildExample compiles examples/c/<name>.c into the test's build directory, once.
func buildExample(t *testing.T, name string) string {
	t.Helper()
	b := setup(t)
	extraMu.Lock()
	e := extraBuilt[name]
	if e == nil {
		e = &extraBuild{}
		extraBuilt[name] = e
	}
	extraMu.Unlock()
	e.once.Do(func() {
		exDir, err := os.Getwd()
		if err != nil {
			e.err = err
			return
		}
		libDir, incDir := b.dir, filepath.Join(filepath.Dir(exDir), "include")
		if kb := os.Getenv("KYLIX_BUILD"); kb != "" {
			libDir, _ = filepath.Abs(kb)
			for _, d := range []string{libDir, filepath.Join(libDir, "include")} {
				if fileExists(filepath.Join(d, "kylix.h")) {
					incDir = d
					break
				}
			}
		}
		bin := filepath.Join(b.dir, name)
		out, err := run(exDir, 2*time.Minute, nil, "gcc", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror",
			"-I", incDir, "-o", bin, filepath.Join("c", name+".c"), "-L", libDir, "-lkylix", "-lm",
			"-Wl,-rpath,"+libDir)
		if err != nil {
			e.err = fmt.Errorf("compiling %s.c: %v\n%s", name, err, out)
			return
		}
		e.bin = bin
	})
	if e.err != nil {
		t.Fatal(e.err)
	}
	return e.bin
}

var (
	logregRowRe   = regexp.MustCompile(`(?m)^\s*(\d+) \|((?:\s+[0-9.]+\s+[0-9.]+\s*\|?){3})\s*$`)
	logregFinalRe = regexp.MustCompile(`(?m)^final (\w+): loss ([0-9.]+) -> ([0-9.]+) in ([0-9.]+) ms`)
)

// On 4 ranks with a binary butterfly (2 mixing layers) the test loss goes down with every
// method, and rank 0 prints the loss-vs-time table.
func TestLogReg4Ranks(t *testing.T) {
	b := setup(t)
	bin := buildLogreg(t)
	args := []string{"-n", "4", "--degrees", "binary", "--job-timeout", jobTimeout, "--",
		bin, "--steps", "200", "--every", "20"}
	start := time.Now()
	out, err := run(".", runLimit, nil, b.kylixrun, args...)
	t.Logf("kylixrun %s (%.1f s):\n%s", strings.Join(args, " "), time.Since(start).Seconds(), out)
	if err != nil {
		t.Fatalf("logreg on 4 ranks failed: %v", err)
	}
	if !strings.Contains(out, "logreg: ranks=4 ") || !strings.Contains(out, " mix-layers=2 period=2") {
		t.Errorf("rank 0 did not report ranks=4, mix-layers=2, period=2")
	}
	rows := logregRowRe.FindAllStringSubmatch(out, -1)
	if len(rows) != 11 {
		t.Fatalf("want 11 table rows (steps 0, 20, ..., 200) from rank 0, got %d", len(rows))
	}
	// loss and ms per method, first and last row
	cells := func(r []string) []float64 {
		var v []float64
		for _, f := range strings.Fields(strings.ReplaceAll(r[2], "|", " ")) {
			x, _ := strconv.ParseFloat(f, 64)
			v = append(v, x)
		}
		return v
	}
	first, last := cells(rows[0]), cells(rows[len(rows)-1])
	if len(first) != 6 || len(last) != 6 {
		t.Fatalf("table rows do not hold 3 x (loss, ms): %q", rows[0][0])
	}
	finals := logregFinalRe.FindAllStringSubmatch(out, -1)
	if len(finals) != 3 {
		t.Fatalf("want 3 \"final METHOD: loss A -> B\" lines, got %d", len(finals))
	}
	for i, f := range finals {
		name := f[1]
		if want := []string{"allreduce", "mix", "periodic"}[i]; name != want {
			t.Errorf("final line %d is for %q, want %q", i, name, want)
		}
		before, _ := strconv.ParseFloat(f[2], 64)
		after, _ := strconv.ParseFloat(f[3], 64)
		if math.Abs(before-math.Ln2) > 1e-6 || before != first[2*i] || after != last[2*i] {
			t.Errorf("%s: final line %.6f -> %.6f does not match the table (%.6f -> %.6f) or starts off ln 2",
				name, before, after, first[2*i], last[2*i])
		}
		if !(after < 0.9*before) {
			t.Errorf("%s: the test loss did not go down: %.6f -> %.6f (want below 0.9x)", name, before, after)
		}
		if ms := last[2*i+1]; !(ms > 0) {
			t.Errorf("%s: training time %.1f ms, want > 0", name, ms)
		}
	}
}
