// Package coll is what a collective algorithm sees of its comm, as gloo's algorithms see a
// Context: the data path (Path), this node's place among the nodes, the running collective's
// fingerprint and the worker threads. The algorithms (core/dense, core/mix, core/probe, the
// sparse butterfly of package core, and bcast, barrier and the small agreement exchange here)
// take a *Ctx and a topology and see nothing else of the comm: no transport, no membership, no
// statistics, which the comm's data path adds underneath.
package coll

import "kylix/core/kx"

// Path is the comm's data path (core/wire.go: the recorder, then the view). Ranks are nodes:
// with replication s a message goes to every live replica of a node and comes from any.
type Path interface {
	// Send sends the concatenation of bufs to node to as one message, from the goroutine that
	// runs the collective; SendAside does from any other (a send beside it), which the comm's
	// statistics count under their lock.
	Send(to int, tag kx.Tag, bufs ...[]byte) error
	SendAside(to int, tag kx.Tag, bufs ...[]byte) error
	// Post sends a message the peer copies by reference (WritesBack) without waiting for the
	// copy, from the goroutine that runs the collective; Complete waits for it there
	// (kx.Sender.Post). bufs stay untouched until then.
	Post(to int, tag kx.Tag, bufs ...[]byte) (kx.Posted, error)
	Complete(p kx.Posted) error
	// SendFits reports whether a message of n bytes to node to is written at once (small, or
	// room for it in the ring or socket buffer): it may go out on the calling goroutine.
	SendFits(to, n int) bool
	// Recv returns a message whose size the receiver cannot know; Release gives it back.
	Recv(from int, tag kx.Tag) ([]byte, error)
	Release(b []byte)
	// Expect posts where a message of the running collective lands; ExpectFold posts a place
	// it is combined into as it is read. Await waits until it has landed whole, AwaitPrefix
	// until its first n bytes have.
	Expect(from int, tag kx.Tag, dst []byte)
	ExpectFold(from int, tag kx.Tag, dst []byte, f kx.Fold)
	Await(from int, tag kx.Tag) (int, error)
	AwaitPrefix(from int, tag kx.Tag, n int) error
	// WritesBack reports whether a message of n bytes to node to goes by reference, so that
	// the receiver may write its fold back over it; SameHost whether node shares this host.
	WritesBack(to, n int) bool
	SameHost(node int) bool
}

// Lanes are the comm's lanes to the nodes of its host (kx.Lanes, addressed by node and counted
// by the comm's statistics): one small message a collective to each, read in place.
type Lanes interface {
	// LaneMax is the largest payload of the lane to node, 0 where there is none.
	LaneMax(node int) int
	LanePut(to int, tag kx.Tag, b []byte) error
	// LaneAwait returns the fingerprint and payload of node from's message of tag.Seq, valid
	// until LaneDone, which must follow every LaneAwait that succeeded.
	LaneAwait(from int, tag kx.Tag) (kx.Fingerprint, []byte, error)
	LaneDone(from int, tag kx.Tag)
}

// Ctx is a comm's context for its algorithms: the data path and the facts every algorithm
// needs. The comm owns one and keeps it for its life; collectives of a comm run one at a time,
// so the running one owns it.
type Ctx struct {
	Path
	Node, Nodes int // this node and the number of nodes (size/s with replication s)
	Replication int // s: ranks per node
	Threads     int // workers a kernel may use, at least 1
	// FP is the running collective's fingerprint, carried by its sends (set by the comm).
	FP kx.Fingerprint
	// Lanes are the comm's lanes, nil where it has none (another transport, replication, a
	// transport whose lanes another comm has).
	Lanes Lanes
	// one is the one-buffer list Sends.Send hands the path, so a send allocates nothing: the
	// path's Send takes an interface call's arguments, which escape.
	one [1][]byte
}
