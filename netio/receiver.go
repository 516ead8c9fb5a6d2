package netio

import (
	"kylix/core/kx"
	"kylix/netio/mailbox"
)

// receiver is TCP's kx.Receiver: the mailbox, whose Recv and Await first look, then read the
// links of the ranks they wait for on the waiting thread (selfread_linux.go), and sleep only
// after that. The mailbox calls nothing back: the wait pulls frames from the links.
type receiver struct {
	*mailbox.Mailbox
	t *TCP
}

// recvLooked runs, when set (tests), at the start of a Recv, before its driving wait takes the
// links: where a reader goroutine may file the message first (TestRecvKeepsKeyOrder).
var recvLooked func()

// Recv goes straight to the driving wait, whose first look (WantOf, then TryRecv when a frame
// of the key is filed) comes after it took the links; a look before it would cost a small step
// a pass through the mailbox for nothing where the waits read the links. Await first looks
// without the lock (Landed: a combine waits for a message it already has, a prefix at a time),
// then drives, whose first look (TryAwaitWant) comes after it took the links.
func (r receiver) Recv(from int, tag kx.Tag) ([]byte, error) {
	if recvLooked != nil {
		recvLooked()
	}
	if b, ok, err := r.t.recvDriven(from, tag); ok {
		return b, err
	}
	return r.Mailbox.Recv(from, tag)
}

func (r receiver) Await(from int, tag kx.Tag, n int) (int, error) {
	if got, ok := r.Landed(from, tag); ok {
		return got, nil
	}
	if got, ok, err := r.t.awaitDriven(from, tag, n); ok {
		return got, err
	}
	return r.Mailbox.Await(from, tag, n)
}
