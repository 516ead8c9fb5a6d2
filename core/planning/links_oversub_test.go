package planning

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRanksPerCPU(t *testing.T) {
	for _, tc := range []struct {
		hostOf, cpus []int
		want         float64
	}{
		{[]int{0, 0, 0, 0, 0, 0, 0, 0}, []int{2, 2, 2, 2, 2, 2, 2, 2}, 4},
		{[]int{0, 0}, []int{2, 2}, 1},
		{[]int{0, 0, 0, 0}, []int{8, 8, 1, 8}, 4}, // the fewest CPUs any rank of the host has
		{[]int{0, 0, 2, 2}, []int{4, 4, 1, 1}, 2}, // the most crowded host
		{[]int{0, 1, 2, 3}, []int{1, 1, 1, 1}, 1},
		{[]int{0, 0, 0}, []int{0, 0, 0}, 3}, // a count of 0 is taken as 1 CPU
	} {
		if got := RanksPerCPU(tc.hostOf, tc.cpus); got != tc.want {
			t.Errorf("RanksPerCPU(%v, %v) = %g, want %g", tc.hostOf, tc.cpus, got, tc.want)
		}
	}
	if StatFor(1)([]float64{1, 2, 3}) != 2 || StatFor(4)([]float64{1, 2, 3}) != 1 {
		t.Error("StatFor: want the median where ranks fit their CPUs and the floor beyond")
	}
}

// rates8 are compute rates of the order of this machine's (QuickComputeRates), fixed so that
// the test does not depend on the machine; each case scales them as a noisy probe would.
var rates8 = ComputeRates{SortNs: 58, MergeNs: 10.7, CombineNs: 0.55, GatherNs: 0.65, EncodeNs: 12, DecodeNs: 18}

func scaled(r ComputeRates, f float64) ComputeRates {
	return ComputeRates{r.SortNs * f, r.MergeNs * f, r.CombineNs * f, r.GatherNs * f, r.EncodeNs * f, r.DecodeNs * f}
}

var sparseWork = Workload{ValueBytes: 4, InEqualsOut: true, IndexRatio: 1}

// probeRuns plays the probe of 8 ranks on one host (shifts 1 and 4, each rank's words: two
// round trips and its elapsed time) over a shared-memory link of 5 us + 5 GB/s each way, where
// every round (already a rank's best of three) also waits for a core: an exponential wait whose
// mean changes from run to run (0.5 to 17 ms), as the load of a 2-core machine does. It returns
// the probe's sizes and, per run, the gathered words.
func probeRuns(runs int) (sizes []int, agreed [][][]uint64) {
	const m, stride = 8, 3
	sizes = []int{64}
	for s := 16 << 10; s <= 1<<20; s *= 2 {
		sizes = append(sizes, s)
	}
	rng := rand.New(rand.NewPCG(7, 26))
	for run := range runs {
		mean := 0.5e-3 * math.Pow(34, float64(run)/float64(runs-1)) // 0.5 .. 17 ms
		var per [][]uint64
		for _, s := range sizes {
			var all []uint64
			for range m {
				for range stride - 1 {
					rtt := 2*(5e-6+float64(s)/5e9) + rng.ExpFloat64()*mean
					all = append(all, uint64(rtt*1e9))
				}
				all = append(all, 0)
			}
			per = append(per, all)
		}
		agreed = append(agreed, per)
	}
	return sizes, agreed
}

// fitted is the probe's model of one run as Measure builds it: 8 ranks on one host with cpus
// usable CPUs each.
func fitted(sizes []int, agreed [][]uint64, cpus int) *Links {
	hostOf := make([]int, 8)
	usable := slices.Repeat([]int{cpus}, 8)
	rpc := RanksPerCPU(hostOf, usable)
	stat := StatFor(rpc)
	l := LinksFrom(sizes, agreed, 2, 3, 8, stat)
	l.RanksPerCPU = rpc
	l.RanksPerHost = HostBlocks(hostOf)
	l.Local, l.Remote = HostLinks(sizes, agreed, []int{1, 4}, 3, -1, hostOf, stat)
	l.Finish()
	return l
}

