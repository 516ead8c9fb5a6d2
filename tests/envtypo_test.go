package tests

import (
	"strings"
	"testing"
)

// A misspelled KYLIX_ variable is not ignored in silence: kylix_init warns once (log=warn, the
// default) and names the nearest known variable, as a misspelled options key is refused.
func TestMisspelledEnvironmentVariable(t *testing.T) {
	t.Parallel()
	r := run(t, job{N: 2, Prog: "bcast_barrier", Env: []string{"KYLIX_DEGRES=2x2"}})
	r.expectClean(t, allRanks(2)...)
	want := "KYLIX_DEGRES is not a Kylix setting and is ignored (did you mean KYLIX_DEGREES?)"
	if n := strings.Count(r.Output, want); n != 2 {
		t.Errorf("want the warning once from each of the 2 ranks, got it %d times\n%s", n, r.dump())
	}
}
