// Package memroom tells whether an allocation sized from a caller's arguments can be had, so
// that memory the process cannot get is a status naming the argument, not a dead host.
package memroom

import (
	"bufio"
	"kylix/core/kx"
	"math"
	"math/bits"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Memory that cannot be had must be a status, not a dead process: when the Go runtime cannot
// get memory it aborts the whole host with a fatal error that no recover() catches. So before
// allocating anything whose size comes from a caller's arguments, the library compares it with
// what the process can have and returns CodeNoMem naming the argument instead.

// memRoom is the number of bytes the process can still expect to allocate: the smallest of the
// address-space and data rlimits (less what the process already maps), the cgroup's memory.max
// (less its current use) and the kernel's MemAvailable. Unknown limits count as unlimited.
func memRoom() uint64 {
	room := uint64(math.MaxUint64)
	used := procVM()
	for _, res := range []int{syscall.RLIMIT_AS, syscall.RLIMIT_DATA} {
		var rl syscall.Rlimit
		if syscall.Getrlimit(res, &rl) == nil && rl.Cur != ^uint64(0) && rl.Cur < math.MaxInt64 {
			room = min(room, sat(rl.Cur, used))
		}
	}
	if max, ok := readUint("/sys/fs/cgroup/memory.max"); ok {
		cur, _ := readUint("/sys/fs/cgroup/memory.current")
		room = min(room, sat(max, cur))
	}
	if avail, ok := meminfo("MemAvailable:"); ok {
		room = min(room, avail)
	}
	return room
}

// sat is a - b, or 0 when b >= a.
func sat(a, b uint64) uint64 {
	if b >= a {
		return 0
	}
	return a - b
}

// procVM is the process's mapped virtual memory in bytes (VmSize), 0 when unknown.
func procVM() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	return scanKB(bufio.NewScanner(f), "VmSize:")
}

func meminfo(key string) (uint64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	v := scanKB(bufio.NewScanner(f), key)
	return v, v > 0
}

// scanKB finds the line starting with key and returns its "N kB" value in bytes.
func scanKB(s *bufio.Scanner, key string) uint64 {
	for s.Scan() {
		line := s.Text()
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				if n, err := strconv.ParseUint(f[0], 10, 64); err == nil {
					return n << 10
				}
			}
		}
	}
	return 0
}

// readUint reads a file holding one number ("max" means no limit).
func readUint(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}

// Mul is a*b*c, saturating at MaxUint64 instead of wrapping.
func Mul(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return math.MaxUint64
	}
	hi, lo = bits.Mul64(lo, c)
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

// Add is a+b, saturating.
func Add(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint64
}

// Check returns CodeNoMem when an allocation of need bytes, driven by the argument arg,
// cannot be had. what says what the memory is for.
func Check(need uint64, arg, what string) error {
	if need < 64<<20 { // small requests cannot be the problem; skip the system calls
		return nil
	}
	if room := memRoom(); need > room {
		return kx.Errorf(kx.CodeNoMem, "%s: %s would take %s, but the process can have only %s more (its rlimits, cgroup memory.max, MemAvailable)",
			arg, what, fmtBytes(need), fmtBytes(room))
	}
	return nil
}

func fmtBytes(n uint64) string {
	switch {
	case n == math.MaxUint64:
		return "more than 16 EiB"
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatUint(n, 10) + " bytes"
}
