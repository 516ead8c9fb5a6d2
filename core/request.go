package core

import (
	"kylix/core/kx"
	"sync"
	"sync/atomic"
)

// Non-blocking collectives.
//
// A comm runs one collective at a time: the transport's Begin names the current one and its
// frames carry that fingerprint. Collectives also run in the order they were called, since every
// rank numbers them alike. A non-blocking call therefore takes its sequence number when it is
// issued, on the caller's goroutine, and queues the work on the comm's executor: one goroutine
// that runs the queue in order and exits when it is empty. While anything is queued or running,
// blocking calls (and the slots taken by Reject) queue behind it, so every rank still runs the
// same collectives in the same order. When the queue is idle a blocking call runs on the
// caller's goroutine as before, with no hand-off.

// Request is a non-blocking collective in flight. Wait or Test it from the goroutine that uses
// the comm.
type Request struct {
	done chan struct{} // closed once err is set
	err  error
	seq  uint64
	fp   kx.Fingerprint
	body func(seq uint64) error
}

// Wait blocks until the collective has finished and returns its error. No peer wait inside it
// lasts longer than the transport's timeout. After Wait returns, the library no longer touches
// the request's buffers. Wait may be called again and returns the same error.
func (r *Request) Wait() error {
	<-r.done
	return r.err
}

// Test reports whether the collective has finished, and then its error; it never blocks.
// Once done, the library no longer touches the request's buffers.
func (r *Request) Test() (done bool, err error) {
	select {
	case <-r.done:
		return true, r.err
	default:
		return false, nil
	}
}

// executor is a comm's queue of collectives. The zero value is an idle executor.
type executor struct {
	mu    sync.Mutex
	queue []*Request
	// busy: a drain goroutine owns the transport, new collectives must queue. Changed under
	// mu; read without it by waitIdle, whose caller alone makes it true (submit).
	busy atomic.Bool
	idle chan struct{} // closed when that goroutine exits
}

// submit queues a collective of c and starts the drain goroutine if none runs.
func (e *executor) submit(c *Comm, seq uint64, fp kx.Fingerprint, body func(uint64) error) *Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &Request{done: make(chan struct{}), seq: seq, fp: fp, body: body}
	e.queue = append(e.queue, r)
	if !e.busy.Load() {
		e.busy.Store(true)
		e.idle = make(chan struct{})
		go e.drain(c, e.idle)
	}
	return r
}

// drain runs the queued collectives of c in order until the queue is empty.
func (e *executor) drain(c *Comm, idle chan struct{}) {
	defer close(idle)
	for {
		e.mu.Lock()
		if len(e.queue) == 0 {
			e.busy.Store(false)
			e.mu.Unlock()
			return
		}
		r := e.queue[0]
		e.queue[0] = nil
		e.queue = e.queue[1:]
		e.mu.Unlock()
		r.err = r.run(c)
		r.body = nil // drop the buffers it captured
		close(r.done)
	}
}

// run runs the queued collective r on c. A comm broken by an earlier one fails it with
// CodeState without touching the transport. A panic becomes CodeInternal: nobody above this
// goroutine could recover it, and in libkylix.so it would kill the host process.
func (r *Request) run(c *Comm) (err error) {
	if err := c.st.usable(); err != nil {
		return err
	}
	defer func() {
		if v := recover(); v != nil {
			err = kx.Errorf(kx.CodeInternal, "internal error: panic in %s (collective %d): %v", r.fp.Kind, r.seq, v)
			c.abort(r.seq, err)
		}
	}()
	return c.run(r.seq, r.fp, r.body)
}

// active reports whether a collective is queued or running on the executor.
func (e *executor) active() bool {
	return e.busy.Load()
}

// waitIdle returns once nothing is queued or running. Only the goroutine that issues
// collectives may rely on it staying idle afterwards.
func (e *executor) waitIdle() {
	if !e.busy.Load() { // the common case, a blocking call after blocking calls: no lock
		return
	}
	e.mu.Lock()
	ch := e.idle
	busy := e.busy.Load()
	e.mu.Unlock()
	if busy {
		<-ch
	}
}
