//go:build !amd64 || noasm

package trace

func rdtsc() int64 { return 0 }

// tscUsable: no counter read here; the timeline uses the runtime's monotonic clock.
func tscUsable() bool { return false }
