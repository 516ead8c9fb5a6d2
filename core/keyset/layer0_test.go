package keyset

import (
	"bytes"
	"cmp"
	"fmt"
	"kylix/core/kernels"
	"kylix/core/kernels/kerneltest"
	"kylix/core/kx"
	"kylix/internal/fuzzcheck"
	"math"
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
				all, dst := kerneltest.Guarded(init)
				kernels.Scatter(dst, src, idx, es)
				want := slices.Clone(init)
				for p, j := range idx {
					copy(want[int(j)*es:], src[p*es:(p+1)*es])
				}
				what := fmt.Sprintf("Scatter es=%d n=%d src offset %d", es, n, off)
				if !bytes.Equal(dst, want) {
					t.Fatalf("%s: wrong bytes", what)
				}
				kerneltest.CheckGuard(t, what, all, len(dst))
			}
		}
	}
}

// TestBucketStart checks that bucketStart inverts topBucket: the first key of every bucket
// is in it and the key before it in the bucket before, for degrees with and without sub-ranges.
func TestBucketStart(t *testing.T) {
	for _, d0 := range []int{1, 2, 3, 4, 5, 7, 8, 16, 64, 100, 1000, 1 << 20} {
		b := subBits(d0)
		if d0<<b > max(layer0Streams, d0) {
			t.Fatalf("d0=%d: %d buckets exceed topStreams %d", d0, d0<<b, layer0Streams)
		}
		if s, end := bucketStart(0, d0, b); s != 0 || end {
			t.Fatalf("d0=%d: bucket 0 starts at %d (end %v)", d0, s, end)
		}
		if _, end := bucketStart(d0<<b, d0, b); !end {
			t.Fatalf("d0=%d: no end after the last bucket", d0)
		}
		for q := 1; q < d0<<b; q++ {
			s, end := bucketStart(q, d0, b)
			if end || layer0Bucket(s, d0, b) != q || layer0Bucket(s-1, d0, b) != q-1 {
				t.Fatalf("d0=%d: bucket %d starts at %#x, which is in bucket %d (the key before: %d)", d0, q, s, layer0Bucket(s, d0, b), layer0Bucket(s-1, d0, b))
			}
		}
	}
}

// TestPackTop checks the layer-0 bucket order on data with repeated indices, for several layer-0
// degrees: every caller position is a row holding its key, the rows of a bucket are the
// bucket's and follow caller order, and the bounds are where the buckets start. The result
// must not depend on the number of workers.
func TestPackTop(t *testing.T) {
	defer SetForTest(&MinPerWorker, 16)()
	r := rand.New(rand.NewPCG(43, 44))
	for _, n := range []int{0, 1, 50, 3000} {
		idx := make([]int64, n)
		for j := range idx {
			idx[j] = int64(r.IntN(n/2 + 1)) // about half the positions repeat an index
		}
		for _, d0 := range []int{1, 2, 3, 4, 5, 8, 16, 64, 100} {
			var first Layer0Rows
			for _, threads := range []int{1, 2, 4} {
				tr := PackLayer0(idx, d0, threads, new([]uint64))
				what := fmt.Sprintf("n=%d d0=%d threads=%d", n, d0, threads)
				if threads == 1 {
					first = tr
					checkPackTop(t, what, idx, tr, d0)
				} else if !slices.Equal(tr.Keys, first.Keys) || !slices.Equal(tr.Dst, first.Dst) || !slices.Equal(tr.bounds, first.bounds) {
					t.Fatalf("%s: differs from threads=1", what)
				}
			}
		}
	}
}

