package core_test

import (
	"fmt"
	"kylix/core/kx"
	"kylix/core/planning"
	"math"
	"reflect"
	"testing"

	"kylix/core"
)

// The first degrees=auto config measures the links once, and every rank ends with the same
// model, the same min_packet and the same degrees.
func TestLinksAgree(t *testing.T) {
	for _, m := range []int{2, 4, 5} {
		t.Run(fmt.Sprint(m), func(t *testing.T) {
			j := newLiveJob(t, m, kx.Options{Degrees: "auto", MinPacket: -1, Compress: "off"})
			degrees := make([][]int, m)
			j.each(t, func(r int, c *core.Comm) error {
				sets := benchSets(m, 20000, 400000)
				for range 2 {
					p, err := c.Config(sets[r], sets[r])
					if err != nil {
						return err
					}
					degrees[r] = p.Degrees()
					p.Free()
				}
				return nil
			})
			first := j.comms[0].Stats()
			if first.Links == nil || len(first.Links.Points) == 0 {
				t.Fatalf("rank 0 has no link model: %+v", first.Links)
			}
			if l := first.Links; l.MinPacket <= 0 || l.BytesPerSec <= 0 || l.LatencyS <= 0 || l.Measured != m*min(2, m-1) {
				t.Errorf("implausible model: %+v", l)
			}
			for r, c := range j.comms {
				st := c.Stats()
				l := st.Links
				if !reflect.DeepEqual(l.Points, first.Links.Points) || l.MinPacket != first.Links.MinPacket ||
					l.LatencyS != first.Links.LatencyS || st.Options.MinPacket != l.MinPacket {
					t.Errorf("rank %d: model %+v differs from rank 0's %+v", r, l, first.Links)
				}
				if !reflect.DeepEqual(degrees[r], degrees[0]) {
					t.Errorf("rank %d planned %v, rank 0 %v", r, degrees[r], degrees[0])
				}
				// Measured by the first config only.
				if len(st.Plans) != 2 || st.Plans[0].Links.MsgsSent == 0 || st.Plans[1].Links.MsgsSent != 0 {
					t.Errorf("rank %d: link probes by plan: %+v", r, st.Plans)
				}
				if st.Plans[0].Layers[0].Config.BytesSent > 12*20000+64 { // keys and their perms
					t.Errorf("rank %d: probe traffic counted as config traffic: %+v", r, st.Plans[0].Layers[0].Config)
				}
			}
		})
	}
}

// With min_packet given and compress not auto, nothing is measured; MeasureLinks measures on
// demand, on every rank alike.
func TestMeasureLinksOnDemand(t *testing.T) {
	const m = 3
	j := newLiveJob(t, m, kx.Options{Degrees: "auto", MinPacket: 4096, Compress: "lz4"})
	j.each(t, func(r int, c *core.Comm) error {
		sets := benchSets(m, 1000, 50000)
		p, err := c.Config(sets[r], sets[r])
		if err != nil {
			return err
		}
		return p.Free()
	})
	for r, c := range j.comms {
		if l := c.Links(); l != nil {
			t.Fatalf("rank %d measured links it did not need: %+v", r, l)
		}
	}
	models := make([]*planning.Links, m)
	j.each(t, func(r int, c *core.Comm) (err error) {
		models[r], err = c.MeasureLinks()
		return err
	})
	for r := range models {
		if models[r] == nil || !reflect.DeepEqual(models[r].Points, models[0].Points) || j.comms[r].Links() != models[r] {
			t.Fatalf("rank %d: %+v vs rank 0 %+v", r, models[r], models[0])
		}
		if got := j.comms[r].Stats().Options.MinPacket; got != 4096 {
			t.Errorf("rank %d: min_packet %d, want the option's 4096", r, got)
		}
	}
}

// The model's arithmetic on a textbook link (latency L, bandwidth B: a message of s bytes
// takes L + s/B): the fit recovers L and B, and min_packet is where s/(s + L·B) = 80%.
func TestLinkCurve(t *testing.T) {
	const lat, bw = 50e-6, 1e9
	l := core.LinkModelFor(lat, bw)
	if math.Abs(l.OverheadS-lat) > 1e-9 || math.Abs(l.BytesPerSec-bw) > 1e-3*bw {
		t.Errorf("fit %g s + bytes / %g B/s, want %g + bytes / %g", l.OverheadS, l.BytesPerSec, lat, bw)
	}
	if want := int64(4 * lat * bw); l.MinPacket < want-1 || l.MinPacket > want+1 {
		t.Errorf("min_packet %d, want %d", l.MinPacket, want)
	}
	for _, s := range []float64{1, 1000, 16 << 10, 100000, 1 << 20, 5e6, 1 << 23, 1e9} {
		want := lat + s/bw
		if got := l.Time(s); math.Abs(got-want) > 1e-6*want {
			t.Errorf("Time(%g) = %g, want %g", s, got, want)
		}
	}
}
