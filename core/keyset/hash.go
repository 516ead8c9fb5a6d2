package keyset

import (
	"math/bits"
	"sort"
)

// Index hashing and partitioning for the nested butterfly.
//
// A user index i is turned into a key k = Mix(uint64(i)). The key is read as the fraction
// k/2^64 in [0,1) and expanded in the mixed radix given by the layer degrees: layer 0's digit is
// floor(k*d0/2^64), the remainder is rescaled to [0,2^64) and the next layer's digit is taken
// from it, and so on (Digit). Because every step is monotone, ascending keys have
// lexicographically ascending digit tuples, so at every layer a sorted key list that shares the
// digits of the layers above splits into d contiguous ranges (SplitPoints).

const (
	mixM1    = 0xbf58476d1ce4e5b9
	mixM2    = 0x94d049bb133111eb
	mixM1Inv = 0x96de1b173f119089 // mixM1 * mixM1Inv == 1 mod 2^64
	mixM2Inv = 0x319642b2d24d8ec3 // mixM2 * mixM2Inv == 1 mod 2^64
)

// Hash is a fixed bijective 64-bit mixer (the splitmix64 finaliser); Unmix is its inverse.
// Hash(0) == 0; consecutive small indices are spread over the whole key space.
func Hash(x uint64) uint64 {
	x = (x ^ x>>30) * mixM1
	x = (x ^ x>>27) * mixM2
	return x ^ x>>31
}

// Unhash inverts Mix: Unhash(Mix(x)) == x for every x.
func Unhash(x uint64) uint64 {
	x ^= x>>31 ^ x>>62
	x *= mixM2Inv
	x ^= x>>27 ^ x>>54
	x *= mixM1Inv
	x ^= x>>30 ^ x>>60
	return x
}

// Digit splits x/2^64 in radix d (d >= 1): digit is floor(x*d/2^64) in [0,d) and rest is the
// fractional part x*d/2^64 - digit scaled back to [0,2^64), i.e. the low word of x*d. For a
// fixed digit, rest is strictly increasing in x, so digit sequences preserve key order.
func Digit(x uint64, d int) (digit int, rest uint64) {
	hi, lo := bits.Mul64(x, uint64(d))
	return int(hi), lo
}

// KeyDigit is the layer-`layer` digit of hashed key k for degrees ds: Digit applied
// successively for layers 0..layer, each on the previous rest.
func KeyDigit(k uint64, ds []int, layer int) int {
	var g int
	for i := 0; i <= layer; i++ {
		g, k = Digit(k, ds[i])
	}
	return g
}

// SplitPoints returns d+1 = ds[layer]+1 boundaries b, b[0] = 0 and b[d] = len(keys), so that
// keys[b[g]:b[g+1]] are exactly the keys whose layer digit is g. keys must be sorted ascending
// and share their digits for layers 0..layer-1 (as the keys held by one node at node layer
// `layer` do); then the layer digit is non-decreasing along keys and each boundary is found by
// binary search (O(d·log n·layer)).
func SplitPoints(keys []uint64, ds []int, layer int) []int {
	d := ds[layer]
	b := make([]int, d+1)
	lo := 0
	for g := 1; g < d; g++ {
		rest := keys[lo:]
		lo += sort.Search(len(rest), func(i int) bool { return KeyDigit(rest[i], ds, layer) >= g })
		b[g] = lo
	}
	b[d] = len(keys)
	return b
}
