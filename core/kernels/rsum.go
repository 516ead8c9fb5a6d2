package kernels

import (
	"kylix/core/kx"
	"kylix/core/rsum"
	"unsafe"
)

// KYLIX_RSUM's kernels. Inside the butterfly an RSum value is a core/rsum accumulator
// (ElemBytes: 24 bytes for F64, 16 for F32), so Identity, Combine, ScatterCombine and Gather
// with o == kx.RSum act on accumulator rows: identity zero bytes, combine rsum.Add, gather a
// row copy. The caller's floats enter through FromGather/FromScatter/FromScatterCombine and
// leave through Round; nothing else converts, and no float is ever added to another float.

// ElemBytes is the size of one value of dtype d inside a reduce with op o: the dtype's size,
// or an accumulator's for RSum.
func ElemBytes(d kx.Dtype, o kx.Op) int {
	if o == kx.RSum && d.IsFloat() {
		return rsum.AccBytes(d == kx.F64)
	}
	return d.Size()
}

// rsumRows checks an RSum kernel's buffers: dst holds whole rows of w accumulators, src n of
// them (n < 0: any whole number). It returns the row size in bytes.
func rsumRows(name string, d kx.Dtype, dst, src []byte, n, w int) int {
	if !d.IsFloat() || w < 1 {
		kernPanic("%s: rsum on %s, width %d", name, d, w)
	}
	rb := w * rsum.AccBytes(d == kx.F64)
	if len(dst)%rb != 0 || n >= 0 && len(src) != n*rb || n < 0 && len(src)%rb != 0 {
		kernPanic("%s: rsum %s dst %d bytes, src %d bytes, %d rows of width %d", name, d, len(dst), len(src), n, w)
	}
	return rb
}

// rsumScatterCombine is ScatterCombine for RSum: dst row idx[p] += src row p.
func rsumScatterCombine(d kx.Dtype, dst, src []byte, idx []int32, w int) {
	rb := rsumRows("ScatterCombine", d, dst, src, len(idx), w)
	f64 := d == kx.F64
	if w == 1 {
		rsum.AddScatter(f64, dst, src, idx)
		return
	}
	for p, j := range idx {
		rsum.Add(f64, dst[int(j)*rb:int(j)*rb+rb], src[p*rb:p*rb+rb])
	}
}

// rsumGather is Gather for RSum: dst row p = src row idx[p], zero bytes (the empty sum) where
// idx[p] < 0.
func rsumGather(d kx.Dtype, dst, src []byte, idx []int32, w int) {
	rb := rsumRows("Gather", d, src, dst, len(idx), w)
	for p, j := range idx {
		if j < 0 {
			clear(dst[p*rb : p*rb+rb])
		} else {
			copy(dst[p*rb:p*rb+rb], src[int(j)*rb:int(j)*rb+rb])
		}
	}
}

// fromChunk is how many values the conversions below turn into accumulators at a time, through
// a stack buffer that stays in L1 (one call into rsum per chunk, not per value).
const fromChunk = 256

// floatsOf views the caller's float bytes as []float64 or []float32 (an aligned copy if they
// are not aligned: the conversions only read them).
func floatsOf(d kx.Dtype, b []byte) (f64 []float64, f32 []float32) {
	if d == kx.F64 {
		f64, _ = kernView[float64](b)
	} else {
		f32, _ = kernView[float32](b)
	}
	return
}

// fromFloats writes the accumulators of values [lo, hi) of the caller's floats into acc.
func fromFloats(acc []byte, f64 []float64, f32 []float32, lo, hi int) {
	if f64 != nil {
		rsum.FromF64(acc, f64[lo:hi])
	} else {
		rsum.FromF32(acc, f32[lo:hi])
	}
}

// From converts the caller's floats src into their accumulators, value by value, into dst.
func From(d kx.Dtype, dst, src []byte) {
	f64, f32 := floatsOf(d, src)
	if f64 != nil {
		rsum.FromF64(dst, f64)
	} else if f32 != nil {
		rsum.FromF32(dst, f32)
	}
}

// FromGather converts the caller's floats src into accumulators, gathered: dst row p is the
// accumulator of src row idx[p] (rows of w values), zero bytes where idx[p] < 0.
func FromGather(d kx.Dtype, dst, src []byte, idx []int32, w int) {
	ab := rsum.AccBytes(d == kx.F64)
	rb := rsumRows("FromGather", d, dst[:0], dst, len(idx), w)
	f64, f32 := floatsOf(d, src)
	if w > 1 {
		for p, j := range idx {
			if j < 0 {
				clear(dst[p*rb : p*rb+rb])
			} else {
				fromFloats(dst[p*rb:p*rb+rb], f64, f32, int(j)*w, int(j)*w+w)
			}
		}
		return
	}
	// Width 1: gather a chunk of floats, then convert it into its contiguous rows at once.
	var g64 [fromChunk]float64
	var g32 [fromChunk]float32
	for lo := 0; lo < len(idx); lo += fromChunk {
		part := idx[lo:min(lo+fromChunk, len(idx))]
		out := dst[lo*ab : (lo+len(part))*ab]
		if f64 != nil || d == kx.F64 {
			for k, j := range part {
				g64[k] = 0
				if j >= 0 {
					g64[k] = f64[j]
				}
			}
			rsum.FromF64(out, g64[:len(part)])
		} else {
			for k, j := range part {
				g32[k] = 0
				if j >= 0 {
					g32[k] = f32[j]
				}
			}
			rsum.FromF32(out, g32[:len(part)])
		}
		for k, j := range part {
			if j < 0 { // +0's accumulator records "saw +0"; the empty sum has no flags
				clear(out[k*ab : k*ab+ab])
			}
		}
	}
}

