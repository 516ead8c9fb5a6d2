//go:build amd64 && !noasm

package trace

import (
	"os"
	"runtime"
	"strings"
)

// rdtsc reads the CPU's time-stamp counter (clock_amd64.s).
func rdtsc() int64

// storeRelaxed stores v at p with a plain move (clock_amd64.s): an aligned 8-byte store is
// atomic on amd64 and, the memory model being total store order, seen in order, where
// atomic.StoreInt64's XCHG also drains the store buffer (a few ns, twice a call, for the
// clock's floor, which needs no fence).
func storeRelaxed(p *int64, v int64)

// tscUsable says whether the kernel keeps time with the time-stamp counter (Linux clocksource
// "tsc"), which it does only when the counter is invariant and synchronized across cores.
func tscUsable() bool {
	if runtime.GOOS != "linux" {
		return false
	}
	b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	return err == nil && strings.TrimSpace(string(b)) == "tsc"
}