func checkPackTop(t *testing.T, what string, idx []int64, tr Layer0Rows, d0 int) {
	t.Helper()
	b := subBits(d0)
	n := len(idx)
	if len(tr.Keys) != n || len(tr.Dst) != n || len(tr.bounds) != d0<<b+1 || tr.bounds[0] != 0 || tr.bounds[d0<<b] != n {
		t.Fatalf("%s: %d keys, %d rows, bounds %v for %d positions", what, len(tr.Keys), len(tr.Dst), tr.bounds, n)
	}
	pos := make([]int, n) // the caller position of each row
	for r := range pos {
		pos[r] = -1
	}
	for j, r := range tr.Dst {
		if r < 0 || int(r) >= n || pos[r] >= 0 {
			t.Fatalf("%s: position %d fills row %d: not a permutation", what, j, r)
		}
		pos[r] = j
		if tr.Keys[r] != Hash(uint64(idx[j])) {
			t.Fatalf("%s: row %d holds %#x, not position %d's key", what, r, tr.Keys[r], j)
		}
	}
	for q := 0; q < d0<<b; q++ {
		for r := tr.bounds[q]; r < tr.bounds[q+1]; r++ {
			if got := layer0Bucket(tr.Keys[r], d0, b); got != q {
				t.Fatalf("%s: row %d of bucket %d holds a key of bucket %d", what, r, q, got)
			}
			if r > tr.bounds[q] && pos[r] < pos[r-1] {
				t.Fatalf("%s: bucket %d is not in caller order at row %d", what, q, r)
			}
		}
	}
	split := tr.Split(d0)
	for g := 0; g <= d0; g++ {
		if split[g] != tr.bounds[g<<b] {
			t.Fatalf("%s: member %d's rows start at %d, bucket %d at %d", what, g, split[g], g<<b, tr.bounds[g<<b])
		}
	}
}

// topLists is what the senders of member me of a layer of degree d0 send it: each sender's
// rows of the member's range (PackLayer0 of random indices, about a third of them repeated, some
// shared between senders), with their sub-range bounds.
func topLists(t testing.TB, r *rand.Rand, senders, n, d0, me int) ([][]uint64, [][]int) {
	lists := make([][]uint64, senders)
	bounds := make([][]int, senders)
	for g := range lists {
		idx := make([]int64, r.IntN(n+1))
		for j := range idx {
			idx[j] = int64(r.IntN(2*n/3 + 1))
		}
		tr := PackLayer0(idx, d0, 1, new([]uint64))
		sp := tr.Split(d0)
		lists[g] = tr.Keys[sp[me]:sp[me+1]]
		var err error
		if bounds[g], err = RowBounds(lists[g], d0, me, g); err != nil {
			t.Fatal(err)
		}
	}
	return lists, bounds
}

// TestSortTop checks a member's merge of its senders' rows against a brute-force union: the
// merged keys (sorted, or in order of first appearance by sender and row inside each
// sub-range), every row's map into them, the sub-range bounds, and that the result does not
// depend on the number of workers.
func TestSortTop(t *testing.T) {
	defer SetForTest(&MinPerWorker, 16)()
	r := rand.New(rand.NewPCG(47, 48))
	for _, d0 := range []int{2, 3, 4, 5, 8, 16, 100} {
		for _, n := range []int{0, 7, 4000} {
			me := r.IntN(d0)
			lists, bounds := topLists(t, r, 1+r.IntN(5), n, d0, me)
			b := subBits(d0)
			var sorted, appeared []uint64 // the brute-force answers
			for s := 0; s < 1<<b; s++ {
				seen := map[uint64]bool{}
				var sub []uint64
				for g, l := range lists {
					for _, k := range l[bounds[g][s]:bounds[g][s+1]] {
						if !seen[k] {
							seen[k] = true
							sub = append(sub, k)
						}
					}
				}
				appeared = append(appeared, sub...)
				sorted = append(sorted, sortedSet(sub)...)
			}
			for _, mode := range []struct {
				appearance bool
				hashRows   int // sub-ranges of at most this many rows are hashed
			}{{false, 1 << 30}, {true, 1 << 30}, {true, 0}, {true, n / 2}} {
				appearance := mode.appearance
				defer SetForTest(&HashMaxRows, mode.hashRows)()
				want := sorted
				if appearance {
					want = appeared
				}
				what := fmt.Sprintf("d0=%d n=%d member %d appearance=%v hashed up to %d rows", d0, n, me, appearance, mode.hashRows)
				var first [][]int32
				for _, threads := range []int{1, 2, 4} {
					merged, maps, mb, err := SortLayer0(lists, bounds, d0, me, threads, appearance, new(Layer0Scratch))
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					if !slices.Equal(merged, want) {
						t.Fatalf("%s threads=%d: merged keys differ from the brute-force union", what, threads)
					}
					for g, l := range lists {
						for i, k := range l {
							if m := maps[g][i]; m < 0 || int(m) >= len(merged) || merged[m] != k {
								t.Fatalf("%s threads=%d: sender %d row %d maps to %d", what, threads, g, i, m)
							}
						}
					}
					for s := 0; s < 1<<b; s++ {
						for _, k := range merged[mb[s]:mb[s+1]] {
							if layer0Bucket(k, d0, b) != me<<b+s {
								t.Fatalf("%s: merged key %#x is outside sub-range %d", what, k, s)
							}
						}
					}
					if threads == 1 {
						first = maps
					} else if !slices.EqualFunc(maps, first, slices.Equal) {
						t.Fatalf("%s threads=%d: maps differ from threads=1", what, threads)
					}
				}
			}
		}
	}
}

