package core

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestScatterReference checks Scatter against a byte loop on every length 0..257, for row
// sizes that take each path (8- and 4-byte words, odd sizes by copy), on aligned and
// misaligned sources, with sentinel bytes after dst that must survive.
func TestScatterReference(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, es := range []int{1, 3, 4, 8, 12, 16, 20} {
		for n := 0; n <= 257; n++ {
			rows := n + r.IntN(5) // dst may have rows nobody writes: they keep their bytes
			idx := make([]int32, n)
			for p, j := range r.Perm(rows)[:n] {
				idx[p] = int32(j)
			}
			for _, off := range []int{0, 1} {
				srcAll := make([]byte, n*es+off)
				for i := range srcAll {
					srcAll[i] = byte(r.Uint32())
				}
				src := srcAll[off:]
				init := make([]byte, rows*es)
				for i := range init {
					init[i] = byte(r.Uint32())
				}
				all, dst := guarded(init)
				Scatter(dst, src, idx, es)
				want := slices.Clone(init)
				for p, j := range idx {
					copy(want[int(j)*es:], src[p*es:(p+1)*es])
				}
				what := fmt.Sprintf("Scatter es=%d n=%d src offset %d", es, n, off)
				if !bytes.Equal(dst, want) {
					t.Fatalf("%s: wrong bytes", what)
				}
				checkGuard(t, what, all, len(dst))
			}
		}
	}
}

// TestPackTop checks the top-bucket order on data with repeated indices, for several layer-0
// degrees: every row holds a key of its own bucket, the rows of a bucket follow the first
// caller positions of their keys, every caller position fills its key's row (a repeat: the
// rows after the keys, in caller order) and reads its answer from its key's row. The result
// must not depend on the number of workers.
func TestPackTop(t *testing.T) {
	defer SetMinPerWorker(16)()
	r := rand.New(rand.NewPCG(43, 44))
	for _, n := range []int{0, 1, 50, 3000} {
		idx := make([]int64, n)
		for j := range idx {
			idx[j] = int64(r.IntN(n/2 + 1)) // about half the positions repeat an index
		}
		for _, d0 := range []int{1, 2, 3, 4, 5, 8, 16, 64, 100} {
			var key1, dst1 []int32
			for _, threads := range []int{1, 2, 4} {
				s := sortUniqueInto(idx, threads, nil)
				key, dst := packTop(idx, s.keys, s.pos, s.repeat, d0, threads, new([]int32))
				what := fmt.Sprintf("n=%d d0=%d threads=%d", n, d0, threads)
				if threads == 1 {
					key1, dst1 = key, dst
					checkPackTop(t, what, idx, s, key, dst, d0)
				} else if !slices.Equal(key, key1) || !slices.Equal(dst, dst1) {
					t.Fatalf("%s: differs from threads=1", what)
				}
			}
		}
	}
}

func checkPackTop(t *testing.T, what string, idx []int64, s sorted, key, dst []int32, d0 int) {
	t.Helper()
	b := subBits(d0)
	if d0<<b > topStreams && b > 0 {
		t.Fatalf("%s: %d buckets exceed topStreams %d", what, d0<<b, topStreams)
	}
	bounds := bucketBounds(s.keys, d0, b, 0, d0<<b)
	nu := len(s.keys)
	abs := make([]int32, nu) // the sorted key of each row
	seen := make([]bool, nu)
	for bk := 0; bk < d0<<b; bk++ {
		base := int32(bounds[(bk>>b)<<b])
		lastFirst := int32(-1)
		for row := bounds[bk]; row < bounds[bk+1]; row++ {
			u := key[row] + base
			if u < 0 || int(u) >= nu || seen[u] {
				t.Fatalf("%s: row %d holds key %d (base %d): not a permutation", what, row, u, base)
			}
			seen[u] = true
			abs[row] = u
			if got := topBucket(s.keys[u], d0, b); got != bk {
				t.Fatalf("%s: row %d of bucket %d holds a key of bucket %d", what, row, bk, got)
			}
			if f := s.first[u]; f <= lastFirst {
				t.Fatalf("%s: bucket %d is not in first-position order at row %d", what, bk, row)
			} else {
				lastFirst = f
			}
		}
	}
	rep := 0
	ans := answerRows(dst, s.pos, s.first, s.repeat)
	for j := range idx {
		isRep := s.repeat != nil && s.repeat[j]
		if isRep {
			if int(dst[j]) != nu+rep {
				t.Fatalf("%s: repeat %d (position %d) fills row %d, want %d", what, rep, j, dst[j], nu+rep)
			}
			rep++
		} else if abs[dst[j]] != s.pos[j] {
			t.Fatalf("%s: position %d fills row %d, which holds key %d, not its key %d", what, j, dst[j], abs[dst[j]], s.pos[j])
		}
		if abs[ans[j]] != s.pos[j] {
			t.Fatalf("%s: position %d reads row %d, which holds key %d, not its key %d", what, j, ans[j], abs[ans[j]], s.pos[j])
		}
	}
}

