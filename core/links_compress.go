package core

import (
	"kylix/core/keyset"
	"kylix/core/kx"
	"kylix/core/planning"
	"sync"
)

// netState is what a comm knows of its network: the link model and the rates of its own index
// codec, which compress=auto weighs against each other message by message.
type netState struct {
	mu    sync.Mutex // Stats reads these while a collective may be setting them
	links *planning.Links
	tried bool // the first config's measurement ran (or was not needed)
	// The codec's cost per key each way, the least seen over this comm's messages (its own
	// speed: time lost to preemption on shared cores would inflate a mean, and one stalled
	// message must not stop compression for the rest of the comm), and the compression ratio
	// of index bytes, a running mean.
	encNs, decNs, ratio float64
}

// Priors of the estimates, before this comm has compressed anything: measured on the
// development machine (BenchmarkIndexEncodeD03/D20, BenchmarkIndexDecode*: 10-20 ns a key each
// way, ratios 5-8 at densities 0.03 and 0.2), rounded towards not compressing.
const (
	priorEncNs = 20
	priorDecNs = 20
	priorRatio = 4
	emaWeight  = 0.25 // of each new observation
)

// packLayer0 decides which layer-0 members this rank's config messages go to compressed, and
// puts the rows for those in set order (keyset.SetOrder: a compressed message then carries no
// permutation). nil: none. The rows' order is part of the plan the member builds, and with
// replication the member takes each message from whichever replica of the sender it reaches
// first, so the replicas of a node must decide alike: they decide on the agreed link model and
// the codec's priors, never on their own measurements.
func (p *Plan) packLayer0(out, in *keyset.Layer0Rows, same bool) []bool {
	c, t := p.c, p.topo
	d, node := t.Degrees[0], c.cx.Node
	me := t.Digit(node, 0)
	so, si := out.Split(d), in.Split(d)
	var pack []bool
	for g := 0; g < d; g++ {
		keys := so[g+1] - so[g]
		if !same {
			keys += si[g+1] - si[g]
		}
		if g != me && c.plan.compressTo(t.Member(node, 0, g), keys, c.opts.Replication > 1) {
			if pack == nil {
				pack = make([]bool, d)
			}
			pack[g] = true
		}
	}
	if pack != nil {
		keyset.SetOrder(out, d, pack, c.cx.Threads)
		if !same {
			keyset.SetOrder(in, d, pack, c.cx.Threads)
		}
	}
	return pack
}

// compressTo decides whether the index lists of a config message to rank `to`, keys keys in
// all, travel compressed: always with compress=lz4, never with off, and with auto when `to`
// is on another host and the link time of the bytes saved exceeds what encoding and decoding
// cost (the priors' costs when agreed, which every rank shares). Without a link model auto
// does not compress.
func (pl *planner) compressTo(to, keys int, agreed bool) bool {
	if keys == 0 {
		return false
	}
	switch pl.opts.Compress {
	case "lz4":
		return true
	case "auto":
	default:
		return false
	}
	// On one host a message is a copy through the kernel: a key's coding (tens of ns) costs
	// more than copying the bytes it saves (a few ns), whatever the probe measured (on shared
	// cores it measures the scheduler as much as the copy).
	if pl.opts.Replication <= 1 && pl.cx.SameHost(to) {
		return false
	}
	n := &pl.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.links == nil {
		return false
	}
	encNs, decNs, ratio := orPrior(n.encNs, priorEncNs), orPrior(n.decNs, priorDecNs), orPrior(n.ratio, priorRatio)
	if agreed {
		encNs, decNs, ratio = priorEncNs, priorDecNs, priorRatio
	}
	// Each byte not sent saves its time at the link's rate; the message's overhead is paid
	// either way.
	saved := 8 * float64(keys) * (1 - 1/ratio) / n.links.PeerBytesPerSec(to)
	return saved > float64(keys)*(encNs+decNs)*1e-9
}

func orPrior(v, prior float64) float64 {
	if v == 0 {
		return prior
	}
	return v
}

// noteConfigMsg counts a config message sent or received in the statistics and, when it was
// compressed, folds its figures into the codec's estimates.
func (pl *planner) noteConfigMsg(tag kx.Tag, f keyset.MsgFigures, sent bool) {
	if s := pl.rec; s != nil {
		s.NoteIndex(tag, f.Raw, f.Wire, sent)
	}
	if !f.Packed || f.Keys == 0 || f.Wire == 0 {
		return
	}
	n := &pl.net
	n.mu.Lock()
	defer n.mu.Unlock()
	ns := float64(f.Took.Nanoseconds()) / float64(f.Keys)
	if sent {
		n.encNs = least(n.encNs, ns)
	} else {
		n.decNs = least(n.decNs, ns)
	}
	n.ratio = ema(n.ratio, float64(f.Raw)/float64(f.Wire))
}

func least(old, x float64) float64 {
	if old == 0 {
		return x
	}
	return min(old, x)
}

func ema(old, x float64) float64 {
	if old == 0 {
		return x
	}
	return old + emaWeight*(x-old)
}

// compressNote explains the compress option in the statistics.
func compressNote(opt string) string {
	switch opt {
	case "lz4":
		return "index lists of every config message are compressed (delta, byte shuffle, lz4); values are not"
	case "auto":
		return "index lists are compressed message by message where the measured link makes it pay; values are not"
	}
	return "off: index lists travel as they are"
}