// TestRowBounds checks that rows out of layer-0 bucket order, or of another member's range, are
// refused naming the sender.
func TestRowBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(49, 50))
	lists, bounds := topLists(t, r, 1, 3000, 4, 1)
	rows := lists[0]
	if len(rows) < 10 || bounds[0][1] == 0 || bounds[0][1] == len(rows) {
		t.Fatalf("test data too small: %d rows, bounds %v", len(rows), bounds[0])
	}
	swapped := slices.Clone(rows)
	swapped[0], swapped[len(rows)-1] = swapped[len(rows)-1], swapped[0]
	foreign := slices.Clone(rows)
	foreign[5] = 0 // member 0's
	for what, bad := range map[string][]uint64{"swapped": swapped, "foreign": foreign} {
		if _, err := RowBounds(bad, 4, 1, 6); err == nil || !strings.Contains(err.Error(), "rank 6") {
			t.Fatalf("%s rows accepted (%v)", what, err)
		}
	}
}

// TestEstimateUnique checks degrees=auto's count of distinct indices: exact on small lists,
// within 2% on 5000 and 0.5% from 100K on, and the same for every number of workers.
func TestEstimateUnique(t *testing.T) {
	defer SetForTest(&MinPerWorker, 1<<10)()
	r := rand.New(rand.NewPCG(51, 52))
	for _, n := range []int{0, 1, 100, 4096, 5000, 100_000, 1_000_000} {
		idx := make([]int64, n)
		for j := range idx {
			idx[j] = int64(r.IntN(n + 1)) // about 37% of positions repeat
		}
		u := slices.Clone(idx)
		slices.Sort(u)
		want := len(slices.Compact(u))
		got := EstimateUnique(idx, 1)
		tol := 0.005 // about 3 standard errors from 100K indices on, 2 at 5000
		if n < 100_000 {
			tol = 0.02
		}
		if n <= 4096 && got != want || math.Abs(float64(got-want)) > tol*float64(want) {
			t.Fatalf("n=%d: estimated %d distinct, have %d", n, got, want)
		}
		for _, th := range []int{2, 4} {
			if g := EstimateUnique(idx, th); g != got {
				t.Fatalf("n=%d threads=%d: %d, threads=1: %d", n, th, g, got)
			}
		}
	}
}