// On a host whose ranks outnumber its CPUs the plan is the same run after run, however much the
// probes' waits for a core move the fitted per-message overhead (0.2-6.8 ms was seen on 8 ranks
// on 2 cores), and the compute rates with them; where the same figures come from ranks that fit
// their CPUs, the planner follows the fitted overhead as before, so the figures do vary enough
// to change its mind.
func TestOversubscribedPlanSteady(t *testing.T) {
	sizes, runs := probeRuns(24)
	for _, density := range []float64{0.2, 0.03, 0.001} {
		crowded := map[string]int{}
		fits := map[string]int{}
		lo, hi := math.Inf(1), 0.0
		for i, agreed := range runs {
			r := scaled(rates8, 0.5+1.5*float64(i%5)/4) // x0.5 .. x2
			l := fitted(sizes, agreed, 2)
			link, cl := Pricing(l)
			ds, _, err := PlanDegreesByCost(1e7, density, 8, DefaultAlpha, link, cl, r, sparseWork)
			if err != nil {
				t.Fatal(err)
			}
			crowded[fmt.Sprint(ds)]++
			old := fitted(sizes, agreed, 8) // the same round trips, from ranks that fit
			lo, hi = min(lo, old.OverheadS), max(hi, old.OverheadS)
			link, cl = Pricing(old)
			ds, _, err = PlanDegreesByCost(1e7, density, 8, DefaultAlpha, link, cl, r, sparseWork)
			if err != nil {
				t.Fatal(err)
			}
			fits[fmt.Sprint(ds)]++
		}
		if len(crowded) != 1 || crowded["[8]"] != len(runs) {
			t.Errorf("density %g, 8 ranks on 2 CPUs: plans %v over %d probe runs, want [8] every time", density, crowded, len(runs))
		}
		if density >= 0.03 && (len(fits) < 2 || lo > 0.3e-3 || hi < 5e-3) {
			t.Errorf("density %g: the fitted overheads %.2g-%.2g s gave plans %v where ranks fit: the runs do not vary as on a crowded host", density, lo, hi, fits)
		}
		t.Logf("density %g: fitted overhead %.2g-%.2g ms; plans oversubscribed %v, ranks fitting %v", density, lo*1e3, hi*1e3, crowded, fits)
	}
}

// The priced link of one oversubscribed host has no per-message overhead, whatever was
// measured, so its plan depends on neither the overhead nor the rate; between hosts the
// network's overhead still counts, and where ranks fit nothing changes.
func TestPricing(t *testing.T) {
	for _, ov := range []float64{20e-6, 0.2e-3, 1e-3, 6.8e-3, 50e-3} {
		for _, rate := range []float64{0.3e9, 1e9, 4e9, 20e9} {
			meas := &Links{OverheadS: ov, BytesPerSec: rate}
			one := &Links{OverheadS: ov, BytesPerSec: rate, RanksPerHost: 8, RanksPerCPU: 4, Local: meas}
			link, cl := Pricing(one)
			if link.OverheadS != 0 || link.BytesPerSec != rate || cl.Slowdown != 4 || cl.RanksPerHost != 1 {
				t.Fatalf("one crowded host: priced %+v, %+v", link, cl)
			}
			for _, d := range []float64{0.2, 0.03, 1e-4} {
				if ds, _, _ := PlanDegreesByCost(1e7, d, 8, DefaultAlpha, link, cl, rates8, sparseWork); !slices.Equal(ds, []int{8}) {
					t.Errorf("one crowded host, overhead %g, rate %g, density %g: %v, want [8]", ov, rate, d, ds)
				}
			}
			// Ranks that fit: the measured model itself, as before.
			fit := *one
			fit.RanksPerCPU = 1
			if link, cl := Pricing(&fit); link != &fit || cl != (Cluster{RanksPerHost: 1, Slowdown: 1}) {
				t.Errorf("one host that fits: priced %+v, %+v", link, cl)
			}
		}
	}
	// Two hosts of 4 ranks in blocks: a slow network keeps its overhead and the plan stays a
	// butterfly that crosses it in few messages; the host links go to bytes only when crowded.
	local := &Links{OverheadS: 3e-3, BytesPerSec: 4e9}
	remote := &Links{OverheadS: 20e-3, BytesPerSec: 0.1e9}
	two := &Links{OverheadS: 10e-3, BytesPerSec: 1e9, RanksPerHost: 4, RanksPerCPU: 2, Local: local, Remote: remote}
	link, cl := Pricing(two)
	if link != remote || cl.RanksPerHost != 4 || cl.Slowdown != 2 || cl.Local.OverheadS != 0 || cl.Local.BytesPerSec != 4e9 {
		t.Errorf("two crowded hosts: priced %+v, %+v", link, cl)
	}
	ds, _, _ := PlanDegreesByCost(1e7, 0.03, 8, DefaultAlpha, link, cl, rates8, sparseWork)
	if slices.Equal(ds, []int{8}) {
		t.Errorf("two crowded hosts over a slow network: %v, want fewer messages across it than direct", ds)
	}
	two.RanksPerCPU = 0.5
	if link, cl := Pricing(two); link != remote || cl != (Cluster{RanksPerHost: 4, Local: local, Slowdown: 1}) {
		t.Errorf("two hosts that fit: priced %+v, %+v", link, cl)
	}
}
