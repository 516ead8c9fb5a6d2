package netio

import (
	"errors"
	"kylix/core/kx"
	"kylix/netio/mailbox"
	"net"
	"strings"
	"testing"
	"time"
)

// cutPayload is a peer's payload whose connection is dropped after `after` bytes: the way the
// liveness watchdog drops a stopped peer (peer.down: the mailbox is told why first, then the
// connection is closed under the reader).
type cutPayload struct {
	after, off int
	cut        func()
}

func (c *cutPayload) Read(b []byte) (int, error) {
	if c.off >= c.after {
		c.cut()
		return 0, net.ErrClosed
	}
	n := min(len(b), c.after-c.off)
	for i := range b[:n] {
		b[i] = 7
	}
	c.off += n
	return n, nil
}

func (c *cutPayload) Discard(n int) (int, error) { return 0, errors.New("not used") }

// A peer declared dead by liveness while its frame was being read into a posted place: the wait
// for that place gives the reason the peer was declared dead (it stopped answering), as every
// other wait for it does, not a broken connection (which only this side's drop caused). Over a
// socket the mid-frame SIGSTOP of TestLinkDeathMidFrame says one or the other, by which
// goroutine runs first.
func TestMidFrameWaitSaysWhyPeerDied(t *testing.T) {
	mb := mailbox.New(0, 2, 10*time.Second)
	mb.Begin(3, fpAll)
	tag := kx.Tag{FP: fpAll, Seq: 3, Phase: kx.PhaseDown}
	place := make([]byte, 4<<20)
	mb.Post(1, tag, place, kx.Fold{})
	why := kx.Errorf(kx.CodePeer, "rank %d is lost: nothing heard from it for 1s (liveness_ms 1000)", kx.RankRef(1))
	cut := &cutPayload{after: 3 << 20, cut: func() { mb.MarkDead(1, why) }}
	if err := mb.Receive(1, tag, len(place), cut); err == nil {
		t.Fatal("a payload cut short was received")
	}
	_, err := mb.Await(1, tag, kx.Whole)
	wantErr(t, err, kx.CodePeer, "rank 1")
	if other := mb.Dead(1); !strings.Contains(err.Error(), "nothing heard from it") {
		t.Errorf("the wait for the place says %q; the peer died because %q", err, other)
	}
}
