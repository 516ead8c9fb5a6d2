//go:build !amd64 || noasm

package kx

// TSC: no counter read here.
func TSC() int64 { return 0 }

// TSCUsable: no counter here; FastMono is MonoNow and the timeline reads it too.
func TSCUsable() bool { return false }
