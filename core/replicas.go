package core

import (
	"kylix/core/kx"
	"sync"
	"time"
)

// Replication ("Kylix: A Sparse Allreduce for Commodity Clusters", §V): a job of size ranks
// with replication s runs the collectives of m = size/s nodes. Rank r is replica r/m of node
// r%m; the s replicas of a node are given the same data and make the same calls, so they send
// the same bytes.
//
// replicaTransport is the node-level transport the algorithms see (rank = node, size = m) over
// the process-level one: a message for node j goes to every live replica of j, and a receive
// from node j takes the first copy from any replica of j. The racing itself (first copy wins,
// later ones dropped without being buffered whole) is the process transport's: the messages
// carry Tag.Race, and the transport was told the grouping (replicaGrouper). A dead replica is
// skipped by sends and ignored by waits; a wait fails with CodePeer only when every replica of
// its node is dead.
type replicaTransport struct {
	raw      kx.Transport
	s, m     int
	node     int
	replicas [][]int // node -> its ranks of raw, in replica order
}

// leavingSender is implemented by transports that can finish a write in the background once
// the caller no longer waits for it (netio's TCP, latesend.go).
type leavingSender interface {
	SendOrLeave(to int, tag kx.Tag, leave <-chan struct{}, bufs ...[]byte) error
}

// replicaGrouper is implemented by transports that can race copies (netio's TCP and Mem).
type replicaGrouper interface {
	SetReplicaGroups(groupOf []int) error
}

// newReplicaTransport groups raw's ranks into m = size/s nodes and tells the transport.
func newReplicaTransport(raw kx.Transport, s int) (*replicaTransport, error) {
	n := raw.Size()
	if s < 1 || n%s != 0 {
		return nil, kx.Errorf(kx.CodeArg, "replication: size=%d is not a multiple of replication=%d", n, s)
	}
	m := n / s
	rt := &replicaTransport{raw: raw, s: s, m: m, node: raw.Rank() % m, replicas: make([][]int, m)}
	for r := 0; r < n; r++ {
		rt.replicas[r%m] = append(rt.replicas[r%m], r)
	}
	// The grouping is set once, on the transport that owns the connections, when the original
	// comm is made. A comm shrunk from it keeps whole nodes only (Shrink), so the grouping of
	// the original still holds for it.
	if _, shrunk := raw.(*subTransport); shrunk {
		return rt, nil
	}
	g, ok := unwrapLease(raw).(replicaGrouper)
	if !ok {
		return nil, kx.Errorf(kx.CodeArg, "replication: this transport cannot race copies of a message")
	}
	groupOf := make([]int, n)
	for r := range groupOf {
		groupOf[r] = r % m
	}
	if err := g.SetReplicaGroups(groupOf); err != nil {
		return nil, err
	}
	return rt, nil
}

// unwrapLease looks through the lease an original comm holds once it has been shrunk.
func unwrapLease(t kx.Transport) kx.Transport {
	if l, ok := t.(*transportLease); ok {
		return l.Transport
	}
	return t
}

func (rt *replicaTransport) Rank() int              { return rt.node }
func (rt *replicaTransport) Size() int              { return rt.m }
func (rt *replicaTransport) Timeout() time.Duration { return rt.raw.Timeout() }
func (rt *replicaTransport) Close() error           { return rt.raw.Close() }
func (rt *replicaTransport) Release(b []byte)       { rt.raw.Release(b) }
func (rt *replicaTransport) FailedRanks() []int     { return rt.raw.FailedRanks() }
func (rt *replicaTransport) Unwrap() kx.Transport   { return rt.raw }

func (rt *replicaTransport) Begin(seq uint64, fp kx.Fingerprint) { rt.raw.Begin(seq, fp) }
func (rt *replicaTransport) Abort(seq uint64, err error)         { rt.raw.Abort(seq, err) }

// Send delivers the message to every replica of node `to` that is not known to be dead (to
// this rank itself when `to` is its own node: its replicas compute the same message). Copies
// to several replicas go out in parallel when the message is large, so a replica that reads
// slowly holds up only its own copy's write.
func (rt *replicaTransport) Send(to int, tag kx.Tag, bufs ...[]byte) error {
	if to < 0 || to >= rt.m {
		return kx.Errorf(kx.CodeArg, "send: destination node %d is not in 0..%d", to, rt.m-1)
	}
	tag.Race = true
	if to == rt.node {
		return rt.raw.Send(rt.raw.Rank(), tag, bufs...)
	}
	dst := rt.replicas[to]
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	// A copy for a replica slow to take it must not hold the sender up (packet racing): a
	// transport that can leave the rest of a write to the background is told when another
	// replica's copy is out (large messages, sent in parallel) or leaves it after a short lag
	// (small ones, sent in turn).
	ls, _ := unwrapLease(rt.raw).(leavingSender)
	send := func(r int, leave <-chan struct{}) error {
		if ls != nil {
			return ls.SendOrLeave(r, tag, leave, bufs...)
		}
		return rt.raw.Send(r, tag, bufs...)
	}
	errs := make([]error, len(dst))
	if n <= inlineSend {
		for i, r := range dst {
			errs[i] = send(r, nil)
		}
	} else {
		leave := make(chan struct{})
		var once sync.Once
		sendOne := func(i, r int) {
			if errs[i] = send(r, leave); errs[i] == nil {
				once.Do(func() { close(leave) })
			}
		}
		var wg sync.WaitGroup
		for i, r := range dst[1:] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sendOne(i+1, r)
			}()
		}
		sendOne(0, dst[0])
		wg.Wait()
	}
	// A replica that is gone (crashed or finalized) is skipped: its siblings have the message,
	// and a node none of whose replicas is alive fails the waits for it, not the sends to it (a
	// node may finalize as soon as one copy of everything reached it, while its siblings' peers
	// still send).
	for _, err := range errs {
		if err != nil && kx.CodeOf(err) != kx.CodePeer {
			return err
		}
	}
	return nil
}

// source is a rank of node `from` to wait on; the transport takes a copy from any of them.
func (rt *replicaTransport) source(from int) (int, error) {
	if from < 0 || from >= rt.m {
		return 0, kx.Errorf(kx.CodeArg, "recv: source node %d is not in 0..%d", from, rt.m-1)
	}
	if from == rt.node {
		return rt.raw.Rank(), nil
	}
	return rt.replicas[from][0], nil
}

func (rt *replicaTransport) Recv(from int, tag kx.Tag) ([]byte, error) {
	r, err := rt.source(from)
	if err != nil {
		return nil, err
	}
	tag.Race = true
	return rt.raw.Recv(r, tag)
}

func (rt *replicaTransport) Expect(from int, tag kx.Tag, dst []byte) {
	if r, err := rt.source(from); err == nil {
		tag.Race = true
		rt.raw.Expect(r, tag, dst)
	}
}

func (rt *replicaTransport) Await(from int, tag kx.Tag) (int, error) {
	r, err := rt.source(from)
	if err != nil {
		return 0, err
	}
	tag.Race = true
	return rt.raw.Await(r, tag)
}

func (rt *replicaTransport) AwaitPrefix(from int, tag kx.Tag, n int) error {
	r, err := rt.source(from)
	if err != nil {
		return err
	}
	tag.Race = true
	return rt.raw.AwaitPrefix(r, tag, n)
}
