package chaos

import (
	"fmt"
	"io"
	"time"
)

// Table writes the runs' totals as a Markdown table: faults by kind, collectives checked,
// wrong answers, calls past their bound and leaks after each job.
func Table(w io.Writer, runs []*Result) {
	var (
		faults, skipped        = map[string]int{}, map[string]int{}
		checks                 = map[string]int64{}
		wrong, late, bad       int64
		resizes, resets        int64
		gaveUp, left, procs    int
		maxCall, elapsed       time.Duration
		fdG, thrG, rssG        int64
		lProcs, lFds, lThr     int
		zombies, lost, refused int
		excused                int
		lRSS, lShm, lNetns, bc int
		kinds                  []string
	)
	for _, r := range runs {
		for k, n := range r.Faults {
			faults[k] += n
		}
		for k, n := range r.Skipped {
			skipped[k] += n
		}
		for k, n := range r.Checks {
			checks[k] += n
		}
		wrong, late, bad = wrong+r.Wrong, late+r.Late, bad+r.Bad
		resizes, resets = resizes+r.Resizes, resets+r.Resets
		gaveUp, left, procs = gaveUp+r.GaveUp, left+r.Left, procs+r.Processes
		maxCall, elapsed = max(maxCall, r.MaxCall), elapsed+r.Elapsed
		fdG, thrG, rssG = max(fdG, r.FdGrowth), max(thrG, r.ThrGrowth), max(rssG, r.RSSGrowthKB)
		zombies += r.Zombies
		lProcs, lFds, lThr = lProcs+len(r.LeakProcs), lFds+len(r.LeakFds), lThr+len(r.LeakThreads)
		lRSS, lShm, lNetns = lRSS+len(r.LeakRSS), lShm+len(r.LeakShm), lNetns+len(r.LeakNetns)
		if r.Code != 0 {
			bc++
		}
		if r.Refused {
			refused++
		} else if r.Lost {
			lost++
		}
		excused += len(r.Excused)
		kinds = append(kinds, fmt.Sprintf("seed %d: %s", r.Cfg.Seed, r.Cfg))
	}
	total, totalChecks := 0, int64(0)
	for _, n := range faults {
		total += n
	}
	for _, n := range checks {
		totalChecks += n
	}
	fmt.Fprintf(w, "chaos: %d job(s) in %v, liveness_ms %d, timeout_ms %d:\n", len(runs), elapsed.Round(time.Second),
		runs[0].Cfg.Liveness.Milliseconds(), runs[0].Cfg.Timeout.Milliseconds())
	for _, k := range kinds {
		fmt.Fprintf(w, "  %s\n", k)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "| fault | injected | skipped (guard) |\n|---|---:|---:|\n")
	for _, k := range faultKinds {
		if faults[k.name]+skipped[k.name] > 0 {
			fmt.Fprintf(w, "| %s: %s | %d | %d |\n", k.name, k.what, faults[k.name], skipped[k.name])
		}
	}
	fmt.Fprintf(w, "| **all faults** | **%d** | |\n\n", total)
	fmt.Fprintf(w, "| checked against the reference | count |\n|---|---:|\n")
	for _, k := range checkKinds {
		fmt.Fprintf(w, "| %s | %d |\n", k.name, checks[k.key])
	}
	fmt.Fprintf(w, "| **all collectives checked** | **%d** |\n", totalChecks)
	fmt.Fprintf(w, "| resizes (per process) / state lost (every node had a joiner) | %d / %d |\n", resizes, resets)
	fmt.Fprintf(w, "| workload processes (relaunches and joiners included) / left on request / gave up (left out) | %d / %d / %d |\n\n", procs, left, gaveUp)
	fmt.Fprintf(w, "| problem | count |\n|---|---:|\n")
	fmt.Fprintf(w, "| wrong answers | %d |\n", wrong)
	fmt.Fprintf(w, "| calls past their bound (timeout_ms + 2 s, plus for each fault in flight liveness_ms or its length; longest call %.1f s) | %d |\n", maxCall.Seconds(), late)
	fmt.Fprintf(w, "| calls past timeout_ms + 2 s within that allowance | %d |\n", excused)
	fmt.Fprintf(w, "| unexpected statuses (not OK, PEER, TIMEOUT, STATE; NET from a resize) | %d |\n", bad)
	fmt.Fprintf(w, "| jobs that ended during the faults (no member left, not refused by the quorum rule) | %d |\n", lost)
	fmt.Fprintf(w, "| jobs whose members were refused by the quorum rule (a majority taken out; a new job went on) | %d |\n", refused)
	fmt.Fprintf(w, "| jobs whose kylixrun did not exit 0 | %d |\n", bc)
	fmt.Fprintf(w, "| processes left running after the job | %d |\n", lProcs-zombies)
	fmt.Fprintf(w, "| ranks exited but not reaped when their kylixrun returned (zombies, reparented) | %d |\n", zombies)
	fmt.Fprintf(w, "| leaked descriptors (> %d over the same number of live members; largest growth %+d) | %d |\n", fdSlack, fdG, lFds)
	fmt.Fprintf(w, "| leaked threads (> %d; largest growth %+d) | %d |\n", threadSlack, thrG, lThr)
	fmt.Fprintf(w, "| RSS growth > %d MiB over the same number of live members (largest %+.1f MiB) | %d |\n", rssSlackKB>>10, float64(rssG)/1024, lRSS)
	fmt.Fprintf(w, "| new /dev/shm entries | %d |\n", lShm)
	fmt.Fprintf(w, "| network namespaces left | %d |\n", lNetns)
}

