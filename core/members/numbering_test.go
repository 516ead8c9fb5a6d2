package members

import (
	"fmt"
	"kylix/core/kx"
	"slices"
	"strings"
	"testing"
	"time"
)

// How a comm's ranks are numbered and grouped, each against a reference written out here from
// the rules (include/kylix.h, kylix_resize and replication):
//   - rank r of a comm of size ranks with replication s is replica r/m of node r%m (m = size/s);
//   - a shrunk comm numbers its survivors 0..k-1 in their old order; with replication a node
//     with a live replica keeps all of its replicas (dead ones too), and its replicas keep their
//     replica number;
//   - a resize with joiners: without replication the survivors, then the joiners in the order
//     they arrived; with replication s, joiners first replace lost replicas (lowest node first,
//     then lowest replica), then form new nodes s at a time, the rest waiting;
//   - kylix_members gives each rank its old rank, -1 for a joiner.

// viewOfRank is the view of an original comm of size ranks from rank's side.
func viewOfRank(t *testing.T, rank, size, s int) *View {
	t.Helper()
	v, err := New(NewProc(simTransport{p: &simMeshed{rank: rank, size: size}}), s)
	if err != nil {
		t.Fatalf("New(rank %d, size %d, s %d): %v", rank, size, s, err)
	}
	return v
}

func TestReplicaGrouping(t *testing.T) {
	for size := 1; size <= 12; size++ {
		for s := 1; s <= size; s++ {
			if size%s != 0 {
				if _, err := New(NewProc(simTransport{p: &simMeshed{size: size}}), s); kx.CodeOf(err) != kx.CodeArg {
					t.Fatalf("size %d, replication %d: %v, want CodeArg", size, s, err)
				}
				continue
			}
			m := size / s
			for rank := 0; rank < size; rank++ {
				v := viewOfRank(t, rank, size, s)
				if v.Nodes() != m || v.Replication() != s || v.Node() != rank%m {
					t.Fatalf("size %d, s %d, rank %d: node %d of %d, replication %d", size, s, rank, v.Node(), v.Nodes(), v.Replication())
				}
				for r := 0; r < size; r++ {
					if got := v.replicas[r%m][r/m]; got != r {
						t.Fatalf("size %d, s %d: replica %d of node %d is rank %d, want %d", size, s, r/m, r%m, got, r)
					}
				}
			}
		}
	}
}

// shrunkRanks is the reference for a shrink: the old ranks of the new comm, in new-rank order.
func shrunkRanks(size, s int, failed func(int) bool) []int {
	m := size / s
	var nodes []int // surviving nodes, ascending
	for j := 0; j < m; j++ {
		for k := 0; k < s; k++ {
			if !failed(k*m + j) {
				nodes = append(nodes, j)
				break
			}
		}
	}
	out := make([]int, s*len(nodes))
	for r := range out { // new rank r is replica r/m' of surviving node r%m'
		out[r] = r/len(nodes)*m + nodes[r%len(nodes)]
	}
	return out
}

func TestShrinkNumbering(t *testing.T) {
	eachFailedSet(8, 8, func(size, s, mask int, failed bitset) {
		want := shrunkRanks(size, s, failed.has)
		for me := 0; me < size; me++ {
			if failed.has(me) {
				continue // a rank's failed set never holds itself
			}
			checkKeepView(t, viewOfRank(t, me, size, s), failed, want, fmt.Sprintf("size %d, s %d, failed %b, rank %d", size, s, mask, me))
		}
	})
}

// eachFailedSet calls f with every failed set of every comm of up to maxSize ranks, with each
// replication up to maxS that divides the size.
func eachFailedSet(maxSize, maxS int, f func(size, s, mask int, failed bitset)) {
	for size := 1; size <= maxSize; size++ {
		for s := 1; s <= min(size, maxS); s++ {
			if size%s != 0 {
				continue
			}
			for mask := 0; mask < 1<<size; mask++ {
				failed := newBitset(size)
				for r := 0; r < size; r++ {
					if mask>>r&1 != 0 {
						failed.add(r)
					}
				}
				f(size, s, mask, failed)
			}
		}
	}
}

// keptMembers is what a resize's leader asks the join server for: the kept members' addresses
// in their new order, "" for a dead replica (a hole).
func keptMembers(kept []int, failed bitset) (members []string, holes int) {
	members = make([]string, len(kept))
	for i, r := range kept {
		if failed.has(r) {
			holes++
		} else {
			members[i] = memberAddr(r)
		}
	}
	return members, holes
}