// TestConfigMsgRows round-trips layer-0 config messages (plain and compressed, in = out and
// not, with values): plain rows come back in the sender's order, compressed ones (sent in set
// order) in set order, repeats included. A message whose rows flag is not the one expected, or
// whose row count does not match its set and repeats, is refused naming the sender.
func TestConfigMsgRows(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	const d0, me = 4, 2
	for _, n := range []int{300, 0, 5, 20000} { // 20000: several chunks
		for _, pack := range []bool{false, true} {
			for _, same := range []bool{false, true} {
				lists, _ := topLists(t, r, 2, n, d0, me)
				out, in := lists[0], lists[1]
				if pack {
					out, in = setOrdered(out, d0), setOrdered(in, d0)
				}
				if same {
					in = out
				}
				vals := make([]byte, 8*len(out))
				for i := range vals {
					vals[i] = byte(i)
				}
				b := bytes.Join(BuildConfigMsg(out, in, same, true, vals, pack).Bufs, nil)
				what := fmt.Sprintf("%d/%d rows pack=%v same=%v", len(out), len(in), pack, same)
				m, _, err := ParseConfigMsg(b, 8, 3, d0)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if !slices.Equal(m.Out, out) || !slices.Equal(m.In, in) || !bytes.Equal(m.Vals, vals) {
					t.Fatalf("%s: round trip differs", what)
				}
				if _, _, err := ParseConfigMsg(b, 8, 3, 0); err == nil || !strings.Contains(err.Error(), "rank 3") {
					t.Fatalf("%s: unexpected rows accepted (%v)", what, err)
				}
				if pack && len(out) > 0 { // one row more or fewer than the set and repeats describe
					for _, delta := range []uint64{1, ^uint64(0)} {
						bad := slices.Clone(b)
						putU64(bad[32:], getU64(bad[32:])+delta)
						if _, _, err := ParseConfigMsg(bad, 0, 3, d0); err == nil || !strings.Contains(err.Error(), "rank 3") {
							t.Fatalf("%s: a wrong row count (%+d) accepted (%v)", what, int64(delta), err)
						}
					}
				}
				sorted := func(l []uint64) []uint64 { return sortedSet(l) }
				plain := bytes.Join(BuildConfigMsg(sorted(out), sorted(in), same, false, nil, pack).Bufs, nil)
				if _, _, err := ParseConfigMsg(plain, 0, 3, d0); err == nil || !strings.Contains(err.Error(), "rank 3") {
					t.Fatalf("%s: sorted keys accepted as rows (%v)", what, err)
				}
			}
		}
	}
}

// setOrdered is rows (layer-0 rows in bucket order) in set order, by a plain stable sort on
// (bucket, original index): the reference SetOrder must match.
func setOrdered(rows []uint64, d0 int) []uint64 {
	b := subBits(d0)
	s := slices.Clone(rows)
	slices.SortStableFunc(s, func(x, y uint64) int {
		if c := cmp.Compare(layer0Bucket(x, d0, b), layer0Bucket(y, d0, b)); c != 0 {
			return c
		}
		return cmp.Compare(Unhash(x), Unhash(y))
	})
	return s
}

// TestSetOrder checks SetOrder against setOrdered on caller data with repeats (random order,
// ascending order, indices too wide to share a word with a row): the members marked have their
// rows in set order, a repeated index's rows in caller order, the others' rows are untouched,
// Dst still sends every caller position to a row holding its key, the result does not depend
// on the number of workers, and a compressed message of the ordered rows decodes to them.
func TestSetOrder(t *testing.T) {
	defer SetForTest(&MinPerWorker, 16)()
	r := rand.New(rand.NewPCG(61, 62))
	for _, kind := range []string{"random", "ascending", "wide"} {
		for _, n := range []int{0, 1, 40, 5000} {
			idx := make([]int64, n)
			for j := range idx {
				idx[j] = int64(r.IntN(n/2 + 1))
				if kind == "wide" {
					idx[j] = idx[j]<<45 | 12345
				}
			}
			if kind == "ascending" {
				slices.Sort(idx)
			}
			for _, d0 := range []int{1, 2, 3, 4, 8, 64} {
				pack := make([]bool, d0)
				for g := range pack {
					pack[g] = r.IntN(3) > 0
				}
				var first Layer0Rows
				for _, threads := range []int{1, 2, 4} {
					what := fmt.Sprintf("%s n=%d d0=%d threads=%d", kind, n, d0, threads)
					before := PackLayer0(idx, d0, threads, new([]uint64))
					tr := PackLayer0(idx, d0, threads, new([]uint64))
					SetOrder(&tr, d0, pack, threads)
					if threads > 1 {
						if !slices.Equal(tr.Keys, first.Keys) || !slices.Equal(tr.Dst, first.Dst) {
							t.Fatalf("%s: differs from threads=1", what)
						}
						continue
					}
					first = tr
					checkSetOrder(t, what, idx, before, tr, d0, pack)
				}
			}
		}
	}
}

