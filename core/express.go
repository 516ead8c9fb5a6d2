package core

import (
	"kylix/core/kx"
	"kylix/core/stats"
	"time"
)

// Express is a comm's small allreduce over the lanes lent out of Go between the comm's calls:
// the C ABI's express path (capi/express.c) runs kylix_allreduce of a vector the lanes
// take entirely in C, without a cgo crossing or this package's bookkeeping, and hands anything
// else (another call, a wait longer than a spin, a mismatch) back to Go. While lent, the
// borrower owns the comm's sequence numbers and the lanes' state (kx.LaneLender), and counts
// what the recorder would; Return takes them back before Go runs anything on the comm.
//
// It is lent only in the steady state of small steps: the comm usable, no request in flight,
// no timeline (whose records are per collective), and its ranks agreed on the lanes.
type Express struct {
	Seq         uint64 // the next collective's sequence number
	Node, Nodes int
	Max         int           // the largest vector, in bytes, the lanes take
	Lanes       []kx.LaneLoan // by node (this node's is zero)
	// Counted by the borrower: the allreduces it completed and their time.
	Calls uint64
	Time  time.Duration
	// PutFor is seq+1 when the borrower put collective seq's lane messages and handed the
	// collective back to Go unfinished (Go's call then runs it without putting), else 0.
	PutFor uint64
}

// Lend lends c's express allreduce into e, reporting whether it did; e's slices are reused.
func (e *Express) Lend(c *Comm) bool {
	if c.lent || c.st.usable() != nil || c.ex.active() || c.rec.Tracer() != nil {
		return false
	}
	max := c.dense.LaneBytes()
	if max <= 0 {
		return false
	}
	if cap(e.Lanes) < c.cx.Nodes {
		e.Lanes = make([]kx.LaneLoan, c.cx.Nodes)
	}
	e.Lanes = e.Lanes[:c.cx.Nodes]
	if !c.v.LendLanes(e.Lanes) {
		return false
	}
	*e = Express{Seq: c.seq, Node: c.cx.Node, Nodes: c.cx.Nodes, Max: max, Lanes: e.Lanes}
	c.lent = true
	return true
}

// Return gives c back what Lend lent, with what the borrower did.
func (e *Express) Return(c *Comm) {
	var t stats.Traffic
	for i := range e.Lanes {
		l := &e.Lanes[i]
		t.Add(stats.Traffic{BytesSent: l.BytesSent, MsgsSent: l.Sent, BytesRecv: l.BytesRead, MsgsRecv: l.Read})
	}
	c.expressCalls.Add(e.Calls)
	c.rec.AddCalls(kx.KindAllreduce, e.Calls, e.Time, t)
	c.v.ReturnLanes(e.Lanes)
	c.seq = e.Seq
	c.dense.PutOutside(e.PutFor)
	c.lent = false
}