// checkKeepView shrinks v by failed and checks the new view against want (old ranks in new
// order), from v's rank.
func checkKeepView(t *testing.T, v *View, failed bitset, want []int, what string) *View {
	t.Helper()
	keep := survivors(failed, v.Size(), v.Replication())
	var kept []int
	for r := 0; r < v.Size(); r++ {
		if keep(r) {
			kept = append(kept, r)
		}
	}
	if !slices.Equal(kept, want) {
		t.Fatalf("%s: kept %v, want %v", what, kept, want)
	}
	nv := v.keepView(v.epoch+1, kept)
	wantRank := slices.Index(want, v.Rank())
	if nv.Rank() != wantRank || nv.Size() != len(want) {
		t.Fatalf("%s: rank %d of %d, want %d of %d", what, nv.Rank(), nv.Size(), wantRank, len(want))
	}
	if len(want) == 0 {
		return nv
	}
	m2 := len(want) / v.Replication()
	if nv.Nodes() != m2 || (wantRank >= 0 && nv.Node() != wantRank%m2) {
		t.Fatalf("%s: node %d of %d, want %d of %d", what, nv.Node(), nv.Nodes(), wantRank%m2, m2)
	}
	for r, old := range want {
		p := v.procRank(old) // the process under old rank
		if got := nv.procRank(r); got != p {
			t.Fatalf("%s: new rank %d is process %d, want %d", what, r, got, p)
		}
		if got, ok := nv.commRank(p); !ok || got != r {
			t.Fatalf("%s: process %d maps to rank %d (%v), want %d", what, p, got, ok, r)
		}
		if got := nv.replicas[r%m2][r/m2]; got != p {
			t.Fatalf("%s: replica %d of node %d is process %d, want %d", what, r/m2, r%m2, got, p)
		}
	}
	for p := 0; p < v.t.Size(); p++ {
		if _, ok := nv.commRank(p); ok != slices.Contains(nv.procOf, p) {
			t.Fatalf("%s: process %d is a member: %v", what, p, ok)
		}
	}
	// The new comm's numbers lie in its epoch's range, above every agreement number of it and
	// below the next epoch's.
	if b := nv.Base(); b <= agreeSeq(nv.epoch, decisionRound+1) || b >= agreeSeq(nv.epoch+1, 0) || b&(1<<viewShift-1) != 0 {
		t.Fatalf("%s: base %#x is outside epoch %d's comm numbers", what, b, nv.epoch)
	}
	return nv
}

// Two shrinks in a row: the second numbers the first's survivors, in their order.
func TestShrinkTwice(t *testing.T) {
	const size = 8
	for _, s := range []int{1, 2} {
		for a := 0; a < size; a++ {
			for b := 0; b < size-1; b++ {
				f1 := newBitset(size)
				f1.add(a)
				first := shrunkRanks(size, s, f1.has)
				for me := 0; me < size; me++ {
					if me == a {
						continue
					}
					v1 := checkKeepView(t, viewOfRank(t, me, size, s), f1, first, fmt.Sprintf("s %d, first shrink without %d, rank %d", s, a, me))
					if b >= v1.Size() || b == v1.Rank() {
						continue
					}
					f2 := newBitset(v1.Size())
					f2.add(b)
					var second []int // in v1's ranks
					for _, r := range shrunkRanks(v1.Size(), s, f2.has) {
						second = append(second, r)
					}
					checkKeepView(t, v1, f2, second, fmt.Sprintf("s %d, without %d then %d, rank %d", s, a, b, me))
				}
			}
		}
	}
}

// placed is the reference for a resize with joiners: the addresses of the new comm and each
// one's old rank. members holds the kept members in their new order, "" for a dead replica;
// joiners are the admitted ones in arrival order.
func placed(members []string, prev []int, s int, joiners []string) ([]string, []int) {
	if s == 1 {
		p := slices.Clone(prev)
		for range joiners {
			p = append(p, -1)
		}
		return append(slices.Clone(members), joiners...), p
	}
	m := len(members) / s
	type slot struct{ node, replica int }
	var holes []slot
	for j := 0; j < m; j++ { // lowest node first, then lowest replica
		for k := 0; k < s; k++ {
			if members[k*m+j] == "" {
				holes = append(holes, slot{j, k})
			}
		}
	}
	m2 := m + (len(joiners)-len(holes))/s
	peers, prevOut := make([]string, s*m2), make([]int, s*m2)
	for r := range peers {
		k, j := r/m2, r%m2
		switch {
		case j >= m: // a new node, made of joiners s at a time
			peers[r], prevOut[r] = joiners[len(holes)+(j-m)*s+k], -1
		case members[k*m+j] == "":
			peers[r], prevOut[r] = joiners[slices.Index(holes, slot{j, k})], -1
		default:
			peers[r], prevOut[r] = members[k*m+j], prev[k*m+j]
		}
	}
	return peers, prevOut
}

// admitCountRef is the reference count of joiners a resize takes: all of them without replication;
// with replication, none unless every hole can be filled, then whole nodes.
func admitCountRef(waiting, holes, s int) int {
	if s == 1 {
		return waiting
	}
	if waiting < holes {
		return 0
	}
	return holes + (waiting-holes)/s*s
}