func checkSetOrder(t *testing.T, what string, idx []int64, before, tr Layer0Rows, d0 int, pack []bool) {
	t.Helper()
	if !slices.Equal(tr.bounds, before.bounds) {
		t.Fatalf("%s: bounds moved", what)
	}
	pos := make([]int, len(idx)) // the caller position of each row
	for j, r := range tr.Dst {
		pos[r] = j
		if tr.Keys[r] != Hash(uint64(idx[j])) {
			t.Fatalf("%s: position %d reads row %d, which holds another key", what, j, r)
		}
	}
	sp := tr.Split(d0)
	for g := 0; g < d0; g++ {
		rows, was := tr.Keys[sp[g]:sp[g+1]], before.Keys[sp[g]:sp[g+1]]
		if !pack[g] {
			if !slices.Equal(rows, was) || !bucketsInCallerOrder(pos, tr, d0, g) {
				t.Fatalf("%s: member %d is not packed but its rows moved", what, g)
			}
			continue
		}
		if !slices.Equal(rows, setOrdered(was, d0)) {
			t.Fatalf("%s: member %d's rows are not in set order", what, g)
		}
		for r := sp[g] + 1; r < sp[g+1]; r++ {
			if tr.Keys[r] == tr.Keys[r-1] && pos[r] < pos[r-1] {
				t.Fatalf("%s: rows %d and %d repeat a key out of caller order", what, r-1, r)
			}
		}
		b := bytes.Join(BuildConfigMsg(rows, rows, true, true, nil, true).Bufs, nil)
		m, _, err := ParseConfigMsg(b, 0, 1, d0)
		if err != nil || !slices.Equal(m.Out, rows) {
			t.Fatalf("%s: member %d's compressed rows do not round-trip (%v)", what, g, err)
		}
	}
}

// bucketsInCallerOrder says whether member g's rows follow caller order bucket by bucket.
func bucketsInCallerOrder(pos []int, tr Layer0Rows, d0, g int) bool {
	b := subBits(d0)
	for q := g << b; q < (g+1)<<b; q++ {
		for r := tr.bounds[q] + 1; r < tr.bounds[q+1]; r++ {
			if pos[r] < pos[r-1] {
				return false
			}
		}
	}
	return true
}

// sortedSet is l's distinct keys, ascending.
func sortedSet(l []uint64) []uint64 {
	s := slices.Clone(l)
	slices.Sort(s)
	return slices.Compact(s)
}

// BenchmarkSortTop is one layer-0 member's merge of 4 senders' 500K rows (of the 2M each
// sends at 4 ranks, density 0.2): config's largest cost.
var benchRows = 2_000_000

