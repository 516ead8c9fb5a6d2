//go:build linux

package netio_test

// The transport suite: every link kind a peer can hold (a socket over loopback, a shared-memory
// ring between ranks of one host, the in-memory transport) carries the same collectives, with
// every built-in dtype and op, at 1 to 5 nodes, alone or with two replicas each, and each result
// is checked bitwise against a brute force over data regenerated independently of the library
// (netio/internal/nettest/ref.go). The collectives are what exercise a link: config messages of
// unknown length (Recv), values read into posted places (Await, by prefix), reduce on receive,
// frames by reference on rings from 256 KiB, racing copies under replication.
//
// netio_test may import core: core imports netio's sub-package cpus only, never netio.

import (
	"fmt"
	"kylix/core"
	"kylix/core/kx"
	"kylix/netio"
	"kylix/netio/internal/nettest"
	"kylix/netio/memnet"
	"sync"
	"testing"
	"time"
)

// linkKind starts n ranks of a job in this process whose peers all hold one kind of link.
type linkKind struct {
	name  string
	start func(t *testing.T, n int, o kx.Options) []kx.Transport
}

var linkKinds = []linkKind{
	{"socket", func(t *testing.T, n int, o kx.Options) []kx.Transport { o.Shm = "off"; return tcpJob(t, n, o) }},
	{"ring", func(t *testing.T, n int, o kx.Options) []kx.Transport { o.Shm = "auto"; return tcpJob(t, n, o) }},
	{"memory", func(t *testing.T, n int, o kx.Options) []kx.Transport {
		var ts []kx.Transport
		for _, m := range memnet.NewJob(n, o.Timeout) {
			ts = append(ts, m)
		}
		return ts
	}},
}

// tcpJob connects n ranks over loopback with o's timeout, liveness and shm option. With shm on,
// every pair must have its ring: otherwise the "ring" cases would silently test sockets.
func tcpJob(t *testing.T, n int, o kx.Options) []kx.Transport {
	t.Helper()
	peers := nettest.FreePorts(t, n)
	tcps := make([]*netio.TCP, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			or := o
			or.Rank, or.Size, or.Peers, or.Secret = r, n, peers, "linksuite"
			tcps[r], errs[r] = netio.ConnectLoopback(or)
		}()
	}
	wg.Wait()
	ts := make([]kx.Transport, n)
	for r, tr := range tcps {
		if tr != nil {
			ts[r] = tr
		}
	}
	for r, err := range errs {
		if err != nil {
			closeTransports(ts)
			t.Fatalf("connect rank %d: %v", r, err)
		}
	}
	if o.Shm != "off" {
		for r, tr := range tcps {
			if got := tr.ShmStats().Peers; got != n-1 {
				closeTransports(ts)
				t.Fatalf("shm=%s: rank %d reaches %d peers by ring, want %d", o.Shm, r, got, n-1)
			}
		}
	}
	return ts
}

func closeTransports(ts []kx.Transport) {
	var wg sync.WaitGroup
	for _, tr := range ts {
		if tr != nil {
			wg.Add(1)
			go func() { defer wg.Done(); tr.Close() }()
		}
	}
	wg.Wait()
}

// runComms makes a comm on every transport (rank r with opts(r)) and runs fn on all of them at
// once; it returns the errors by rank. The comms close their transports. A job still running
// after bound hangs: the test fails by its own bound, not go test's.
func runComms(t *testing.T, ts []kx.Transport, bound time.Duration, opts func(r int) kx.Options, fn func(c *core.Comm) error) []error {
	t.Helper()
	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	for r, tr := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := core.NewComm(tr, opts(r))
			if err != nil {
				tr.Close()
				errs[r] = err
				return
			}
			errs[r] = fn(c)
			if err := c.Close(); err != nil && errs[r] == nil {
				errs[r] = err
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatalf("a job of %d ranks was still running after %v: it hangs", len(ts), bound)
	}
	return errs
}

