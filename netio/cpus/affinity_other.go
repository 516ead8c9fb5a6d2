//go:build !linux

package cpus

func affinity() int { return affinityFallback() }
