package cpus

import "golang.org/x/sys/unix"

func affinity() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return affinityFallback()
	}
	return max(set.Count(), 1)
}
