package planning

import (
	"fmt"
	"kylix/core/keyset"
	"kylix/core/kx"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseDegreesSpec(t *testing.T) {
	cases := []struct {
		spec string
		m    int
		want []int
		bad  bool
	}{
		{"auto", 8, nil, false},
		{"direct", 7, []int{7}, false},
		{"binary", 8, []int{2, 2, 2}, false},
		{"binary", 12, []int{2, 2, 3}, false},
		{"binary", 7, []int{7}, false},
		{"binary", 1, []int{1}, false},
		{"8x4x2", 64, []int{8, 4, 2}, false},
		{"3x2", 6, []int{3, 2}, false},
		{"3x3", 6, nil, true},
		{"0x6", 6, nil, true},
		{"fast", 6, nil, true},
	}
	for _, c := range cases {
		got, err := kx.ParseDegreesSpec(c.spec, c.m)
		if (err != nil) != c.bad {
			t.Errorf("%q on %d: err %v, want bad=%v", c.spec, c.m, err, c.bad)
			continue
		}
		if !c.bad && !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q on %d: %v, want %v", c.spec, c.m, got, c.want)
		}
		if c.bad && kx.CodeOf(err) != kx.CodeArg {
			t.Errorf("%q: code %v, want CodeArg", c.spec, kx.CodeOf(err))
		}
	}
}

// Every layer's group must be exactly the nodes that differ from a node in that layer's digit.
func TestTopologyGroups(t *testing.T) {
	for _, ds := range [][]int{{6}, {3, 2}, {2, 3}, {2, 2, 2}, {4, 2}, {5, 1, 3}} {
		m := 1
		for _, d := range ds {
			m *= d
		}
		topo, err := NewTopology(ds, m)
		if err != nil {
			t.Fatal(err)
		}
		for node := 0; node < m; node++ {
			for i := 0; i < topo.Layers(); i++ {
				seen := map[int]bool{}
				for g := 0; g < topo.Degrees[i]; g++ {
					mem := topo.Member(node, i, g)
					if mem < 0 || mem >= m || topo.Digit(mem, i) != g {
						t.Fatalf("%v node %d layer %d member %d = %d", ds, node, i, g, mem)
					}
					for j := 0; j < topo.Layers(); j++ {
						if j != i && topo.Digit(mem, j) != topo.Digit(node, j) {
							t.Fatalf("%v: member %d of node %d differs in layer %d", ds, mem, node, j)
						}
					}
					seen[mem] = true
				}
				if len(seen) != topo.Degrees[i] || !seen[node] {
					t.Fatalf("%v node %d layer %d: group %v", ds, node, i, seen)
				}
			}
		}
	}
}

func TestDegreesMessageNamesTheProduct(t *testing.T) {
	_, err := NewTopology([]int{3, 3}, 3)
	if err == nil || !strings.Contains(err.Error(), "3x3 multiply to 9, not to the 3 nodes") {
		t.Errorf("3x3 on 3 nodes: %v", err)
	}
}

func TestSortUnique(t *testing.T) {
	idx := []int64{5, 3, 5, 0, 1 << 40, 3, 7, 0}
	keys, pos := keyset.SortUnique(idx, 1)
	if len(keys) != 5 {
		t.Fatalf("%d unique keys, want 5", len(keys))
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Fatalf("keys not strictly ascending: %v", keys)
		}
	}
	for i, v := range idx {
		if keys[pos[i]] != keyset.Hash(uint64(v)) {
			t.Fatalf("pos[%d] points at the wrong key", i)
		}
	}
	if k, p := keyset.SortUnique(nil, 1); len(k) != 0 || len(p) != 0 {
		t.Fatal("empty input")
	}
}

func TestTreeMerge(t *testing.T) {
	lists := [][]uint64{{1, 5, 9}, {}, {2, 5, 10, 11}, {0, 9}, {5}}
	u, maps := keyset.TreeMerge(lists)
	want := []uint64{0, 1, 2, 5, 9, 10, 11}
	if !reflect.DeepEqual(u, want) {
		t.Fatalf("union %v, want %v", u, want)
	}
	for l, list := range lists {
		for p, x := range list {
			if u[maps[l][p]] != x {
				t.Fatalf("list %d pos %d maps to %d", l, p, maps[l][p])
			}
		}
	}
	if got := keyset.Lookup([]uint64{0, 3, 10, 12}, u); !reflect.DeepEqual(got, []int32{0, -1, 5, -1}) {
		t.Fatalf("lookup %v", got)
	}
}

// BenchmarkSortUnique4M sorts one rank's 4M keys with 1 and 2 workers, against hashing and
// slices.Sort (the baseline a radix sort must beat).
func BenchmarkSortUnique4M(b *testing.B) {
	idx := make([]int64, 4<<20)
	for i := range idx {
		idx[i] = int64(keyset.Hash(uint64(i)) % 20000000)
	}
	for _, th := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", th), func(b *testing.B) {
			b.SetBytes(8 << 22)
			for i := 0; i < b.N; i++ {
				keyset.SortUnique(idx, th)
			}
		})
	}
	b.Run("slices.Sort", func(b *testing.B) {
		keys := make([]uint64, len(idx))
		b.SetBytes(8 << 22)
		for i := 0; i < b.N; i++ {
			for j, v := range idx {
				keys[j] = keyset.Hash(uint64(v))
			}
			slices.Sort(keys)
		}
	})
}

func BenchmarkTreeMerge8x256K(b *testing.B) {
	lists := make([][]uint64, 8)
	for l := range lists {
		idx := make([]int64, 1<<18)
		for i := range idx {
			idx[i] = int64(keyset.Hash(uint64(i*8+l)) % 4000000)
		}
		lists[l], _ = keyset.SortUnique(idx, 1)
	}
	b.SetBytes(8 << 21)
	for i := 0; i < b.N; i++ {
		keyset.TreeMerge(lists)
	}
}
