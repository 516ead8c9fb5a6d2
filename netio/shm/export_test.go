//go:build linux

package shm

// RingSize is the data area of each ring, in bytes (tests size their frames by it).
func (s *Segment) RingSize() int { return s.ringSize }
