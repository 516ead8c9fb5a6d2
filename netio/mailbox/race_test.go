package mailbox

import (
	"kylix/core/kx"
	"testing"
)

// A racing message is keyed by the source's node and may come from any of its members; any
// other message is keyed by its source. A grouping is set once.
func TestRaceTable(t *testing.T) {
	m := &Mailbox{race: raceTable{counts: make([]raceCounters, 4)}}
	rt := &m.race
	if k := rt.key(0, kx.PhaseDown|raceBit, 2); k.src != 2 {
		t.Fatalf("before grouping a racing key names its rank: %+v", k)
	}
	if err := rt.setGroups([]int{0, 1, 1, 0}); err != nil {
		t.Fatal(err)
	}
	if err := rt.setGroups([]int{0, 1, 1, 0}); err != nil {
		t.Fatalf("the same grouping again: %v", err)
	}
	if err := rt.setGroups([]int{0, 0, 1, 1}); kx.CodeOf(err) != kx.CodeArg {
		t.Fatalf("another grouping: %v", err)
	}
	k := rt.key(0, kx.PhaseDown|raceBit, 2)
	if k.src != 1 {
		t.Fatalf("rank 2's racing key names node %d, want 1", k.src)
	}
	if g, _ := rt.sources(k, 2); len(g) != 2 || g[0] != 1 || g[1] != 2 {
		t.Fatalf("node 1's members: %v", g)
	}
	plain := rt.key(0, kx.PhaseDown, 2)
	if g, one := rt.sources(plain, 2); plain.src != 2 || g != nil || one != 2 {
		t.Fatalf("a plain message: key %+v, sources %v %d", plain, g, one)
	}
	rt.count(1, true, 100)
	rt.count(2, false, 100)
	rt.count(2, false, 50)
	rt.count(9, false, 1) // out of range: ignored
	st := m.RaceStats()
	if st[1].CopiesWon != 1 || st[2].CopiesLost != 2 || st[2].DupBytes != 150 {
		t.Fatalf("stats %+v", st)
	}
}
