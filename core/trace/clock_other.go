//go:build !amd64 || noasm

package trace

import "sync/atomic"

func rdtsc() int64 { return 0 }

// storeRelaxed: the counter clock does not run here; a plain atomic store serves.
func storeRelaxed(p *int64, v int64) { atomic.StoreInt64(p, v) }

// tscUsable: no counter read here; the timeline uses the runtime's monotonic clock.
func tscUsable() bool { return false }
