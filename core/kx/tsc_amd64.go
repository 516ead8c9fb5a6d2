//go:build amd64 && !noasm

package kx

import (
	"os"
	"runtime"
	"strings"
)

// rdtsc reads the CPU's time-stamp counter (tsc_amd64.s).
func rdtsc() int64

// tscUsable says whether the kernel keeps time with the time-stamp counter (Linux clocksource
// "tsc"), which it does only when the counter is invariant and synchronized across cores.
func tscUsable() bool {
	if runtime.GOOS != "linux" {
		return false
	}
	b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	return err == nil && strings.TrimSpace(string(b)) == "tsc"
}
