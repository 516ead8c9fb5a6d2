package chaos

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The bounded run (make test): two jobs, about 25 s each, one on a fixed seed and one on a
// random seed that is printed. The long run (tests/bench/run_chaos.sh) passes -chaos.duration.
var (
	seedFlag = flag.Int64("seed", 0, "replay this seed (0: seed 1 for the first job, a random one for the second; the long run draws one)")
	duration = flag.Duration("chaos.duration", 0, "long run: inject faults for this long in all, over jobs of about 2 minutes")
	liveness = flag.Duration("chaos.liveness", 0, "liveness_ms of the jobs (default 2.5 s bounded, 4 s long)")
	timeout  = flag.Duration("chaos.timeout", 0, "timeout_ms of the jobs (default 15 s)")
)

// shape is one job's configuration, before the seed and the durations.
type shape struct {
	ranks, repl int
	netns       bool
}

func (s shape) name() string {
	where := "local"
	if s.netns {
		where = "netns"
	}
	return fmt.Sprintf("replication%d-%s", s.repl, where)
}

func TestChaos(t *testing.T) {
	build, workload := prepare(t)
	live, to := *liveness, *timeout
	if to == 0 {
		to = 15 * time.Second
	}
	var runs []*Result
	seed := *seedFlag
	if *duration == 0 {
		if live == 0 {
			live = 2500 * time.Millisecond
		}
		// Fixed seeds: make test replays the same two schedules every run, so a red run is a
		// change in the library, not a newly drawn schedule; tests/bench/run_chaos.sh draws new
		// ones.
		seeds := []int64{1, 2}
		if seed != 0 {
			seeds = []int64{seed, seed}
		}
		for i, s := range []shape{{4, 1, true}, {4, 2, false}} {
			t.Run(s.name(), func(t *testing.T) {
				if s.netns {
					if why := netnsUsable(); why != "" {
						t.Skipf("%s: the job with the link faults is skipped", why)
					}
				}
				cfg := Config{Seed: seeds[i], Faults: 14 * time.Second, Gap: 900 * time.Millisecond, Ranks: s.ranks,
					Repl: s.repl, Netns: s.netns, Liveness: live, Timeout: to, MaxSize: 6, Build: build,
					Workload: workload, Tag: tag(i), Log: testLog{t}}
				t.Logf("seed %d (replay: go test ./tests/chaos -run 'TestChaos/%s' -seed %d)", cfg.Seed, s.name(), cfg.Seed)
				runs = append(runs, runJob(t, cfg))
			})
		}
	} else {
		if live == 0 {
			live = 4 * time.Second
		}
		if seed == 0 {
			seed = time.Now().UnixNano() % 1000000
		}
		fmt.Printf("chaos: seed %d (replay: tests/bench/run_chaos.sh %v %d)\n", seed, *duration, seed)
		shapes := []shape{{4, 1, true}, {4, 2, false}, {4, 1, false}, {4, 2, true}}
		left := *duration
		for i := 0; left > 0; i++ {
			s := shapes[i%len(shapes)]
			if s.netns && netnsUsable() != "" {
				s.netns = false
			}
			faults := min(left, 110*time.Second)
			left -= faults
			cfg := Config{Seed: seed + int64(i), Faults: faults, Gap: 1100 * time.Millisecond, Ranks: s.ranks, Repl: s.repl,
				Netns: s.netns, Liveness: live, Timeout: to, MaxSize: 8, Build: build, Workload: workload, Tag: tag(i),
				Log: os.Stdout}
			res := runJob(t, cfg)
			runs = append(runs, res)
			if res.Lost {
				// The job ended during its faults (refused by the quorum rule, as the contract
				// says when a majority is gone, or lost, which the table counts as a failure):
				// the fault time it did not use goes to the next one, so the run still
				// injects faults for its whole duration.
				left += cfg.Faults - res.FaultsRan
			}
		}
	}
	if len(runs) > 0 {
		var b strings.Builder
		Table(&b, runs)
		Details(&b, runs)
		fmt.Print(b.String())
		if *duration == 0 {
			t.Log("\n" + b.String())
		}
	}
}

func runJob(t *testing.T, cfg Config) *Result {
	t.Helper()
	res, err := Run(cfg)
	if err != nil {
		t.Fatalf("seed %d: %v", cfg.Seed, err)
	}
	if res.Failed() {
		var b strings.Builder
		Details(&b, []*Result{res})
		t.Errorf("seed %d: %s", cfg.Seed, b.String())
	}
	return res
}

// tag names a job's namespaces: this test process and the job, at most 9 characters.
func tag(i int) string { return fmt.Sprintf("%d%d", os.Getpid()%1000000, i%100) }

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// prepare finds libkylix.so and kylixrun (KYLIX_BUILD, which make test sets, or a fresh build)
// and compiles workload.c against them.
func prepare(t *testing.T) (build, workload string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	build = os.Getenv("KYLIX_BUILD")
	if build == "" {
		build = tmp
		for _, b := range [][]string{
			{"go", "build", "-buildmode=c-shared", "-o", filepath.Join(build, "libkylix.so"), "./capi"},
			{"go", "build", "-o", filepath.Join(build, "kylixrun"), "./cmd/kylixrun"},
		} {
			tool(t, root, b...)
		}
	}
	if build, err = filepath.Abs(build); err != nil {
		t.Fatal(err)
	}
	workload = filepath.Join(tmp, "workload")
	tool(t, root, "gcc", "-O2", "-Wall", "-Werror", "-I"+filepath.Join(root, "include"), "-o", workload,
		filepath.Join(root, "tests", "chaos", "c", "workload.c"), "-L"+build, "-lkylix", "-Wl,-rpath,"+build, "-lm")
	return build, workload
}

func tool(t *testing.T, dir string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
