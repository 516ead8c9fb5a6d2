package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Dense allreduce from C over loopback TCP: counts 0..2^20, every dtype x op, in place and
// out of place, on 1..8 ranks (odd and prime counts included) and several degree plans.
func TestDenseAllreduce(t *testing.T) {
	for _, c := range []struct {
		n       int
		degrees string
	}{{1, ""}, {2, ""}, {3, ""}, {4, "2x2"}, {5, ""}, {6, "3x2"}, {7, ""}, {8, "2x2x2"}} {
		t.Run(fmt.Sprintf("n%d_%s", c.n, degName(c.degrees)), func(t *testing.T) {
			t.Parallel()
			r := run(t, job{N: c.n, Degrees: c.degrees, Prog: "dense", Args: []string{fmt.Sprint(30 + c.n)}})
			r.expectClean(t, allRanks(c.n)...)
			for rk := 0; rk < c.n; rk++ {
				if !r.has(rk, "PASS", "allreduce:") {
					t.Errorf("rank %d did not pass", rk)
				}
			}
		})
	}
}

// Between ranks of one host, dense allreduce's two-member layers fold the member's copy as it
// comes out of the member's memory and, on the last layer, write the result straight back over
// it (core/dense/fold.go). The exact checks of dense.c pass that way (2^20 elements take the
// binary butterfly, in place and not, every dtype and op, guard bytes intact), the stats show
// that the write-back really happened, and with shm=off (no single copy) nothing is written
// back and the same checks pass. Three ranks have no two-member layer: nothing written back.
func TestDenseShmWriteBack(t *testing.T) {
	for _, c := range []struct {
		n    int
		shm  string
		back bool
	}{{2, "auto", true}, {4, "auto", true}, {2, "off", false}, {3, "auto", false}} {
		t.Run(fmt.Sprintf("n%d_shm_%s", c.n, c.shm), func(t *testing.T) {
			t.Parallel()
			r := run(t, job{N: c.n, Prog: "dense", Args: []string{"77"}, Env: []string{"KYLIX_SHM=" + c.shm}})
			r.expectClean(t, allRanks(c.n)...)
			for rk := 0; rk < c.n; rk++ {
				if !r.has(rk, "PASS", "allreduce:") {
					t.Errorf("rank %d did not pass", rk)
				}
				back := writtenBack(t, r, rk)
				if back > 0 != c.back {
					t.Errorf("rank %d wrote back %d bytes; want some: %v", rk, back, c.back)
				}
			}
		})
	}
}

// writtenBack reads shm.written_back_bytes from the stats line dense.c prints (0 without shm).
func writtenBack(t *testing.T, r *result, rk int) uint64 {
	t.Helper()
	for _, l := range r.find(rk, "INFO") {
		js, ok := strings.CutPrefix(l, "stats ")
		if !ok {
			continue
		}
		var st struct {
			Shm *struct {
				WrittenBack uint64 `json:"written_back_bytes"`
			} `json:"shm"`
		}
		if err := json.Unmarshal([]byte(js), &st); err != nil {
			t.Fatalf("rank %d: stats: %v: %.200s", rk, err, js)
		}
		if st.Shm == nil {
			return 0
		}
		return st.Shm.WrittenBack
	}
	t.Fatalf("rank %d printed no stats\n%s", rk, r.dump())
	return 0
}
