package netio

import (
	"kylix/core/kx"
	"math/bits"
	"sync"
)

// Payload buffers. Recv hands each payload to the caller, so by default every message costs a
// fresh allocation, and at 1 MiB a message that (zeroing, page faults, GC) costs as much as the
// loopback copy itself. A caller that is done with a payload may give it back with Release; the
// next payload of the same size class reuses it. Buffers come in power-of-two classes from
// minPooled to maxPooled; smaller and larger ones are plain allocations.
const (
	minPooledShift = 12 // 4 KiB
	maxPooledShift = 26 // 64 MiB
)

var payloadPools [maxPooledShift + 1]sync.Pool

// getBuf returns a buffer of length n whose contents are undefined (the reader overwrites it).
func getBuf(n int) []byte {
	if n < 1<<minPooledShift || n > 1<<maxPooledShift {
		return make([]byte, n)
	}
	k := bits.Len(uint(n - 1)) // smallest k with 1<<k >= n
	if p, _ := payloadPools[k].Get().(*[]byte); p != nil {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<k)
}

// putBuf files b for reuse if it has the capacity of a size class.
func putBuf(b []byte) {
	c := cap(b)
	if c < 1<<minPooledShift || c > 1<<maxPooledShift || c&(c-1) != 0 {
		return
	}
	b = b[:c]
	payloadPools[bits.Len(uint(c))-1].Put(&b)
}

// Release gives a payload returned by Recv back for reuse. Optional: a payload that is never
// released is simply garbage collected. The caller must not touch b afterwards.
func (t *TCP) Release(b []byte) { putBuf(b) }

// Release gives a payload returned by Recv back for reuse (see (*TCP).Release).
func (m *Mem) Release(b []byte) { putBuf(b) }

// put files a message that is already in memory (a send to oneself, the in-memory transport):
// copied once, into its posted place when it has one, else into a pooled payload buffer.
func (m *mailbox) put(src int, tag kx.Tag, fp kx.Fingerprint, bufs [][]byte, n int) {
	if tag.Race {
		m.putRacing(src, tag, fp, bufs, n)
		return
	}
	if p := m.claim(src, tag.Seq, tag.Layer, tag.Phase, fp, n); p != nil {
		off := 0
		for _, b := range bufs {
			off += copy(p.dst[off:], b)
		}
		m.landed(src, p, tag.Layer, tag.Phase)
		return
	}
	m.deliver(src, tag.Seq, tag.Layer, tag.Phase, fp, gather(bufs, n))
}

// gather copies the concatenation of bufs (n bytes in all) into a fresh payload buffer.
func gather(bufs [][]byte, n int) []byte {
	data := getBuf(n)
	off := 0
	for _, b := range bufs {
		off += copy(data[off:], b)
	}
	return data
}
