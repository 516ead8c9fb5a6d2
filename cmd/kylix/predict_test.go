package main

import (
	"encoding/json"
	"kylix/core/planning"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseLink(t *testing.T) {
	for _, tc := range []struct {
		spec           string
		overhead, rate float64
	}{
		{"100us,200mbit", 100e-6, 25e6}, {"0.5ms,1gbit", 0.5e-3, 125e6}, {"40us,2GB/s", 40e-6, 2e9},
		{"1s,8bit", 1, 1},
	} {
		l, err := parseLink(tc.spec)
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		if math.Abs(l.OverheadS-tc.overhead) > 1e-12 || math.Abs(l.BytesPerSec-tc.rate) > 1e-6*tc.rate {
			t.Errorf("%s: %g s + bytes / %g B/s", tc.spec, l.OverheadS, l.BytesPerSec)
		}
	}
	for _, bad := range []string{"", "fast", "100us", "100,200mbit", "100us,0mbit", "100us,fast", "-1us,1gbit"} {
		if _, err := parseLink(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// A model written by kylix bench --links-json reads back.
	f := filepath.Join(t.TempDir(), "links.json")
	b, _ := json.Marshal(&planning.Links{OverheadS: 2e-4, BytesPerSec: 1e8, MinPacket: 80000})
	os.WriteFile(f, b, 0o644)
	l, err := parseLink(f)
	if err != nil || l.BytesPerSec != 1e8 || l.OverheadS != 2e-4 {
		t.Errorf("file: %+v, %v", l, err)
	}
	os.WriteFile(f, []byte(`{"points":[]}`), 0o644)
	if _, err := parseLink(f); err == nil {
		t.Error("a file without a model accepted")
	}
}

// kylix plan --link prints config and reduce times of the planned, direct and binary degrees,
// and the planned ones by layer; the paper's EC2 link plans the paper's 8x4x2 for Twitter.
func TestPlanPrintsTimes(t *testing.T) {
	s, errs, code := tool("plan", "--features", "6e7", "--density", "0.21", "--ranks", "64", "--bytes-per-value", "4",
		"--min-packet", "3733334", "--link", "ec2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"degrees 8x4x2 (planned)", "\nplanned    8x4x2", "\ndirect     64 ", "\nbinary     2x2x2x2x2x2",
		"config net", "0.747 ms + bytes / 1250 MB/s"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if _, errs, code := tool("plan", "--features", "1e6", "--density", "0.1", "--ranks", "4", "--link", "nonsense"); code != 2 ||
		!strings.Contains(errs, "--link") {
		t.Errorf("a bad --link: exit %d, %q", code, errs)
	}
}
