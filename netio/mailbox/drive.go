package mailbox

import (
	"kylix/core/kx"
	"time"
)

// A Driver lets a wait read its message in on the waiting thread instead of sleeping until a
// reader goroutine has filed it (netio's caller-thread reads, docs/measurements.md "Small
// steps through the C ABI"): the thread that made a cgo call into Kylix is locked to its
// goroutine, so every hand-off to a reader goroutine and back costs two thread switches.
//
// A wait calls the driver with the ranks its message may come from (one, or every replica
// of a racing source), the channel its wake-up arrives on, and the time its own timer fires
// (zero before the wait first slept: the driver's window alone bounds it).
// The driver files what it reads through the mailbox as the readers do (Receive), which
// wakes the wait; it returns true once it took that wake-up from woken, false when it could
// not drive these sources (another thread is reading them) or until came first. Either way
// the wait looks again; after false it sleeps as it would without a driver.
//
// A Recv's wait also hands the driver what it waits for (want): the driver reads that frame's
// payload straight into a buffer of its own and gives it back in want.Data instead of filing it
// (which would take the mailbox's lock twice, put it in a box, wake the wait and take it out
// again). Only the frame's reader can tell it is the one, and only the driver, on the wait's own
// goroutine, sets want.Data: the wait reads it after the driver returns.
type Driver func(srcs []int, woken <-chan struct{}, until time.Time, want *Want) bool

// Want is the frame a Recv waits for: a data frame from Src with Tag (not racing), whose
// fingerprint is Tag.FP. The driver sets Data to its payload.
type Want struct {
	Src  int
	Tag  kx.Tag
	Data []byte
}

// Matches tells whether a data frame from src with tag is the one wanted.
func (w *Want) Matches(src int, tag kx.Tag) bool {
	return w != nil && w.Data == nil && src == w.Src && tag == w.Tag
}

// Took records that the driver took the wanted frame from src, read whole: src was heard from
// and is in the frame's collective (Receive's marks).
func (m *Mailbox) Took(src int, seq uint64) {
	m.live.calling(src, seq)
	m.live.heard(src)
}

// SetDriver installs d; call it before the first wait.
func (m *Mailbox) SetDriver(d Driver) { m.driver = d }

// drive runs the driver for a wait on key k from `from`, outside the lock; want, for a Recv
// of a message that is not racing, is what the driver may hand over directly.
func (m *Mailbox) drive(w *waiter, k msgKey, from int, want *Want) bool {
	srcs, one := m.race.sources(k, from)
	if srcs == nil {
		w.one[0] = one
		srcs = w.one[:]
	}
	return m.driver(srcs, w.ch, w.due, want)
}
