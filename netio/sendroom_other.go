//go:build !linux

package netio

// sendRoom is not told outside Linux: large messages go out on goroutines of their own.
func (p *peer) sendRoom() int { return 0 }
