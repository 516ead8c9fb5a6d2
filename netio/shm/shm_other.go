//go:build !linux

// Package shm is a shared-memory transport between processes of one host; it needs Linux
// (memfd, futex, pidfd). Elsewhere Supported is false and the transport uses sockets.
package shm

// Supported reports whether shared-memory rings work on this platform.
const Supported = false

// Segment is never made outside Linux; the type lets callers hold one that is always nil.
type Segment struct{}

// Close does nothing: there is no segment.
func (*Segment) Close() error { return nil }
