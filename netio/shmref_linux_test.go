//go:build linux

package netio

import (
	"bytes"
	"io"
	"kylix/core/kx"
	"kylix/netio/shm"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// segPair makes both sides of a segment in this process: each is the other's peer (one pid),
// so single-copy reads and writes work on this process's own memory.
func segPair(t *testing.T) (a, b *shm.Segment) {
	t.Helper()
	a, err := shm.Create(shm.MinRing, shm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Dup(a.Fd())
	if err != nil {
		t.Fatal(err)
	}
	a.CloseFD()
	if b, err = shm.Open(fd, shm.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// A folding reader writes its result back over exactly the bytes it read, across the
// sender's buffers, and not once the sender has given up on the frame.
func TestRefPayloadWriteBack(t *testing.T) {
	a, b := segPair(t)
	bufs := [][]byte{bytes.Repeat([]byte{1}, 1000), bytes.Repeat([]byte{2}, 3000)}
	refs := []memRef{}
	for _, x := range bufs {
		refs = append(refs, memRef{uint64(uintptr(unsafe.Pointer(&x[0]))), uint64(len(x))})
	}
	l := &ringLink{seg: b}
	rp := &refPayload{link: l, refs: refs, idx: 1, rank: 5}
	piece := make([]byte, 1500) // crosses from the first buffer into the second
	if _, err := io.ReadFull(rp, piece[:700]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(rp, piece); err != nil {
		t.Fatal(err)
	}
	if err := rp.WriteBack(bytes.Repeat([]byte{9}, 1500)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bufs[0][:700], bytes.Repeat([]byte{1}, 700)) || !bytes.Equal(bufs[0][700:], bytes.Repeat([]byte{9}, 300)) ||
		!bytes.Equal(bufs[1][:1200], bytes.Repeat([]byte{9}, 1200)) || bufs[1][1200] != 2 {
		t.Fatal("the write-back did not land over the bytes just read")
	}
	if got := l.wroteBack.Load(); got != 1500 {
		t.Fatalf("counted %d bytes written back, want 1500", got)
	}
	a.AbandonRefs(1)
	err := rp.WriteBack(piece[:10])
	if kx.CodeOf(err) != kx.CodeNet || !strings.Contains(err.Error(), "rank 5") || bufs[1][1199] != 9 {
		t.Fatalf("a write-back after the sender gave up: %v", err)
	}
}
