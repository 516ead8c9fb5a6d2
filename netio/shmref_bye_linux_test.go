package netio

import (
	"kylix/netio/mailbox"
	"kylix/netio/shm"
	"net"
	"testing"
	"time"
)

// finalizedWhileCopied: a wait for a reference frame's release that a bye ended counts as the
// send done; a death, a timeout or a peer that closed without its bye read does not.
func TestFinalizedWhileCopied(t *testing.T) {
	newPeer := func(t *testing.T) *peer {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		tr := &TCP{rank: 0, size: 2, timeout: 200 * time.Millisecond, mb: mailbox.New(0, 2, time.Second)}
		p := &peer{t: tr, rank: 1, conn: a, downed: make(chan struct{})}
		p.sock = newSockLink(p)
		p.data = p.sock
		return p
	}
	t.Run("bye read", func(t *testing.T) {
		p := newPeer(t)
		p.bye.Store(true)
		p.down(mailbox.FinalizedError(1))
		if !p.finalizedWhileCopied(shm.ErrClosed) {
			t.Errorf("a wait ended by the peer's bye is not a finished send")
		}
	})
	t.Run("bye read after the peer closed", func(t *testing.T) {
		p := newPeer(t)
		go func() {
			time.Sleep(20 * time.Millisecond) // the reader reaches the bye after the close
			p.bye.Store(true)
			p.down(mailbox.FinalizedError(1))
		}()
		if !p.finalizedWhileCopied(shm.ErrPeerClosed) {
			t.Errorf("the reader's later verdict (a bye) was not waited for")
		}
	})
	t.Run("death", func(t *testing.T) {
		p := newPeer(t)
		p.down(mailbox.LostError(1, "its process died (shared memory)"))
		if p.finalizedWhileCopied(shm.ErrPeerDead) {
			t.Errorf("a dead peer counted as finalized")
		}
	})
	t.Run("closed without a bye", func(t *testing.T) {
		p := newPeer(t)
		start := time.Now()
		if p.finalizedWhileCopied(shm.ErrPeerClosed) {
			t.Errorf("a peer that closed without a bye counted as finalized")
		}
		if time.Since(start) > 10*time.Second { // fail-safe: the wait is bounded by the timeout
			t.Errorf("waited %v", time.Since(start))
		}
	})
	t.Run("timeout", func(t *testing.T) {
		p := newPeer(t)
		if p.finalizedWhileCopied(shm.ErrTimeout) {
			t.Errorf("a timeout counted as finalized")
		}
	})
}
