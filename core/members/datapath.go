package members

import (
	"kylix/core/kx"
	"sync"
)

// InlineSendBytes is the largest message sent on the caller's goroutine: small enough that the
// kernel takes it at once, so a goroutine hand-off would only add latency.
const InlineSendBytes = 64 << 10

// Send delivers the message to node `to`. With replication it goes to every replica of the node
// that is not known to be dead (to this rank itself when `to` is its own node: its replicas
// compute the same message); copies to several replicas go out in parallel when the message is
// large, so a replica that reads slowly holds up only its own copy's write.
func (v *View) Send(to int, tag kx.Tag, bufs ...[]byte) error {
	if to < 0 || to >= v.m {
		return kx.Errorf(kx.CodeArg, "send: destination node %d is not in 0..%d", to, v.m-1)
	}
	if v.s == 1 {
		return v.translate(v.snd.Send(v.replicas[to][0], tag, bufs...))
	}
	tag.Race = true
	if to == v.node {
		return v.translate(v.snd.Send(v.t.Rank(), tag, bufs...))
	}
	dst := v.replicas[to]
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	// A copy for a replica slow to take it must not hold the sender up (packet racing): the
	// transport is told when another replica's copy is out (large messages, sent in parallel)
	// or leaves the rest of the write after a short lag (small ones, sent in turn).
	errs := make([]error, len(dst))
	if n <= InlineSendBytes {
		for i, r := range dst {
			errs[i] = v.snd.SendOrLeave(r, tag, nil, bufs...)
		}
	} else {
		leave := make(chan struct{})
		var once sync.Once
		sendOne := func(i, r int) {
			if errs[i] = v.snd.SendOrLeave(r, tag, leave, bufs...); errs[i] == nil {
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
			return v.translate(err)
		}
	}
	return nil
}

// source is the process to wait on for a message from node `from`; with replication the
// transport takes a copy from any replica of the node.
func (v *View) source(from int, tag *kx.Tag) (int, error) {
	if from < 0 || from >= v.m {
		return 0, kx.Errorf(kx.CodeArg, "recv: source node %d is not in 0..%d", from, v.m-1)
	}
	if v.s == 1 {
		return v.replicas[from][0], nil
	}
	tag.Race = true
	if from == v.node {
		return v.t.Rank(), nil
	}
	return v.replicas[from][0], nil
}

// Recv returns the payload of the message from node `from` (kx.Receiver.Recv).
func (v *View) Recv(from int, tag kx.Tag) ([]byte, error) {
	p, err := v.source(from, &tag)
	if err != nil {
		return nil, err
	}
	b, err := v.rcv.Recv(p, tag)
	return b, v.translate(err)
}

// Expect posts dst for the message from node `from`; a source outside the comm is ignored (the
// Await for it reports it).
func (v *View) Expect(from int, tag kx.Tag, dst []byte) {
	if p, err := v.source(from, &tag); err == nil {
		v.rcv.Post(p, tag, dst, kx.Fold{})
	}
}

// ExpectFold posts dst for the message from node `from`, combined into it by fold; only for an
// unreplicated comm (kx.Receiver.Post), which the caller checks (Replication).
func (v *View) ExpectFold(from int, tag kx.Tag, dst []byte, fold kx.Fold) {
	if p, err := v.source(from, &tag); err == nil {
		v.rcv.Post(p, tag, dst, fold)
	}
}

// Await waits until the message posted with Expect has landed.
func (v *View) Await(from int, tag kx.Tag) (int, error) {
	p, err := v.source(from, &tag)
	if err != nil {
		return 0, err
	}
	n, err := v.rcv.Await(p, tag, kx.Whole)
	return n, v.translate(err)
}

// AwaitPrefix waits until the first n bytes of the posted message have landed.
func (v *View) AwaitPrefix(from int, tag kx.Tag, n int) error {
	p, err := v.source(from, &tag)
	if err != nil {
		return err
	}
	_, err = v.rcv.Await(p, tag, n)
	return v.translate(err)
}

// sendRank and recvRank address a member by its comm rank, not its node: the shrink agreement
// talks to every process, replicas included.
func (v *View) sendRank(r int, tag kx.Tag, b []byte) error {
	return v.translate(v.snd.Send(v.procRank(r), tag, b))
}

func (v *View) recvRank(r int, tag kx.Tag) ([]byte, error) {
	b, err := v.rcv.Recv(v.procRank(r), tag)
	return b, v.translate(err)
}