// FromScatter converts the caller's floats src into accumulators, scattered: dst row idx[p] is
// the accumulator of src row p (every idx distinct: the packed layer-0 partition).
func FromScatter(d kx.Dtype, dst, src []byte, idx []int32, w int) {
	ab := rsum.AccBytes(d == kx.F64)
	rb := rsumRows("FromScatter", d, dst, nil, -1, w)
	f64, f32 := floatsOf(d, src)
	var buf [fromChunk * rsum.Acc64Bytes]byte
	rows := max(fromChunk/w, 1)
	for lo := 0; lo < len(idx); lo += rows {
		part := idx[lo:min(lo+rows, len(idx))]
		for c0 := 0; c0 < len(part)*w; c0 += fromChunk { // a row wider than the buffer: in parts
			c1 := min(c0+fromChunk, len(part)*w)
			tmp := buf[:(c1-c0)*ab]
			fromFloats(tmp, f64, f32, lo*w+c0, lo*w+c1)
			if c0 == 0 && c1 == len(part)*w {
				Scatter(dst, tmp, part, rb)
				break
			}
			for v := c0; v < c1; v++ { // value v of the part: row v/w, column v%w
				o := int(part[v/w])*rb + v%w*ab
				copy(dst[o:o+ab], tmp[(v-c0)*ab:(v-c0+1)*ab])
			}
		}
	}
}

// FromScatterCombine folds the caller's floats into accumulators: dst row idx[p] += src row p,
// each value converted exactly on the way (repeated indices of one rank: never a float sum).
func FromScatterCombine(d kx.Dtype, dst, src []byte, idx []int32, w int) {
	rb := rsumRows("FromScatterCombine", d, dst, nil, -1, w)
	FromScatterCombineFresh(d, dst, src, idx, w, len(dst)/rb) // every row holds a sum
}

// FromScatterCombineFresh is FromScatterCombine on a dst whose rows from fresh on hold no sum
// yet (any bytes): a row's first value starts it, rows skipped over below a started one become
// the empty sum, and the new bound (one past the highest row started, or fresh) is returned.
// A combine whose rows come in order of first appearance needs no Identity pass first; rows
// left at or above the bound at the end are the caller's to set (Identity).
func FromScatterCombineFresh(d kx.Dtype, dst, src []byte, idx []int32, w, fresh int) int {
	ab := rsum.AccBytes(d == kx.F64)
	rb := rsumRows("FromScatterCombineFresh", d, dst, nil, -1, w)
	if fresh < 0 || fresh > len(dst)/rb {
		kernPanic("FromScatterCombineFresh: fresh row %d of %d", fresh, len(dst)/rb)
	}
	f64, f32 := floatsOf(d, src)
	if w == 1 {
		if f64 != nil {
			return rsum.AddScatterF64Fresh(dst, f64[:len(idx)], idx, fresh)
		} else if len(idx) > 0 {
			return rsum.AddScatterF32Fresh(dst, f32[:len(idx)], idx, fresh)
		}
		return fresh
	}
	var buf [fromChunk * rsum.Acc64Bytes]byte
	for p, j := range idx {
		if int(j) >= fresh {
			clear(dst[fresh*rb : (int(j)+1)*rb])
			fresh = int(j) + 1
		}
		row := dst[int(j)*rb : int(j)*rb+rb]
		for c0 := 0; c0 < w; c0 += fromChunk {
			c1 := min(c0+fromChunk, w)
			tmp := buf[:(c1-c0)*ab]
			fromFloats(tmp, f64, f32, p*w+c0, p*w+c1)
			rsum.Add(d == kx.F64, row[c0*ab:c1*ab], tmp)
		}
	}
	return fresh
}

// Round rounds accumulators to the caller's floats, to nearest: dst (floats of d) gets
// len(dst)/size of them from the front of src. dst may be the front of src itself (a plan
// rounds its bottom vector in place): values are read a chunk ahead of where they are written,
// and a float is smaller than its accumulator.
func Round(d kx.Dtype, dst, src []byte) {
	ab, fs := rsum.AccBytes(d == kx.F64), d.Size()
	n := len(dst) / fs
	if !d.IsFloat() || len(dst)%fs != 0 || len(src) < n*ab {
		kernPanic("Round: %s dst %d bytes, src %d bytes", d, len(dst), len(src))
	}
	if p := unsafe.Pointer(unsafe.SliceData(dst)); n > 0 && uintptr(p)%uintptr(fs) == 0 {
		// Straight into dst, in place too: ToF64/ToF32 write float i after reading
		// accumulator i, and float i's bytes lie below accumulator i+1's.
		if d == kx.F64 {
			rsum.ToF64(unsafe.Slice((*float64)(p), n), src[:n*ab])
		} else {
			rsum.ToF32(unsafe.Slice((*float32)(p), n), src[:n*ab])
		}
		return
	}
	var g64 [fromChunk]float64
	var g32 [fromChunk]float32
	for lo := 0; lo < n; lo += fromChunk {
		hi := min(lo+fromChunk, n)
		acc := src[lo*ab : hi*ab]
		if d == kx.F64 {
			rsum.ToF64(g64[:hi-lo], acc)
			copy(dst[lo*fs:hi*fs], kernBytes(g64[:hi-lo]))
		} else {
			rsum.ToF32(g32[:hi-lo], acc)
			copy(dst[lo*fs:hi*fs], kernBytes(g32[:hi-lo]))
		}
	}
}
