// Package cpus tells how many CPUs this process may really use, so that waits spin only
// where a core is free for it: an oversubscribed host that spins starves the very peer it
// waits for (Open MPI yields when oversubscribed for the same reason).
package cpus

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Usable is the number of CPUs this process may run on: its affinity mask (which a cpuset
// cgroup or taskset already narrowed), capped by a CFS bandwidth quota of its cgroup or
// any ancestor (v2 cpu.max, v1 cpu.cfs_quota_us), rounded up. At least 1.
func Usable() int { return usable("/") }

// SpinAllowed reports whether ranksOnHost ranks, one thread each, fit this host's usable
// CPUs, so that a wait may spin before it sleeps.
func SpinAllowed(ranksOnHost int) bool { return ranksOnHost <= Usable() }

func usable(root string) int {
	n := affinity()
	if q, ok := cgroupLimit(root); ok && q < n {
		n = q
	}
	return max(n, 1)
}

// ParseCPUMax parses a cgroup v2 cpu.max line ("$MAX $PERIOD", MAX may be "max") into a
// CPU count (quota/period, rounded up); ok is false when there is no limit or the line is
// not understood.
func ParseCPUMax(s string) (cpus int, ok bool) {
	f := strings.Fields(s)
	if len(f) == 0 || f[0] == "max" {
		return 0, false
	}
	quota, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, false
	}
	period := int64(100000) // the kernel's default when only the quota is written
	if len(f) > 1 {
		if period, err = strconv.ParseInt(f[1], 10, 64); err != nil {
			return 0, false
		}
	}
	return quotaCPUs(quota, period)
}

// quotaCPUs turns a CFS quota per period into whole CPUs, rounded up: 1.5 CPUs of quota
// still let two threads run at once part of the time, so 2 ranks may spin there (briefly,
// as every spin here is bounded). A negative quota (v1's -1) means no limit.
func quotaCPUs(quota, period int64) (int, bool) {
	if quota <= 0 || period <= 0 {
		return 0, false
	}
	return int(math.Ceil(float64(quota) / float64(period))), true
}

// cgroupLimit finds this process's cgroups (v2 unified and v1 cpu controller) under root
// and returns the smallest quota on the path from its cgroup up to the hierarchy's root.
func cgroupLimit(root string) (int, bool) {
	cg, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0, false
	}
	mi, err := os.ReadFile(filepath.Join(root, "proc/self/mountinfo"))
	if err != nil {
		return 0, false
	}
	best, found := 0, false
	take := func(n int, ok bool) {
		if ok && (!found || n < best) {
			best, found = n, true
		}
	}
	for _, l := range strings.Split(string(cg), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			if dir, top, ok := cgroupDir(root, string(mi), "cgroup2", "", parts[2]); ok {
				take(walkUp(dir, top, readCPUMax))
			}
		} else if hasItem(parts[1], "cpu") {
			if dir, top, ok := cgroupDir(root, string(mi), "cgroup", "cpu", parts[2]); ok {
				take(walkUp(dir, top, readCFS))
			}
		}
	}
	return best, found
}

// cgroupDir maps a cgroup path to its directory through the matching mount: fstype, and
// for v1 a controller among the super options. A mount's root (field 4) is the cgroup
// it shows at its mount point (not "/" inside a cgroup namespace or a bind mount).
func cgroupDir(root, mountinfo, fstype, controller, cgPath string) (dir, top string, ok bool) {
	for _, l := range strings.Split(mountinfo, "\n") {
		pre, post, found := strings.Cut(l, " - ")
		if !found {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 || g[0] != fstype {
			continue
		}
		if controller != "" && !hasItem(g[2], controller) {
			continue
		}
		mroot, mpoint := f[3], f[4]
		rel, err := filepath.Rel(mroot, cgPath)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		top = filepath.Join(root, mpoint)
		return filepath.Join(top, rel), top, true
	}
	return "", "", false
}

// walkUp applies read to dir and each parent up to top and keeps the smallest limit:
// a child cgroup cannot use more than any ancestor allows.
func walkUp(dir, top string, read func(string) (int, bool)) (int, bool) {
	best, found := 0, false
	for {
		if n, ok := read(dir); ok && (!found || n < best) {
			best, found = n, true
		}
		if dir == top || len(dir) <= len(top) {
			return best, found
		}
		dir = filepath.Dir(dir)
	}
}

func readCPUMax(dir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
	if err != nil {
		return 0, false
	}
	return ParseCPUMax(string(b))
}

func readCFS(dir string) (int, bool) {
	q, err1 := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us"))
	p, err2 := os.ReadFile(filepath.Join(dir, "cpu.cfs_period_us"))
	if err1 != nil || err2 != nil {
		return 0, false
	}
	quota, err1 := strconv.ParseInt(strings.TrimSpace(string(q)), 10, 64)
	period, err2 := strconv.ParseInt(strings.TrimSpace(string(p)), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return quotaCPUs(quota, period)
}

func hasItem(list, item string) bool {
	for _, s := range strings.Split(list, ",") {
		if s == item {
			return true
		}
	}
	return false
}

// affinityFallback is for platforms without sched_getaffinity.
func affinityFallback() int { return runtime.NumCPU() }