// suiteCase is one job shape: nodes, replicas of each (ranks = nodes * replicas), degrees,
// whether config messages go compressed (lz4: other payload lengths on the link), the sparse
// width, and whether each node asks for exactly the indices it gives (in = out, the same slice:
// a one-layer plan then answers as it combines).
type suiteCase struct {
	nodes, replicas   int
	degrees, compress string
	width             int
	same              bool
}

var suiteCases = []suiteCase{
	{1, 1, "auto", "off", 2, false},
	{2, 1, "direct", "off", 1, false},
	{3, 1, "direct", "off", 3, false},
	{3, 1, "direct", "off", 1, true},
	{4, 1, "binary", "off", 2, false},
	{5, 1, "direct", "lz4", 1, false},
	{5, 1, "auto", "off", 3, true},
	{2, 2, "direct", "off", 2, false},
	{3, 2, "direct", "off", 1, false},
}

// Sizes of the suite's data: the sparse index range and dense lengths are odd; the large dense
// vectors are over 1 MiB (folded on receive at two members, by reference on rings) and over
// 4 MiB (a small job's binary butterfly).
const (
	sparseRange = 4001
	denseSmall  = 1531
	denseLarge  = 300007
	denseHuge   = 1<<20 + 3
)

func TestLinkSuite(t *testing.T) {
	for _, lk := range linkKinds {
		t.Run(lk.name, func(t *testing.T) {
			for i, sc := range suiteCases {
				if testing.Short() && i%2 == 1 {
					continue // -short: every other shape
				}
				t.Run(fmt.Sprintf("n%d_r%d_%s_%s_w%d_same%v", sc.nodes, sc.replicas, sc.degrees, sc.compress, sc.width, sc.same), func(t *testing.T) {
					linkSuiteJob(t, lk, sc)
				})
			}
		})
	}
}