func TestJoinerPlacement(t *testing.T) {
	eachFailedSet(8, 3, func(size, s, mask int, failed bitset) {
		kept := shrunkRanks(size, s, failed.has)
		members, holes := keptMembers(kept, failed)
		for waiting := 0; waiting <= 5; waiting++ {
			n := kx.AdmitCount(waiting, holes, s)
			if want := admitCountRef(waiting, holes, s); n != want {
				t.Fatalf("size %d, s %d, failed %b: %d waiting, %d holes: admits %d, want %d", size, s, mask, waiting, holes, n, want)
			}
			if n == 0 {
				continue
			}
			var joiners []string
			for i := 0; i < n; i++ {
				joiners = append(joiners, fmt.Sprintf("j%d", i))
			}
			peers, prev := kx.Place(members, kept, s, joiners)
			wantPeers, wantPrev := placed(members, kept, s, joiners)
			if !slices.Equal(peers, wantPeers) || !slices.Equal(prev, wantPrev) {
				t.Fatalf("size %d, s %d, failed %b, %d joiners:\n got %v %v\nwant %v %v", size, s, mask, n, peers, prev, wantPeers, wantPrev)
			}
		}
	})
}

// The numbering end to end: members run Resize over the simulated network without faults
// (some ranks dead before it starts, joiners arriving one after another), and every member and
// joiner that returns must hold the reference numbering, as kylix_members reports it.
func TestResizeNumbering(t *testing.T) {
	seed := uint64(0)
	for _, tc := range []struct {
		size, s, joiners int
		dead             []int
	}{
		{4, 1, 0, []int{2}}, {4, 1, 2, []int{1}}, {5, 1, 3, []int{0, 3}}, {6, 1, 1, nil},
		{4, 2, 1, []int{1}}, {6, 2, 3, []int{4}}, {6, 2, 2, []int{0, 5}}, {8, 2, 4, []int{2, 6}},
		{6, 3, 3, []int{1}}, {6, 2, 0, []int{3}},
	} {
		seed++
		what := fmt.Sprintf("size %d, s %d, dead %v, %d joiners", tc.size, tc.s, tc.dead, tc.joiners)
		s := newSim(seed)
		run := &simRun{seed: seed, faults: map[string]int{}, cfg: simConfig{n: tc.size, s: tc.s, elastic: true,
			joiners: tc.joiners, timeout: 10 * time.Second, liveness: time.Second}}
		w := newSimWorld(run, s, func() time.Duration { return time.Duration(20+s.rng.IntN(480)) * time.Microsecond })
		starts := make([]time.Duration, tc.size)
		for r := range starts {
			starts[r] = 5 * time.Millisecond
		}
		w.startMembers(starts)
		for _, r := range tc.dead {
			s.at(0, func() { w.killMember(r, "before the resize") })
		}
		for i := 0; i < tc.joiners; i++ {
			w.addJoiner(time.Duration(i) * time.Millisecond)
		}
		w.finish()
		if run.crash != "" || len(run.problems) > 0 {
			t.Fatalf("%s: %s %v", what, run.crash, run.problems)
		}

		failed := newBitset(tc.size)
		for _, r := range tc.dead {
			failed.add(r)
		}
		kept := shrunkRanks(tc.size, tc.s, failed.has)
		members, holes := keptMembers(kept, failed)
		var joiners []string
		for i := 0; i < admitCountRef(tc.joiners, holes, tc.s); i++ {
			joiners = append(joiners, fmt.Sprintf("j%d", i))
		}
		wantPeers, wantPrev := members, kept
		if len(joiners) > 0 {
			wantPeers, wantPrev = placed(members, kept, tc.s, joiners)
		}
		for _, o := range run.outcomes {
			addr := strings.TrimPrefix(o.who, "joiner ")
			switch {
			case o.oldRank >= 0 && failed.has(o.oldRank):
				continue
			case o.oldRank < 0 && !slices.Contains(joiners, addr):
				if o.state != "waiting" {
					t.Fatalf("%s: %s was not to be admitted, but: %s", what, o.who, o.state)
				}
				continue // waits for a later resize
			case o.state != "ok":
				t.Fatalf("%s: %s: %s %v %s", what, o.who, o.state, o.code, o.err)
			case !slices.Equal(o.prev, wantPrev):
				t.Fatalf("%s: %s holds ranks %v, want %v\n%s", what, o.who, o.prev, wantPrev, run.report())
			case o.oldRank >= 0 && wantPrev[o.rank] != o.oldRank:
				t.Fatalf("%s: %s became rank %d, want %d", what, o.who, o.rank, slices.Index(wantPrev, o.oldRank))
			case o.oldRank < 0 && wantPeers[o.rank] != addr:
				t.Fatalf("%s: %s became rank %d, want %d", what, o.who, o.rank, slices.Index(wantPeers, addr))
			}
		}
	}
}
