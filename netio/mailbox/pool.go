package mailbox

import (
	"math/bits"
	"sync"
)

// Payload buffers. Recv hands each payload to the caller, so by default every message costs a
// fresh allocation, and at 1 MiB a message that (zeroing, page faults, GC) costs as much as the
// loopback copy itself. A caller that is done with a payload may give it back with Release; the
// next payload of the same size class reuses it. Buffers come in power-of-two classes from
// minPooled to maxPooled; a smaller payload takes a buffer of the smallest class (a small
// step's 32 bytes would otherwise cost an allocation a message, and a collection every few
// thousand calls), a larger one is a plain allocation.
const (
	minPooledShift = 6  // 64 B
	maxPooledShift = 26 // 64 MiB
)

var payloadPools [maxPooledShift + 1]sync.Pool

// Small classes (up to 1<<maxStackShift bytes, a small step's messages) are kept first on a
// short stack each, under a mutex: a lock and an unlock cost less than two sync.Pool operations
// (the buffer's and its holder's), and a small step takes and gives back a buffer per message.
// What does not fit on the stack goes to the pool.
const (
	maxStackShift = 12 // 4 KiB
	stackDepth    = 16
)

type bufStack struct {
	mu   sync.Mutex
	n    int
	bufs [stackDepth][]byte
}

var smallStacks [maxStackShift + 1]bufStack

func (s *bufStack) pop() []byte {
	var b []byte
	s.mu.Lock()
	if s.n > 0 {
		s.n--
		b = s.bufs[s.n]
		s.bufs[s.n] = nil
	}
	s.mu.Unlock()
	return b
}

func (s *bufStack) push(b []byte) bool {
	s.mu.Lock()
	ok := s.n < stackDepth
	if ok {
		s.bufs[s.n] = b
		s.n++
	}
	s.mu.Unlock()
	return ok
}

// holders are the *[]byte the pools hold buffers in, kept for reuse: a pool holds pointers, and
// taking a fresh one for every PutBuf would cost an allocation per message.
var holders sync.Pool

// GetBuf returns a buffer of length n whose contents are undefined (the reader overwrites it).
func GetBuf(n int) []byte {
	if n < 1 || n > 1<<maxPooledShift {
		return make([]byte, n)
	}
	k := max(bits.Len(uint(n-1)), minPooledShift) // smallest class of at least n bytes
	if k <= maxStackShift {
		if b := smallStacks[k].pop(); b != nil {
			return b[:n]
		}
	}
	if p, _ := payloadPools[k].Get().(*[]byte); p != nil {
		b := (*p)[:n]
		*p = nil
		holders.Put(p)
		return b
	}
	return make([]byte, n, 1<<k)
}

// PutBuf files b for reuse if it has the capacity of a size class (the transports' Release).
func PutBuf(b []byte) {
	c := cap(b)
	if c < 1<<minPooledShift || c > 1<<maxPooledShift || c&(c-1) != 0 {
		return
	}
	k := bits.Len(uint(c)) - 1
	if k <= maxStackShift && smallStacks[k].push(b[:c]) {
		return
	}
	p, _ := holders.Get().(*[]byte)
	if p == nil {
		p = new([]byte)
	}
	*p = b[:c]
	payloadPools[k].Put(p)
}
