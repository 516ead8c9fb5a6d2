package mailbox

import (
	"testing"
	"time"
)

// Data moves both clocks, a heartbeat only the sign-of-life one; a collective told of is never
// taken back by an older one.
func TestLivenessClocks(t *testing.T) {
	l := newLiveness(3)
	if s := l.silence(1); s < 0 || s > time.Hour {
		t.Fatalf("silence counts from the start: %v", s)
	}
	l.alive(1)
	if l.latestData(nil, 1) != 0 {
		t.Fatal("a heartbeat moved the data clock")
	}
	l.heard(2)
	if l.latestData(nil, 2) == 0 || l.latestData([]int{1, 2}, -1) != l.latestData(nil, 2) {
		t.Fatal("data from rank 2 is not the latest of node {1, 2}")
	}
	l.calling(1, 5)
	l.calling(1, 3)
	if !l.called(1, 5) || l.called(1, 6) || l.called(0, 0) {
		t.Fatalf("seqOf[1] = %d, want 6", l.seqOf[1].Load())
	}
	l.heard(-1) // out of range: ignored
	l.alive(7)
	l.calling(9, 1)
}
