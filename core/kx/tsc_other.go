//go:build !amd64 || noasm

package kx

func rdtsc() int64 { return 0 }

// tscUsable: no counter read here; FastMono is MonoNow.
func tscUsable() bool { return false }
