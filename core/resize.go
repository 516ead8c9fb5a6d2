package core

import (
	"errors"
	"kylix/core/kx"
	"kylix/core/members"
	"slices"
)

// Resize (kylix_resize): elastic membership, the mode of Zhang and Qiu, "Efficient,
// Fault-tolerant and Elastic Allreduce Framework for Iterative Algorithms" §5-6. The agreement
// and the admission of joiners are members/resize.go's; this is the comm's side.

// Resize is called by every live member of c. It drops the dead (as Shrink) and, when c is
// elastic, admits every process waiting to join at the moment the members agree. The new comm
// numbers the survivors 0..k-1 in their order in c, then the joiners in arrival order (with
// replication s, joiners first fill the places of dead replicas, lowest node first, then form
// new nodes of s). When that would leave fewer than minSize ranks, it waits for joiners up to
// c's timeout; if too few come it fails with CodeTimeout and c goes on unchanged (same members,
// same plans, still usable).
//
// Requests in flight: Resize first waits for every non-blocking operation of c to finish; each
// ends with its own status (its wait is bounded by the timeout), which kylix_wait then returns.
// No operation is cut short by a resize, and none runs on the new comm.
//
// Otherwise c is broken from then on (collectives fail with CodeState), like a shrunk comm; a
// resize that failed may be tried again on c (every live member must), one that succeeded
// may not: at most one resize of c succeeds. Errors: CodeArg (minSize < 0), CodeState (c closed
// or already resized), CodeTimeout (minSize not met, c unchanged), CodePeer (this side holds
// no majority of c, or the others took this rank for failed, or a rank died during the resize:
// each names the ranks), CodeNet/CodeAuth (the join server could not be reached).
func (c *Comm) Resize(minSize int) (*Comm, error) {
	if minSize < 0 {
		return nil, kx.Errorf(kx.CodeArg, "resize: min_size=%d must be >= 0", minSize)
	}
	return c.resize(minSize, true, "resize: ")
}

func (c *Comm) resize(minSize int, admit bool, what string) (*Comm, error) {
	c.ex.waitIdle() // no request in flight may touch the transport from now on
	attempt, prior, err := c.st.startResize(what)
	if err != nil {
		return nil, err
	}
	rq := members.ResizeRequest{RevokeSeq: c.seq, Attempt: attempt, MinSize: minSize,
		Liveness: c.opts.Liveness, Degrees: c.opts.Degrees, Compress: c.opts.Compress, MinPacket: c.opts.MinPacket}
	if admit {
		rq.Grower = c.grower
	}
	res, err := c.v.Resize(rq)
	var un *members.Unchanged
	if errors.As(err, &un) {
		// min_size not met: c carries on with the same members at fresh sequence numbers (the
		// agreement moved the transport past the old ones).
		old := c.v
		un.View.TakeLanes(old) // the comm's ranks agreed on them (c.dense)
		c.st.mu.Lock()
		c.v, c.seq, c.st.broken = un.View, un.View.Base(), prior
		c.cx.Node, c.cx.Nodes, c.cx.Replication = un.View.Node(), un.View.Nodes(), un.View.Replication()
		c.st.mirror()
		c.st.resizeAttempts = 0
		c.st.mu.Unlock()
		old.Close()
		return nil, kx.Prefixed(what, un.Err)
	}
	if err != nil {
		return nil, kx.Prefixed(what, err)
	}
	c.st.breakWith(&shrunkError{cause: prior, done: true})
	opts := c.opts
	if a := res.Adm; a != nil {
		opts.Degrees, opts.Compress, opts.MinPacket = a.Degrees, a.Compress, a.MinPacket
	}
	nc, err := resizedComm(res.View, opts, res.Prev, c.grower)
	if err != nil {
		return nil, kx.Prefixed(what, err)
	}
	nc.dense.Switch = c.dense.Switch
	nc.v.TakeLanes(c.v) // over the same transport (a shrink): nc's ranks agree on them anew
	return nc, nil
}

// resizedComm makes the comm of view v: its rank and size, and a fixed degrees list that no
// longer fits falls back to auto ("direct" and "binary" adapt).
func resizedComm(v *members.View, opts kx.Options, prev []int, g kx.Grower) (*Comm, error) {
	opts.Rank, opts.Size = v.Rank(), v.Size()
	opts.Join = ""
	if _, err := kx.ParseDegreesSpec(opts.Degrees, v.Nodes()); err != nil {
		opts.Degrees = "auto"
	}
	nc, err := newComm(v, opts)
	if err != nil {
		v.Close()
		return nil, err
	}
	nc.prev, nc.grower = prev, g
	return nc, nil
}

// NewJoinedComm makes a joiner's comm from the transport of the mesh a resize admitted it to
// (netio.Join): the job's planning options and replication come with the admission.
func NewJoinedComm(t kx.Transport, opts kx.Options, a kx.Admission, g kx.Grower) (*Comm, error) {
	opts.Replication = max(a.Replication, 1)
	opts.Degrees, opts.Compress, opts.MinPacket = a.Degrees, a.Compress, a.MinPacket
	v, err := members.New(members.NewProc(t), opts.Replication)
	if err != nil {
		t.Close()
		return nil, err
	}
	return resizedComm(v, opts, a.Prev, g)
}

// SetGrower makes c elastic: its resizes admit joiners through g (netio's join client).
func (c *Comm) SetGrower(g kx.Grower) { c.grower = g }

// Members gives, for each rank of c, its rank in the comm c was resized from, or -1 for a
// joiner (kylix_members); on an original comm, each rank's own number.
func (c *Comm) Members() []int {
	if c.prev != nil {
		return slices.Clone(c.prev)
	}
	out := make([]int, c.Size())
	for r := range out {
		out[r] = r
	}
	return out
}

// JoinAddress is where processes join c's job (kylix_join_address), or CodeState when c is not
// elastic.
func (c *Comm) JoinAddress() (string, error) {
	if c.grower == nil {
		return "", kx.Errorf(kx.CodeState, "join address: this comm is not elastic (start the job with elastic=1 or kylixrun --elastic, and a rendezvous)")
	}
	return c.grower.JoinAddress(), nil
}