// String names the job's shape.
func (c Config) String() string {
	s := fmt.Sprintf("%d ranks, replication %d, %v of faults", c.Ranks, c.Repl, c.Faults)
	if c.Netns {
		s += ", two network namespaces"
	} else {
		s += ", loopback + shared memory"
	}
	return s
}

// Details lists what each failed run found, with the seed that replays it.
func Details(w io.Writer, runs []*Result) {
	for _, r := range runs {
		if !r.Failed() {
			if r.Refused || len(r.Excused) > 0 {
				fmt.Fprintf(w, "NOTED: %s (replay: -seed %d)\n", r.Cfg, r.Cfg.Seed)
				if r.Refused {
					fmt.Fprintf(w, "  refused by the quorum rule %v into the faults; the members that gave up last, and the faults before:\n", r.FaultsRan.Round(time.Second))
					for _, l := range r.Ended {
						fmt.Fprintf(w, "    %s\n", l)
					}
				}
				for _, l := range r.Excused {
					fmt.Fprintf(w, "  past timeout_ms + 2 s, within the allowance: %s\n", l)
				}
			}
			continue
		}
		fmt.Fprintf(w, "FAILED: %s (replay: -seed %d)\n", r.Cfg, r.Cfg.Seed)
		for _, l := range r.Ended {
			fmt.Fprintf(w, "  ended: %s\n", l)
		}
		for _, l := range r.Excused {
			fmt.Fprintf(w, "  past timeout_ms + 2 s, within the allowance: %s\n", l)
		}
		if r.Kept != "" {
			fmt.Fprintf(w, "  kylixrun's output and the state records: %s\n", r.Kept)
		}
		for _, l := range [][]string{r.Problems, r.LeakFds, r.LeakThreads, r.LeakRSS} {
			for _, p := range l {
				fmt.Fprintf(w, "  %s\n", p)
			}
		}
		for _, l := range r.LeakWhat {
			fmt.Fprintf(w, "  left behind (then killed): %s\n", l)
		}
		if len(r.LeakShm) > 0 {
			fmt.Fprintf(w, "  new /dev/shm entries: %v\n", r.LeakShm)
		}
		if len(r.LeakNetns) > 0 {
			fmt.Fprintf(w, "  network namespaces left: %v\n", r.LeakNetns)
		}
	}
}
