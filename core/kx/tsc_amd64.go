//go:build amd64 && !noasm

package kx

import (
	"os"
	"runtime"
	"strings"
)

// TSC reads the CPU's time-stamp counter (tsc_amd64.s).
func TSC() int64

// TSCUsable says whether the kernel keeps time with the time-stamp counter (Linux clocksource
// "tsc"), which it does only when the counter is invariant and synchronized across cores.
func TSCUsable() bool {
	if runtime.GOOS != "linux" {
		return false
	}
	b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	return err == nil && strings.TrimSpace(string(b)) == "tsc"
}
