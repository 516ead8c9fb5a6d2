package kx

import (
	"slices"
	"strings"
	"testing"
)

func TestUnknownEnv(t *testing.T) {
	got := UnknownEnv([]string{"KYLIX_DEGRES=2x2", "KYLIX_DEGREES=2x2", "KYLIX_NOSIMD=1", "PATH=/bin",
		"KYLIX_LIVENES_MS=100", "KYLIX_ZZZZZZZZZZZZZZ=1", "KYLIX_BUILD=/tmp", "KYLIX_SECRET=x"})
	want := []string{
		"environment variable KYLIX_DEGRES is not a Kylix setting and is ignored (did you mean KYLIX_DEGREES?)",
		"environment variable KYLIX_LIVENES_MS is not a Kylix setting and is ignored (did you mean KYLIX_LIVENESS_MS?)",
		"environment variable KYLIX_ZZZZZZZZZZZZZZ is not a Kylix setting and is ignored",
	}
	if !slices.Equal(got, want) {
		t.Errorf("UnknownEnv:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, k := range optionKeys { // every option's variable is known
		if w := UnknownEnv([]string{"KYLIX_" + strings.ToUpper(k) + "=1"}); len(w) > 0 {
			t.Errorf("option %s: %v", k, w)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"DEGRES", "DEGREES", 1}, {"abc", "abc", 0}} {
		if d := EditDistance(c.a, c.b); d != c.d {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", c.a, c.b, d, c.d)
		}
	}
}

// One process of a job reports the unknown variables: rank 0, unless kylixrun started the job
// (and reported them itself); never a joiner (rank -1) or another rank.
func TestReportsUnknownEnv(t *testing.T) {
	none := func(string) string { return "" }
	launched := func(k string) string {
		if k == LauncherEnv {
			return "kylixrun"
		}
		return ""
	}
	for _, tc := range []struct {
		rank   int
		getenv func(string) string
		want   bool
	}{{0, none, true}, {1, none, false}, {-1, none, false}, {0, launched, false}, {3, launched, false}} {
		if got := ReportsUnknownEnv(tc.rank, tc.getenv); got != tc.want {
			t.Errorf("rank %d (launched by kylixrun: %v): %v, want %v", tc.rank, tc.getenv(LauncherEnv) != "", got, tc.want)
		}
	}
}
