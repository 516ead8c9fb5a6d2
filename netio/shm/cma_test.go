//go:build linux

package shm

import (
	"bytes"
	"testing"
	"unsafe"
)

// Both sides of a segment in one process are each other's peer (the same pid), so cross-memory
// copies can be checked here: a read of the peer's memory, a write back over it, and the marks
// with which a writer that gave up on its frames forbids the write.
func TestPeerCopyAndAbandon(t *testing.T) {
	a, b := pair(t, MinRing, Options{})
	a.publishProbe()
	b.publishProbe()
	if !a.ProbePeerMemory() || !b.ProbePeerMemory() || !a.PeerReadsMine() || !b.PeerReadsMine() {
		t.Fatal("a process cannot read its own memory")
	}
	theirs := bytes.Repeat([]byte("kylix-"), 100000) // 600 kB: several pages
	addr := uint64(uintptr(unsafe.Pointer(&theirs[0])))
	got := make([]byte, len(theirs))
	if err := b.ReadPeer(got, addr); err != nil || !bytes.Equal(got, theirs) {
		t.Fatalf("read: %v", err)
	}
	back := bytes.Repeat([]byte{0xAB}, 4097)
	if err := b.WritePeer(back, addr+3); err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte(nil), got[:3]...), back...), got[3+len(back):]...)
	if !bytes.Equal(theirs, want) {
		t.Fatal("the write-back did not land exactly over its bytes")
	}
	if err := b.WritePeer(back, 8); err == nil {
		t.Fatal("a write to an unmapped address succeeded")
	}
	if b.PeerAbandonedRefs() != 0 {
		t.Fatal("abandoned frames before any")
	}
	a.AbandonRefs(3)
	if b.PeerAbandonedRefs() != 3 || a.PeerAbandonedRefs() != 0 {
		t.Fatalf("marks: the peer sees %d, want 3; this side %d, want 0", b.PeerAbandonedRefs(), a.PeerAbandonedRefs())
	}
}
