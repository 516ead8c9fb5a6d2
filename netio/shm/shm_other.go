//go:build !linux

// Package shm is a shared-memory transport between processes of one host; it needs Linux
// (memfd, futex, pidfd). Elsewhere Supported is false and the transport uses sockets.
package shm

// Supported reports whether shared-memory rings work on this platform.
const Supported = false
