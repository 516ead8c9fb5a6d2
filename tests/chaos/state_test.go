package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fdDiff names what a process held at its end and not warm, by kind: a connection or pipe
// made again is the same kind, a pidfd or a shared-memory mapping more is named.
func TestFdDiff(t *testing.T) {
	list := `warm:
0 /dev/null
1 pipe:[100]
7 socket:[200] tcp 0100007F:9C40 0100007F:A0B2 st 01
8 anon_inode:[eventfd] id 3
9 anon_inode:[pidfd] pid 4242
maps 2 memfd:kylix-shm
done:
0 /dev/null
1 pipe:[300]
7 socket:[400] tcp 0100007F:9C41 0100007F:A0B3 st 01
8 anon_inode:[eventfd] id 5
9 anon_inode:[pidfd] pid 4242
10 anon_inode:[pidfd] pid -1
11 anon_inode:[pidfd] pid 4343
maps 3 memfd:kylix-shm
`
	path := filepath.Join(t.TempDir(), "fds-1")
	if err := os.WriteFile(path, []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "; more than warm: [1 x mapping of a memfd:kylix-shm, 1 x pidfd of a live process, 1 x pidfd of an exited process]; fewer: []"
	if got := fdDiff(path); got != want {
		t.Fatalf("fdDiff:\n got %s\nwant %s", got, want)
	}
	if got := fdDiff(filepath.Join(t.TempDir(), "none")); got != "" {
		t.Fatalf("no lists: %q, want nothing", got)
	}
}

// A call past timeout_ms + 2 s is excused only by the faults in flight during it: liveness_ms
// (or the fault's length) for each.
func TestLateAllowance(t *testing.T) {
	r := &run{cfg: Config{Liveness: 4 * time.Second, Timeout: 15 * time.Second}}
	t0 := time.UnixMilli(1_800_000_000_000)
	line := func(from, to time.Duration) string {
		return fmt.Sprintf("CHAOS LATE pid=1 rank=0 size=6 epoch=3 step=9: resize took %d ms (bound 17000 ms), returned KYLIX_ERR_PEER: rank [2] is gone [wall %d %d]",
			(to - from).Milliseconds(), t0.Add(from).UnixMilli(), t0.Add(to).UnixMilli())
	}
	if _, ok := r.excused(line(0, 17900*time.Millisecond)); ok {
		t.Fatal("17.9 s with no fault in flight was excused")
	}
	r.injected = []injection{{t0.Add(-3 * time.Second), "kill"}} // found within liveness_ms: in flight
	if why, ok := r.excused(line(0, 17900*time.Millisecond)); !ok {
		t.Fatalf("17.9 s with a kill in flight was not excused%s", why)
	}
	if why, ok := r.excused(line(0, 21500*time.Millisecond)); ok {
		t.Fatalf("21.5 s with one kill in flight was excused%s", why)
	}
	r.injected = []injection{{t0.Add(-5 * time.Second), "kill"}, {t0.Add(30 * time.Second), "stop-long"}}
	if why, ok := r.excused(line(0, 17900*time.Millisecond)); ok {
		t.Fatalf("faults before and after the call excused it%s", why)
	}
	if _, ok := r.excused("CHAOS LATE pid=1: resize took 17900 ms (bound 17000 ms)"); ok {
		t.Fatal("a line without its times was excused")
	}
}

// A job that ends during its faults is a refusal only when the members that gave up last were
// refused by the quorum rule and the faults before could have taken out that many.
func TestJudgeLoss(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kills   int
		why     string
		refused bool
	}{
		{"three kills in a comm of 6", 3, "resize attempt 0: KYLIX_ERR_PEER: only 2 of 6 members are reachable (lost ranks [2 3 4 5]): a resize needs more than half of them, or exactly half with rank 0, so that one side of a network split goes on", true},
		{"one kill in a comm of 6", 1, "resize attempt 0: KYLIX_ERR_PEER: only 2 of 6 members are reachable (lost ranks [2 3 4 5]): a resize needs more than half of them, or exactly half with rank 0, so that one side of a network split goes on", false},
		{"resizes in a row", 3, "31 resizes in a row without a step going through", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.Mkdir(filepath.Join(dir, "state"), 0o755)
			var out string
			for _, pid := range []int{100, 101} {
				rec := fmt.Sprintf("pid=%d ppid=1 phase=gaveup rank=%d size=6 step=10\n", pid, pid-100)
				os.WriteFile(filepath.Join(dir, "state", fmt.Sprintf("p%d", pid)), []byte(rec), 0o644)
				out += fmt.Sprintf("[%d] CHAOS GAVEUP pid=%d rank=%d size=6 epoch=4 step=10: %s\n", pid-100, pid, pid-100, tc.why)
			}
			os.WriteFile(filepath.Join(dir, "job.out"), []byte(out), 0o644)
			r := &run{cfg: Config{Liveness: 4 * time.Second, Timeout: 15 * time.Second}, dir: dir, res: &Result{Lost: true}}
			for k := 0; k < tc.kills; k++ {
				r.injected = append(r.injected, injection{time.Now().Add(-time.Duration(10-k) * time.Second), "kill"})
			}
			r.judgeLoss(readRecords(filepath.Join(dir, "state")))
			if r.res.Refused != tc.refused {
				t.Fatalf("refused %v, want %v; %q %q", r.res.Refused, tc.refused, r.res.Ended, r.res.Problems)
			}
			if !tc.refused && len(r.res.Problems) == 0 {
				t.Fatal("a loss that is no refusal is not reported")
			}
		})
	}
}