func BenchmarkSortTop(b *testing.B) {
	r := rand.New(rand.NewPCG(53, 54))
	const d0, me = 4, 1
	lists := make([][]uint64, d0)
	bounds := make([][]int, d0)
	for g := range lists {
		idx := make([]int64, benchRows)
		for j := range idx {
			idx[j] = int64(r.IntN(10_000_000))
		}
		tr := PackLayer0(idx, d0, 1, new([]uint64))
		sp := tr.Split(d0)
		lists[g] = tr.Keys[sp[me]:sp[me+1]]
		bounds[g], _ = RowBounds(lists[g], d0, me, g)
	}
	buf := new(Layer0Scratch)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, _, err := SortLayer0(lists, bounds, d0, me, 1, false, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzLayer0Msg: whatever the bytes, a layer-0 config message (rows, plain or compressed with
// repeat bitmaps) parses to an error naming the sender or to rows and values of matching sizes, and the
// member's check of the rows' order (rowBounds) then accepts them or refuses them naming the
// sender; the parse allocates in proportion to the bytes; nothing panics (make test runs it for
// 10 s).
func FuzzLayer0Msg(f *testing.F) {
	r := rand.New(rand.NewPCG(55, 56))
	const d0, me, es = 4, 1, 4
	for _, n := range []int{0, 3, 200} {
		lists, _ := topLists(f, r, 2, n, d0, me)
		out, in := lists[0], lists[1]
		f.Add(bytes.Join(BuildConfigMsg(out, in, false, true, make([]byte, es*len(out)), false).Bufs, nil))
		f.Add(bytes.Join(BuildConfigMsg(out, out, true, true, nil, false).Bufs, nil))
		so, si := setOrdered(out, d0), setOrdered(in, d0) // repeats: with bitmaps
		f.Add(bytes.Join(BuildConfigMsg(so, si, false, true, make([]byte, es*len(out)), true).Bufs, nil))
		u := sortedSet(so) // no repeats: no bitmap
		f.Add(bytes.Join(BuildConfigMsg(setOrdered(u, d0), nil, true, true, nil, true).Bufs, nil))
	}
	k := memberKey(d0, me)
	f.Add(rowsMsg(f, k, 1<<14, true)) // more repeats than the bitmap's bytes pay for
	f.Add(rowsMsg(f, k, 1<<10, false))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, e := range []int{0, es} {
			var m ConfigLists
			var err error
			fuzzcheck.Bounded(t, "ParseConfigMsg", len(b), decodedPerByte, func() { m, _, err = ParseConfigMsg(b, e, 7, d0) })
			if err != nil {
				if kx.CodeOf(err) != kx.CodeInternal || !strings.Contains(err.Error(), "rank 7") {
					t.Fatalf("es=%d: %v", e, err)
				}
				continue
			}
			if len(m.Vals) != e*len(m.Out) {
				t.Fatalf("es=%d: %d bytes of values for %d rows", e, len(m.Vals), len(m.Out))
			}
			// Every decoded row is paid for by the bytes: a key by at least 1/codecMaxExpansion
			// of a byte, a repeat by 1/repeatsPerByte.
			rows := len(m.Out)
			if len(m.In) > 0 && (len(m.Out) == 0 || &m.In[0] != &m.Out[0]) { // in = out is sent once
				rows += len(m.In)
			}
			if rows > (codecMaxExpansion+repeatsPerByte)*len(b) {
				t.Fatalf("es=%d: %d rows from %d bytes", e, rows, len(b))
			}
			for _, l := range [][]uint64{m.Out, m.In} {
				if _, err := RowBounds(l, d0, me, 7); err != nil && (kx.CodeOf(err) != kx.CodeInternal || !strings.Contains(err.Error(), "rank 7")) {
					t.Fatalf("rowBounds: %v", err)
				}
			}
		}
	})
}

// BenchmarkFillLayer0 is a reduce's fill of the layer-0 vector from caller order (Scatter, f32)
// of 2M random indices at layer-0 degree 4: rows in caller order inside each bucket (streams)
// against rows in set order (SetOrder, every member sent compressed: a scatter inside each
// bucket).
func BenchmarkFillLayer0(b *testing.B) {
	r := rand.New(rand.NewPCG(63, 64))
	idx := make([]int64, benchRows)
	for j := range idx {
		idx[j] = int64(r.IntN(10_000_000))
	}
	vals := make([]byte, 4*len(idx))
	v := make([]byte, len(vals))
	for _, order := range []string{"Caller", "Set"} {
		tr := PackLayer0(idx, 4, 1, new([]uint64))
		if order == "Set" {
			SetOrder(&tr, 4, []bool{true, true, true, true}, 1)
		}
		b.Run(order, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				kernels.Scatter(v, vals, tr.Dst, 4)
			}
		})
	}
}

// BenchmarkSetOrder is the sender's reordering of 2M random indices' rows at layer-0 degree 4
// (every member sent compressed).
func BenchmarkSetOrder(b *testing.B) {
	r := rand.New(rand.NewPCG(65, 66))
	idx := make([]int64, benchRows)
	for j := range idx {
		idx[j] = int64(r.IntN(10_000_000))
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		tr := PackLayer0(idx, 4, 1, new([]uint64))
		b.StartTimer()
		SetOrder(&tr, 4, []bool{true, true, true, true}, 1)
	}
}
