package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"kylix/core/kx"
	"kylix/core/planning"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestPermutationIsBijection(t *testing.T) {
	for _, n := range []int64{1, 2, 3, 5, 1000, 1024, 1025, 12345} {
		p := newPermutation(n)
		seen := make([]bool, n)
		for x := int64(0); x < n; x++ {
			y := p.at(uint64(x))
			if y >= uint64(n) || seen[y] {
				t.Fatalf("n=%d: perm(%d)=%d repeats or is out of range", n, x, y)
			}
			seen[y] = true
		}
	}
}

// The sampler draws each feature with probability 1-exp(-λ r^-α): the mean set size is D·n,
// and the head features appear as often as they should.
func TestPowerLawSample(t *testing.T) {
	const n, d, alpha, reps = 200000, 0.01, 1.2, 40
	lambda, err := planning.SolveLambda(n, d, alpha)
	if err != nil {
		t.Fatal(err)
	}
	perm := newPermutation(n)
	total := 0
	head := map[int64]int{} // ids of ranks 1 and 50
	id1, id50 := int64(perm.at(0)), int64(perm.at(49))
	for i := range reps {
		s := powerLawSample(n, lambda, alpha, rand.New(rand.NewPCG(9, uint64(i))), perm)
		total += len(s)
		for _, x := range s {
			if x == id1 || x == id50 {
				head[x]++
			}
		}
	}
	mean := float64(total) / reps
	if want := d * n; math.Abs(mean-want) > 0.01*want {
		t.Errorf("mean set size %.1f, want %.1f", mean, want)
	}
	p50 := -math.Expm1(-lambda * math.Pow(50, -alpha))
	if got := float64(head[id50]) / reps; math.Abs(got-p50) > 4*math.Sqrt(p50*(1-p50)/reps)+1e-9 {
		t.Errorf("feature 50 present in %.3f of the sets, want %.3f", got, p50)
	}
}

// predictLayers reproduces the planner's figures for the degrees the planner picks.
func TestPredictLayersMatchesPlanner(t *testing.T) {
	ds, preds, err := planning.PlanDegrees(1e8, 0.05, 64, 1, 1<<20, 8)
	if err != nil {
		t.Fatal(err)
	}
	md, err := predictLayers(1e8, 0.05, 1, ds, 8)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range preds {
		if q := md.Layers[i]; math.Abs(q.ElemsPerNode-p.ElemsPerNode) > 1e-9*p.ElemsPerNode || q.Degree != p.Degree ||
			math.Abs(q.MessageBytes-p.MessageBytes) > 1e-9*p.MessageBytes {
			t.Errorf("layer %d: %+v, planner %+v", i, q, p)
		}
	}
}

// TestSimulationMatchesModel: the real core on Poisson–power-law data moves what Proposition 4.1
// predicts, layer by layer, within 10%: distinct keys per node going into each layer (out and in
// sets), the mean reduce message (keys/node·bytes/d), the mean config message, and the keys
// left at the bottom.
func TestSimulationMatchesModel(t *testing.T) {
	cases := []struct {
		ranks   int
		degrees string
		n       int64
		density float64
		alpha   float64
	}{
		{16, "4x4", 200000, 0.02, 1.0},
		{64, "8x4x2", 200000, 0.01, 1.0},
		{64, "4x4x4", 100000, 0.03, 1.5},
		{256, "4x4x4x4", 100000, 0.01, 1.0},
	}
	for _, tc := range cases {
		t.Run(tc.degrees, func(t *testing.T) {
			ds, err := kx.ParseDegreesSpec(tc.degrees, tc.ranks)
			if err != nil {
				t.Fatal(err)
			}
			const bpv = 8
			md, err := predictLayers(tc.n, tc.density, tc.alpha, ds, bpv)
			if err != nil {
				t.Fatal(err)
			}
			res, err := simulate(simConfig{N: tc.n, Density: tc.density, Alpha: tc.alpha, Ranks: tc.ranks,
				Degrees: ds, Width: bpv / 4, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			printSimulation(&buf, md, res, tc.ranks)
			t.Logf("\n%s", buf.String())
			within := func(what string, pred, meas float64) {
				t.Helper()
				if e := math.Abs(meas-pred) / pred; !(e <= 0.10) {
					t.Errorf("%s: measured %.6g, predicted %.6g (%.1f%% off)", what, meas, pred, 100*e)
				}
			}
			for i, l := range res.Layers {
				p := md.Layers[i]
				within("out keys/node layer "+itoa(i+1), p.ElemsPerNode, l.OutKeys)
				within("in keys/node layer "+itoa(i+1), p.ElemsPerNode, l.InKeys)
				within("down message layer "+itoa(i+1), p.MessageBytes, l.DownMsgBytes())
				within("config message layer "+itoa(i+1), predConfigMsg(p.ElemsPerNode, p.Degree), l.ConfigMsgBytes())
				// The layer's total volume (Fig. 5) is every node's keys going in, own share included.
				within("volume layer "+itoa(i+1), float64(tc.ranks)*p.ElemsPerNode, float64(l.VolumeOutKeys))
			}
			within("bottom out keys/node", md.BottomElems, res.BottomOut)
			within("bottom in keys/node", md.BottomElems, res.BottomIn)
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// kylix simulate end to end: a simulation with an SVG chart that is well-formed XML with a bar per
// layer and series.
func TestPlanSimulateCLI(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "k.svg")
	s, errs, code := tool("simulate", "--features", "1e5", "--density", "0.02", "--ranks", "8", "--degrees", "4x2",
		"--svg", svg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"degrees 4x2 (given)", "simulated 8 ranks", "bottom", "wrote " + svg} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	rects := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			rects++
		}
	}
	// background + 2 legend swatches + (2 layers + bottom) x (predicted, measured)
	if rects != 1+2+3*2 {
		t.Errorf("SVG has %d rects, want 9", rects)
	}
	if _, errs, code := tool("simulate", "--features", "1e6", "--density", "0.5", "--ranks", "1024"); code != 2 ||
		!strings.Contains(errs, "--max-keys") {
		t.Errorf("an oversized simulation was not refused: exit %d, %q", code, errs)
	}
}