// TestConfigMsgPerms round-trips layer-0 config messages with perms (plain and compressed, in
// = out and not, with values) and checks that a message whose perms are missing, unexpected
// or not a permutation is refused naming the sender.
func TestConfigMsgPerms(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	keys := func(n int) []uint64 {
		s := sortUniqueInto(randIdx(r, n), 1, nil)
		return s.keys
	}
	perm := func(n int) []int32 {
		p := make([]int32, n)
		for i, v := range r.Perm(n) {
			p[i] = int32(v)
		}
		return p
	}
	for _, sizes := range [][2]int{{300, 200}, {0, 67}, {5, 0}} {
		for _, pack := range []bool{false, true} {
			for _, same := range []bool{false, true} {
				out, in := keys(sizes[0]), keys(sizes[1])
				if same {
					in = out
				}
				op, ip := perm(len(out)), perm(len(in))
				if same {
					ip = op
				}
				vals := make([]byte, 8*len(out))
				for i := range vals {
					vals[i] = byte(i)
				}
				msg := buildConfigMsg(out, in, same, true, op, ip, vals, pack)
				b := bytes.Join(msg.bufs, nil)
				what := fmt.Sprintf("%d/%d keys pack=%v same=%v", len(out), len(in), pack, same)
				m, _, err := parseConfigMsg(b, 8, 3, true)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if !slices.Equal(m.out, out) || !slices.Equal(m.in, in) || !slices.Equal(m.outPerm, op) || !slices.Equal(m.inPerm, ip) || !bytes.Equal(m.vals, vals) || m.outPerm == nil || m.inPerm == nil {
					t.Fatalf("%s: round trip differs", what)
				}
				if _, _, err := parseConfigMsg(b, 8, 3, false); err == nil || !strings.Contains(err.Error(), "rank 3") {
					t.Fatalf("%s: unexpected perms accepted (%v)", what, err)
				}
				plain := bytes.Join(buildConfigMsg(out, in, same, false, nil, nil, vals, pack).bufs, nil)
				if _, _, err := parseConfigMsg(plain, 8, 3, true); err == nil || !strings.Contains(err.Error(), "rank 3") {
					t.Fatalf("%s: missing perms accepted (%v)", what, err)
				}
			}
		}
	}
	sortedMap := []int32{4, 7, 9, 12}
	if m, err := packedMap(sortedMap, []int32{2, 0, 3, 1}, 5); err != nil || !slices.Equal(m, []int32{9, 4, 12, 7}) {
		t.Fatalf("packedMap: %v %v", m, err)
	}
	for _, bad := range [][]int32{{0, 0, 1, 2}, {0, 1, 2, 4}, {-1, 0, 1, 2}, {0, 1, 2}} {
		if _, err := packedMap(sortedMap, bad, 5); err == nil || !strings.Contains(err.Error(), "rank 5") {
			t.Fatalf("packedMap(%v) accepted a bad perm (%v)", bad, err)
		}
	}
}

func randIdx(r *rand.Rand, n int) []int64 {
	idx := make([]int64, n)
	for i := range idx {
		idx[i] = int64(r.IntN(1 << 30))
	}
	return idx
}
