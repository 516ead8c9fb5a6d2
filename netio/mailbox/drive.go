package mailbox

import "time"

// A Driver lets a wait read its message in on the waiting thread instead of sleeping until a
// reader goroutine has filed it (netio's caller-thread reads, docs/measurements.md "Small
// steps through the C ABI"): the thread that made a cgo call into Kylix is locked to its
// goroutine, so every hand-off to a reader goroutine and back costs two thread switches.
//
// A wait calls the driver with the ranks its message may come from (one, or every replica
// of a racing source), the channel its wake-up arrives on, and the time its own timer fires.
// The driver files what it reads through the mailbox as the readers do (Receive), which
// wakes the wait; it returns true once it took that wake-up from woken, false when it could
// not drive these sources (another thread is reading them) or until came first. Either way
// the wait looks again; after false it sleeps as it would without a driver.
type Driver func(srcs []int, woken <-chan struct{}, until time.Time) bool

// SetDriver installs d; call it before the first wait.
func (m *Mailbox) SetDriver(d Driver) { m.driver = d }

// drive runs the driver for a wait on key k from `from`, outside the lock.
func (m *Mailbox) drive(w *waiter, k msgKey, from int) bool {
	srcs, one := m.race.sources(k, from)
	if srcs == nil {
		w.one[0] = one
		srcs = w.one[:]
	}
	return m.driver(srcs, w.ch, w.due)
}
