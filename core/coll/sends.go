package coll

import (
	"kylix/core/kx"
	"slices"
	"sync"
)

// Sends sends to several nodes at once and waits for every send, so no goroutine touches the
// buffers after Wait returns. It keeps the first error. It lives on the collective's stack:
// only a send that goes out on a goroutine of its own makes the shared part (bg).
type Sends struct {
	cx     *Ctx
	fp     kx.Fingerprint // the collective's, set on every message
	err    error          // the first error of a send made on this goroutine
	bg     *bgSends
	posted []posted // sends by reference whose copy Wait waits for
}

// posted is a send by reference in flight: the peer reads bufs by address until Complete
// returns, and only this reference keeps them from the collector (a message's buffers may be
// the only hold on memory the caller built for it).
type posted struct {
	ps   kx.Posted
	bufs [][]byte
}

// bgSends are a group's sends on goroutines of their own.
type bgSends struct {
	wg  sync.WaitGroup
	mu  sync.Mutex
	err error
}

// Sends is a send group for the running collective.
func (cx *Ctx) Sends() Sends { return Sends{cx: cx, fp: cx.FP} }

// Send sends b (nil: an empty message) as one message. The one-buffer list it hands the path
// is the context's (Ctx.one), so a send allocates nothing.
func (g *Sends) Send(to int, tag kx.Tag, b []byte) {
	if len(b) == 0 {
		g.Sendv(to, tag, nil)
		return
	}
	cx := g.cx
	cx.one[0] = b
	g.Sendv(to, tag, cx.one[:])
	cx.one[0] = nil
}

// Sendv sends the concatenation of bufs as one message; the list may be reused once it
// returns (a send on a goroutine of its own takes a copy).
func (g *Sends) Sendv(to int, tag kx.Tag, bufs [][]byte) {
	tag.FP = g.fp
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	cx := g.cx
	// The write returns at once (a small message, or room for it in the ring or socket
	// buffer): no goroutine, and the waits that follow may read on this thread (netio's
	// caller-thread reads stand aside while a send runs on a goroutine of its own).
	if cx.SendFits(to, n) {
		if err := cx.Send(to, tag, bufs...); err != nil && g.err == nil {
			g.err = err
		}
		return
	}
	// A message the peer copies by reference costs this rank one small frame: posted here, it
	// needs no goroutine, and Wait waits for the copy.
	if cx.WritesBack(to, n) {
		ps, err := cx.Post(to, tag, bufs...)
		switch {
		case err != nil:
			if g.err == nil {
				g.err = err
			}
		case ps.Mark != 0:
			g.posted = append(g.posted, posted{ps, slices.Clone(bufs)})
		}
		return
	}
	if g.bg == nil {
		g.bg = &bgSends{}
	}
	bg := g.bg
	bg.wg.Add(1)
	kx.AsyncSends.Add(1)
	bufs = slices.Clone(bufs)
	go func() {
		defer bg.wg.Done()
		defer kx.AsyncSends.Add(-1)
		if err := cx.SendAside(to, tag, bufs...); err != nil {
			bg.mu.Lock()
			if bg.err == nil {
				bg.err = err
			}
			bg.mu.Unlock()
		}
	}()
}

// Wait waits for every send of the group and returns the first error.
func (g *Sends) Wait() error {
	for _, p := range g.posted {
		if err := g.cx.Complete(p.ps); err != nil && g.err == nil {
			g.err = err
		}
	}
	clear(g.posted) // the buffers are the caller's again
	g.posted = g.posted[:0]
	if g.bg != nil {
		g.bg.wg.Wait()
		if g.err == nil {
			g.err = g.bg.err
		}
	}
	return g.err
}