func linkSuiteJob(t *testing.T, lk linkKind, sc suiteCase) {
	seed := int64(sc.nodes*10 + sc.replicas)
	size := sc.nodes * sc.replicas
	all := make([]nettest.Contribution, sc.nodes)
	for nd := range all {
		all[nd] = nettest.GenNode(seed, nd, sparseRange, 250+40*nd, 180+25*nd, sc.width)
		if sc.same {
			all[nd].In = all[nd].Out
		}
	}
	if sc.nodes > 2 && !sc.same {
		all[1].Out, all[1].Vals = nil, nil // a node that contributes nothing
		all[2].In = nil                    // and one that asks for nothing
	}
	small := make([][]int8, sc.nodes)
	for nd := range small {
		small[nd] = nettest.DenseNode(seed, nd, denseSmall)
	}
	large := largeCases(seed, sc.nodes)
	o := kx.Options{Timeout: 20 * time.Second}
	ts := lk.start(t, size, o)
	errs := runComms(t, ts, 3*o.Timeout, func(r int) kx.Options {
		return kx.Options{Rank: r, Size: size, Degrees: sc.degrees, Replication: sc.replicas,
			MinPacket: 4096, Compress: sc.compress, Timeout: o.Timeout, Threads: 1}
	}, func(c *core.Comm) error {
		node := c.Rank() % sc.nodes // replicas of a node are ranks node, node+nodes, ...
		return everyDtypeOp(t, c, all, node, sc.width, small, large)
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	// On rings the large messages went by reference (racing copies, with replication, never do).
	if lk.name == "ring" && size > 1 && sc.replicas == 1 {
		var refs, back uint64
		for _, tr := range ts {
			st := tr.(*netio.TCP).ShmStats()
			refs, back = refs+st.RefFrames, back+st.WrittenBack
		}
		t.Logf("ring: %d frames by reference, %d bytes written back", refs, back)
		if refs == 0 {
			t.Errorf("no frame went by reference over the rings")
		}
	}
}

// everyDtypeOp runs, on one rank of node, a config and then for every dtype and op a reduce,
// a config_reduce and a dense allreduce, then the large dense allreduces; every result is
// compared bitwise with the brute force.
func everyDtypeOp(t *testing.T, c *core.Comm, all []nettest.Contribution, node, width int, small [][]int8, large []largeDense) error {
	mine := all[node]
	p, err := c.Config(mine.Out, mine.In)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer p.Free()
	check := func(what string, d kx.Dtype, o kx.Op, got, want []byte) {
		if i := nettest.FirstDiff(got, want, d.Size()); i >= 0 {
			t.Errorf("%s %s %s rank %d (node %d): element %d of %d differs: got % x, want % x", what, d, o,
				c.Rank(), node, i, len(want)/d.Size(), elemAt(got, i, d), elemAt(want, i, d))
		}
	}
	for _, d := range nettest.Dtypes {
		for _, o := range nettest.OpsFor(d) {
			want := nettest.SparseRef(all, node, d, o, width)
			out := nettest.Encode(d, o, mine.Vals)
			in := make([]byte, len(mine.In)*width*d.Size())
			if err := p.Reduce(out, in, d, o, width); err != nil {
				return fmt.Errorf("reduce %s %s: %w", d, o, err)
			}
			check("reduce", d, o, in, want)
			in = make([]byte, len(in))
			if _, err := c.ConfigReduce(mine.Out, out, mine.In, in, d, o, width, false); err != nil {
				return fmt.Errorf("config_reduce %s %s: %w", d, o, err)
			}
			check("config_reduce", d, o, in, want)

			send := nettest.Encode(d, o, small[node])
			recv := make([]byte, len(send))
			if err := c.Allreduce(send, recv, d, o); err != nil {
				return fmt.Errorf("allreduce %s %s: %w", d, o, err)
			}
			check("allreduce", d, o, recv, nettest.DenseRef(small, d, o))

			// five values: over the lanes where the nodes share a host (netio/shm/lane.go)
			tiny := make([][]int8, len(small))
			for nd := range small {
				tiny[nd] = small[nd][:5]
			}
			send = nettest.Encode(d, o, tiny[node])
			if err := c.Allreduce(send, send, d, o); err != nil {
				return fmt.Errorf("small allreduce %s %s: %w", d, o, err)
			}
			check("small allreduce", d, o, send, nettest.DenseRef(tiny, d, o))
		}
	}
	for _, lg := range large {
		send := nettest.Encode(lg.d, lg.o, lg.vecs[node])
		if err := c.Allreduce(send, send, lg.d, lg.o); err != nil { // in place
			return fmt.Errorf("large allreduce %s %s of %d: %w", lg.d, lg.o, len(send), err)
		}
		check("large allreduce", lg.d, lg.o, send, lg.want)
	}
	return nil
}

// largeDense is a large dense allreduce of the suite: the nodes' vectors and the result, made
// once per job.
type largeDense struct {
	d    kx.Dtype
	o    kx.Op
	vecs [][]int8
	want []byte
}

func largeCases(seed int64, nodes int) []largeDense {
	huge := make([][]int8, nodes)
	for nd := range huge {
		huge[nd] = nettest.DenseNode(seed+1, nd, denseHuge)
	}
	cut := make([][]int8, nodes)
	for nd := range cut {
		cut[nd] = huge[nd][:denseLarge]
	}
	ls := []largeDense{{d: kx.F64, o: kx.Sum, vecs: cut}, {d: kx.I32, o: kx.Bxor, vecs: cut}}
	if nodes&(nodes-1) == 0 && nodes > 1 { // where 4 MiB takes the binary butterfly's folds
		ls = append(ls, largeDense{d: kx.F32, o: kx.Prod, vecs: huge})
	}
	for i := range ls {
		ls[i].want = nettest.DenseRef(ls[i].vecs, ls[i].d, ls[i].o)
	}
	return ls
}

func elemAt(b []byte, i int, d kx.Dtype) []byte {
	if (i+1)*d.Size() > len(b) {
		return nil
	}
	return b[i*d.Size() : (i+1)*d.Size()]
}
