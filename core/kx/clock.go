package kx

import _ "unsafe" // go:linkname

// MonoNow is the runtime's monotonic clock in nanoseconds, the one time.Time's monotonic
// readings come from: one vDSO read where time.Now makes two (wall and monotonic). Per-call
// bookkeeping (a collective's start and end, when a peer was last heard from) reads it.
//
//go:linkname MonoNow runtime.nanotime
func MonoNow() int64
