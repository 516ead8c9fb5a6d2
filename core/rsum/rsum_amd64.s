//go:build amd64 && !noasm

#include "textflag.h"

// func prefetchRows(base *byte, idx []int32, size int)
//
// PREFETCHT0 the first and last byte of row idx[j] (size bytes a row from base) for every j.
TEXT ·prefetchRows(SB), NOSPLIT, $0-40
	MOVQ base+0(FP), DI
	MOVQ idx_base+8(FP), SI
	MOVQ idx_len+16(FP), CX
	MOVQ size+32(FP), DX
	LEAQ -1(DX), R8

pfloop:
	TESTQ CX, CX
	JEQ   pfdone
	MOVLQSX (SI), AX
	IMULQ DX, AX
	ADDQ  DI, AX
	PREFETCHT0 (AX)
	PREFETCHT0 (AX)(R8*1)
	ADDQ  $4, SI
	DECQ  CX
	JMP   pfloop

pfdone:
	RET

// func addValues64BMI2(dst *byte, rows int, vals []float64, idx []int32, j, fresh int) (int, int)
//
// addValues64Go's loop (rsum.go) from value j on, for normal values: row idx[j] of the rows
// accumulators at dst += vals[j], the rows from fresh on started by their first value. It stops,
// returning j and fresh, at the end or before a value it leaves to the Go loop: a zero,
// subnormal, infinity or NaN, or a row outside dst. Rows skipped over above fresh (merged rows
// in key order, not in order of first appearance) it clears itself. The rows of the values 32
// ahead are prefetched.
//
// The value's parts are its three limbs, sign-extended (b's header is flagOther and its top
// bin, tb). The frame holds the row's words masked (A, at 24; zero when the row starts) and
// b's limbs (B, at 72), each after 24 zero bytes: the higher window is read at h, the lower at
// l - 8k (k = min(|ta - tb|, 3)), so its limbs move down k places with zeros shifted in, and
// word i is (h[i] + l[i-k]) mod 2^60 under the merged header: word 0 keeps the row's flag bits
// (b adds none there), word 1 has flagOther and the low 3 bits of the top bin max(ta, tb),
// word 2 its high 4 bits.
TEXT ·addValues64BMI2(SB), NOSPLIT, $96-96
	MOVQ dst+0(FP), DI
	MOVQ vals_base+16(FP), SI
	MOVQ vals_len+24(FP), CX
	MOVQ idx_base+40(FP), R9
	MOVQ j+64(FP), AX
	MOVQ fresh+72(FP), DX
	LEAQ (SI)(AX*8), SI
	LEAQ (R9)(AX*4), R9
	SUBQ AX, CX // values left
	// the zero gaps below A and B
	MOVQ $0, 0(SP)
	MOVQ $0, 8(SP)
	MOVQ $0, 16(SP)
	MOVQ $0, 48(SP)
	MOVQ $0, 56(SP)
	MOVQ $0, 64(SP)

loop:
	TESTQ CX, CX
	JEQ   done
	CMPQ  CX, $32
	JLE   nopf
	MOVLQSX 128(R9), AX
	LEAQ  (AX)(AX*2), AX
	PREFETCHT0 (DI)(AX*8)
	PREFETCHT0 23(DI)(AX*8)

nopf:
	MOVLQSX (R9), R8 // r
	CMPQ  R8, rows+8(FP)
	JAE   done // a row outside dst (or negative): the Go loop panics
	CMPQ  R8, DX
	JGT   gap // rows skipped over above fresh

nogap:
	MOVQ  (SI), AX // b
	MOVQ  AX, BX
	SHRQ  $52, BX
	ANDL  $0x7ff, BX // e
	LEAQ  -1(BX), R10
	CMPQ  R10, $0x7fe
	JAE   done // zero, subnormal, Inf, NaN: the Go loop
	// started: all ones when the row holds a sum (r < fresh); fresh moves past a row it starts
	MOVQ  R8, R10
	SUBQ  DX, R10
	SARQ  $63, R10
	LEAQ  1(DX)(R10*1), DX
	LEAQ  (R8)(R8*2), R8
	LEAQ  (DI)(R8*8), R8 // the row
	// b's limbs: lead = e+51, o = lead%32, tb = lead/32, u = the significand left-aligned
	ADDQ  $51, BX
	MOVL  BX, R11
	ANDL  $31, R11
	SHRQ  $5, BX
	MOVQ  AX, R12
	SHLQ  $11, R12
	BTSQ  $63, R12
	MOVL  $63, R13
	SUBL  R11, R13
	SHRXQ R13, R12, R13 // p0 = u >> (63-o)
	INCL  R11
	SHLXQ R11, R12, R12 // rest = u << (o+1)
	MOVQ  R12, R11
	SHRQ  $32, R11 // p1
	MOVL  R12, R12 // p2
	SARQ  $63, AX // -1 for a negative value
	XORQ  AX, R13
	SUBQ  AX, R13
	XORQ  AX, R11
	SUBQ  AX, R11
	XORQ  AX, R12
	SUBQ  AX, R12
	MOVQ  R13, 72(SP)
	MOVQ  R11, 80(SP)
	MOVQ  R12, 88(SP)
	// the row's words, masked
	MOVQ  (R8), AX
	ANDQ  R10, AX
	MOVQ  AX, 24(SP)
	MOVQ  8(R8), R11
	ANDQ  R10, R11
	MOVQ  R11, 32(SP)
	MOVQ  16(R8), R12
	ANDQ  R10, R12
	MOVQ  R12, 40(SP)
	SHRQ  $60, AX
	SHLQ  $60, AX // word 0's header slice: the row's flags
	SHRQ  $61, R11
	SHRQ  $60, R12
	SHLQ  $3, R12
	ORQ   R11, R12 // ta
	MOVQ  R12, R11
	SUBQ  BX, R11 // d = ta - tb
	CMPQ  R12, BX
	CMOVQLT BX, R12 // the top bin: max(ta, tb)
	LEAQ  24(SP), R13 // h = A
	LEAQ  72(SP), R10 // l = B
	MOVQ  R13, BX
	TESTQ R11, R11
	CMOVQLT R10, R13 // d < 0: h = B
	CMOVQLT BX, R10 // and l = A
	MOVQ  R11, BX
	NEGQ  BX
	CMOVQLT R11, BX // |d|
	MOVL  $3, R11
	CMPQ  BX, $3
	CMOVQGT R11, BX // k = min(|d|, 3)
	SHLQ  $3, BX
	SUBQ  BX, R10
	MOVQ  (R13), R11
	ADDQ  (R10), R11
	SHLQ  $4, R11
	SHRQ  $4, R11
	ORQ   AX, R11
	MOVQ  R11, (R8)
	MOVQ  R12, AX
	SHLQ  $61, AX
	BTSQ  $60, AX // flagOther and the top bin's low 3 bits
	MOVQ  8(R13), R11
	ADDQ  8(R10), R11
	SHLQ  $4, R11
	SHRQ  $4, R11
	ORQ   AX, R11
	MOVQ  R11, 8(R8)
	SHRQ  $3, R12
	SHLQ  $60, R12 // the top bin's high 4 bits
	MOVQ  16(R13), R11
	ADDQ  16(R10), R11
	SHLQ  $4, R11
	SHRQ  $4, R11
	ORQ   R12, R11
	MOVQ  R11, 16(R8)
	ADDQ  $8, SI
	ADDQ  $4, R9
	DECQ  CX
	JMP   loop

gap: // rows [fresh, r) become the empty sum (zero words), and fresh = r
	LEAQ  (DX)(DX*2), AX
	LEAQ  (DI)(AX*8), AX
	MOVQ  R8, R10
	SUBQ  DX, R10
	LEAQ  (R10)(R10*2), R10

gaploop:
	MOVQ  $0, (AX)
	ADDQ  $8, AX
	DECQ  R10
	JNE   gaploop
	MOVQ  R8, DX
	JMP   nogap

done:
	MOVQ vals_len+24(FP), AX
	SUBQ CX, AX
	MOVQ AX, ret+80(FP)
	MOVQ DX, ret1+88(FP)
	RET

// func addValues32BMI2(dst *byte, rows int, vals []float32, idx []int32, j, fresh int) (int, int)
//
// addValues64BMI2 for F32 (addValues32Go): rows of two words with 59-bit limbs, word 0's
// header slice the flags (b adds flagOther, bit 63), word 1's the top bin; the lower window
// moves down by k = min(|ta - tb|, 2). Frame: A at 16 and B at 48, each after 16 zero bytes.
TEXT ·addValues32BMI2(SB), NOSPLIT, $64-96
	MOVQ dst+0(FP), DI
	MOVQ vals_base+16(FP), SI
	MOVQ vals_len+24(FP), CX
	MOVQ idx_base+40(FP), R9
	MOVQ j+64(FP), AX
	MOVQ fresh+72(FP), DX
	LEAQ (SI)(AX*4), SI
	LEAQ (R9)(AX*4), R9
	SUBQ AX, CX // values left
	MOVQ $0, 0(SP)
	MOVQ $0, 8(SP)
	MOVQ $0, 32(SP)
	MOVQ $0, 40(SP)

loop32:
	TESTQ CX, CX
	JEQ   done32
	CMPQ  CX, $32
	JLE   nopf32
	MOVLQSX 128(R9), AX
	SHLQ  $4, AX
	PREFETCHT0 (DI)(AX*1)

nopf32:
	MOVLQSX (R9), R8 // r
	CMPQ  R8, rows+8(FP)
	JAE   done32
	CMPQ  R8, DX
	JGT   gap32 // rows skipped over above fresh

nogap32:
	MOVL  (SI), AX // b
	MOVL  AX, BX
	SHRL  $23, BX
	ANDL  $0xff, BX // e
	LEAL  -1(BX), R10
	CMPL  R10, $0xfe
	JAE   done32
	MOVQ  R8, R10
	SUBQ  DX, R10
	SARQ  $63, R10 // started
	LEAQ  1(DX)(R10*1), DX
	SHLQ  $4, R8
	ADDQ  DI, R8 // the row
	// lead = e+22, o = lead%32, tb = lead/32, u = the significand left-aligned
	ADDL  $22, BX
	MOVL  BX, R11
	ANDL  $31, R11
	SHRL  $5, BX
	MOVQ  AX, R12
	SHLQ  $40, R12
	BTSQ  $63, R12
	MOVL  $63, R13
	SUBL  R11, R13
	SHRXQ R13, R12, R13 // p0
	INCL  R11
	SHLXQ R11, R12, R12 // rest
	SHRQ  $32, R12 // p1
	SHRL  $31, AX
	NEGQ  AX // -1 for a negative value
	XORQ  AX, R13
	SUBQ  AX, R13
	XORQ  AX, R12
	SUBQ  AX, R12
	MOVQ  R13, 48(SP)
	MOVQ  R12, 56(SP)
	MOVQ  (R8), AX
	ANDQ  R10, AX
	MOVQ  AX, 16(SP)
	MOVQ  8(R8), R11
	ANDQ  R10, R11
	MOVQ  R11, 24(SP)
	SHRQ  $59, AX
	SHLQ  $59, AX
	BTSQ  $63, AX // word 0's header slice: the row's flags and flagOther
	SHRQ  $59, R11 // ta
	MOVQ  R11, R12
	SUBQ  BX, R12 // d = ta - tb
	CMPQ  R11, BX
	CMOVQLT BX, R11 // the top bin
	LEAQ  16(SP), R13 // h = A
	LEAQ  48(SP), R10 // l = B
	MOVQ  R13, BX
	TESTQ R12, R12
	CMOVQLT R10, R13
	CMOVQLT BX, R10
	MOVQ  R12, BX
	NEGQ  BX
	CMOVQLT R12, BX // |d|
	MOVL  $2, R12
	CMPQ  BX, $2
	CMOVQGT R12, BX // k = min(|d|, 2)
	SHLQ  $3, BX
	SUBQ  BX, R10
	MOVQ  (R13), R12
	ADDQ  (R10), R12
	SHLQ  $5, R12
	SHRQ  $5, R12
	ORQ   AX, R12
	MOVQ  R12, (R8)
	SHLQ  $59, R11
	MOVQ  8(R13), R12
	ADDQ  8(R10), R12
	SHLQ  $5, R12
	SHRQ  $5, R12
	ORQ   R11, R12
	MOVQ  R12, 8(R8)
	ADDQ  $4, SI
	ADDQ  $4, R9
	DECQ  CX
	JMP   loop32

gap32: // rows [fresh, r) become the empty sum, and fresh = r
	MOVQ  DX, AX
	SHLQ  $4, AX
	ADDQ  DI, AX
	MOVQ  R8, R10
	SUBQ  DX, R10
	SHLQ  $1, R10

gaploop32:
	MOVQ  $0, (AX)
	ADDQ  $8, AX
	DECQ  R10
	JNE   gaploop32
	MOVQ  R8, DX
	JMP   nogap32

done32:
	MOVQ vals_len+24(FP), AX
	SUBQ CX, AX
	MOVQ AX, ret+80(FP)
	MOVQ DX, ret1+88(FP)
	RET

// func toF64BMI2(dst *float64, acc *byte, n int) int
//
// toF64Go's fast path (rsum.go, ToF64) over n accumulators: it stops, returning how many it
// rounded, before one it leaves to the Go loop: NaN or ±Inf flags, a top bin outside the fast
// range, or a 128-bit sum whose high word is zero (zero sums and small values). v = the limbs'
// sum (hi:lo), made positive; top, its 64 leading bits with a sticky one, halved with the
// sticky bit kept (float64(top) as the compiler converts a uint64), converted once and scaled
// by 2^(e2 + 65 - z) exactly; then the sign.
TEXT ·toF64BMI2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ acc+8(FP), SI
	MOVQ n+16(FP), R12
	XORL R13, R13

rloop:
	CMPQ  R13, R12
	JGE   rdone
	MOVQ  (SI), R8 // w0
	MOVQ  8(SI), R9 // w1
	MOVQ  16(SI), R10 // w2
	MOVQ  R8, AX
	SHRQ  $60, AX
	TESTQ $7, AX
	JNE   rdone // NaN or ±Inf
	MOVQ  R9, BX
	SHRQ  $61, BX
	MOVQ  R10, AX
	SHRQ  $60, AX
	SHLQ  $3, AX
	ORQ   AX, BX // the top bin
	SHLQ  $5, BX
	SUBQ  $1138, BX // e2 = 32*(top-2) - 1074
	LEAQ  1022(BX), AX
	CMPQ  AX, $1964
	JHI   rdone // outside the fast range
	SHLQ  $4, R8
	SARQ  $4, R8 // l0
	SHLQ  $4, R9
	SARQ  $4, R9 // l1
	SHLQ  $4, R10
	SARQ  $4, R10 // l2
	MOVQ  R9, AX
	SHLQ  $32, AX
	SARQ  $32, R9
	MOVQ  R10, R11
	SARQ  $63, R11
	MOVQ  R10, DX
	ADDQ  AX, DX // lo
	ADCQ  R9, R8
	ADDQ  R11, R8 // hi
	MOVQ  R8, R9
	SARQ  $63, R9 // -1 for a negative sum
	XORQ  R9, DX
	XORQ  R9, R8
	MOVQ  R9, AX
	NEGQ  AX
	ADDQ  AX, DX
	ADCQ  $0, R8 // |v|
	TESTQ R8, R8
	JEQ   rdone // hi = 0: the Go loop
	BSRQ  R8, CX // 63 - z
	MOVL  $63, AX
	SUBL  CX, AX // z
	SHLXQ AX, R8, R8
	MOVQ  DX, R10
	SHRQ  $1, R10
	SHRXQ CX, R10, R10
	ORQ   R10, R8 // top
	SHLXQ AX, DX, DX // the bits below top
	NEGQ  DX
	SBBQ  R11, R11 // -1 when any is set
	ORQ   R8, R11
	ANDL  $1, R11
	SHRQ  $1, R8
	ORQ   R11, R8 // top>>1 | (top | sticky)&1
	LEAQ  1025(BX)(CX*1), AX // e2 + 65 - z + 1023
	SHLQ  $52, AX
	MOVQ  AX, X1
	XORPS X0, X0
	CVTSQ2SD R8, X0
	MULSD X1, X0
	MOVQ  X0, AX
	SHLQ  $63, R9
	ORQ   R9, AX
	MOVQ  AX, (DI)
	ADDQ  $8, DI
	ADDQ  $24, SI
	INCQ  R13
	JMP   rloop

rdone:
	MOVQ R13, ret+24(FP)
	RET

// func toF64AVX512(dst *float64, acc *byte, n int, perm *[48]uint64) int
//
// toF64BMI2 eight accumulators at a time, in zmm lanes: the words deinterleaved with VPERMI2Q
// (perm holds the index vectors), the 128-bit sum made positive with carries through masks,
// VPLZCNTQ for z, one VCVTQQ2PD for the rounding. It stops, returning how many it rounded,
// before a group of eight with one the Go loop must round (as toF64BMI2's), or fewer than
// eight left.
TEXT ·toF64AVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ acc+8(FP), SI
	MOVQ n+16(FP), R12
	MOVQ perm+24(FP), R8
	XORL R13, R13
	VMOVDQU64 0(R8), Z24 // w0 from A, B
	VMOVDQU64 64(R8), Z25 // w0 from that and C
	VMOVDQU64 128(R8), Z26 // w1
	VMOVDQU64 192(R8), Z27
	VMOVDQU64 256(R8), Z28 // w2
	VMOVDQU64 320(R8), Z29
	MOVQ $1, AX
	VPBROADCASTQ AX, Z30 // 1
	MOVQ $-1, AX
	VPBROADCASTQ AX, Z31 // -1
	MOVQ $7, AX
	VPBROADCASTQ AX, Z23
	MOVQ $1138, AX
	VPBROADCASTQ AX, Z22
	MOVQ $1022, AX
	VPBROADCASTQ AX, Z21
	MOVQ $1964, AX
	VPBROADCASTQ AX, Z20
	MOVQ $63, AX
	VPBROADCASTQ AX, Z19
	MOVQ $1088, AX
	VPBROADCASTQ AX, Z18

vloop:
	LEAQ  8(R13), AX
	CMPQ  AX, R12
	JGT   vdone
	VMOVDQU64 0(SI), Z0 // A
	VMOVDQU64 64(SI), Z1 // B
	VMOVDQU64 128(SI), Z2 // C
	VMOVDQA64 Z24, Z3
	VPERMI2Q Z1, Z0, Z3
	VMOVDQA64 Z25, Z4
	VPERMI2Q Z2, Z3, Z4 // w0
	VMOVDQA64 Z26, Z3
	VPERMI2Q Z1, Z0, Z3
	VMOVDQA64 Z27, Z5
	VPERMI2Q Z2, Z3, Z5 // w1
	VMOVDQA64 Z28, Z3
	VPERMI2Q Z1, Z0, Z3
	VMOVDQA64 Z29, Z6
	VPERMI2Q Z2, Z3, Z6 // w2
	// NaN or ±Inf flags: K1
	VPSRLQ $60, Z4, Z7
	VPTESTMQ Z23, Z7, K1
	// e2 = 32*top - 1138, out of the fast range: K2
	VPSRLQ $61, Z5, Z8
	VPSRLQ $60, Z6, Z9
	VPSLLQ $3, Z9, Z9
	VPORQ  Z9, Z8, Z8
	VPSLLQ $5, Z8, Z8
	VPSUBQ Z22, Z8, Z8 // e2
	VPADDQ Z21, Z8, Z9
	VPCMPUQ $6, Z20, Z9, K2 // e2+1022 > 1964
	KORB   K1, K2, K1
	// the limbs
	VPSLLQ $4, Z4, Z4
	VPSRAQ $4, Z4, Z4 // l0
	VPSLLQ $4, Z5, Z5
	VPSRAQ $4, Z5, Z5 // l1
	VPSLLQ $4, Z6, Z6
	VPSRAQ $4, Z6, Z6 // l2
	VPSLLQ $32, Z5, Z10
	VPADDQ Z10, Z6, Z10 // lo
	VPCMPUQ $1, Z6, Z10, K3 // lo < l2: a carry
	VPSRAQ $32, Z5, Z11
	VPADDQ Z11, Z4, Z11
	VPSRAQ $63, Z6, Z12
	VPADDQ Z12, Z11, Z11
	VPSUBQ Z31, Z11, K3, Z11 // hi
	VPSRAQ $63, Z11, Z12 // -1 for a negative sum
	VPXORQ Z12, Z10, Z10
	VPXORQ Z12, Z11, Z11
	VPSUBQ Z12, Z10, Z10 // lo + 1 where negative
	VPTESTNMQ Z10, Z10, K4 // lo = 0
	VPMOVQ2M Z12, K5
	KANDB  K4, K5, K4
	VPSUBQ Z31, Z11, K4, Z11 // |v| = (hi:lo)
	VPTESTNMQ Z11, Z11, K6 // hi = 0: the Go loop
	KORB   K6, K1, K1
	KMOVB  K1, AX
	TESTL  AX, AX
	JNE    vdone
	VPLZCNTQ Z11, Z13 // z
	VPSLLVQ Z13, Z11, Z14 // hi << z
	VPSUBQ Z13, Z19, Z15 // 63 - z
	VPSRLQ $1, Z10, Z16
	VPSRLVQ Z15, Z16, Z16
	VPORQ  Z16, Z14, Z14 // top
	VPSLLVQ Z13, Z10, Z16 // the bits below top
	VPTESTMQ Z16, Z16, K7
	VPANDQ Z30, Z14, Z17
	VPORQ  Z30, Z17, K7, Z17 // (top | sticky) & 1
	VPSRLQ $1, Z14, Z14
	VPORQ  Z17, Z14, Z14 // y
	VCVTQQ2PD Z14, Z14
	VPADDQ Z18, Z8, Z15 // e2 + 1088
	VPSUBQ Z13, Z15, Z15 // e2 + 65 - z + 1023
	VPSLLQ $52, Z15, Z15
	VMULPD Z15, Z14, Z14
	VPSLLQ $63, Z12, Z12
	VPORQ  Z12, Z14, Z14
	VMOVDQU64 Z14, 0(DI)
	ADDQ  $64, DI
	ADDQ  $192, SI
	ADDQ  $8, R13
	JMP   vloop

vdone:
	VZEROUPPER
	MOVQ R13, ret+32(FP)
	RET

// func toF32AVX512(dst *float32, acc *byte, n int, perm *[16]uint64) int
//
// toF32Go's fast path (ToF32) eight accumulators at a time: v = l0<<32 + l1 when |l0| < 2^30,
// converted once to float32 (VCVTQQ2PS), widened, scaled by 2^e2 and narrowed, the same
// operations as the Go loop. It stops, returning how many it rounded, before a group of eight
// with one the Go loop must round (flags, a wide l0, a zero sum), or fewer than eight left.
TEXT ·toF32AVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ acc+8(FP), SI
	MOVQ n+16(FP), R12
	MOVQ perm+24(FP), R8
	XORL R13, R13
	VMOVDQU64 0(R8), Z24 // w0
	VMOVDQU64 64(R8), Z25 // w1
	MOVQ $7, AX
	VPBROADCASTQ AX, Z23
	MOVQ $0x40000000, AX
	VPBROADCASTQ AX, Z22 // 2^30
	MOVQ $0x80000000, AX
	VPBROADCASTQ AX, Z21 // 2^31
	MOVQ $842, AX
	VPBROADCASTQ AX, Z20 // 1023 - 181

floop:
	LEAQ  8(R13), AX
	CMPQ  AX, R12
	JGT   fdone
	VMOVDQU64 0(SI), Z0
	VMOVDQU64 64(SI), Z1
	VMOVDQA64 Z24, Z2
	VPERMI2Q Z1, Z0, Z2 // w0
	VMOVDQA64 Z25, Z3
	VPERMI2Q Z1, Z0, Z3 // w1
	VPSRLQ $59, Z2, Z4
	VPTESTMQ Z23, Z4, K1 // NaN or ±Inf
	VPSLLQ $5, Z2, Z2
	VPSRAQ $5, Z2, Z2 // l0
	VPADDQ Z22, Z2, Z5
	VPCMPUQ $5, Z21, Z5, K2 // l0 + 2^30 >= 2^31
	KORB   K1, K2, K1
	VPSRLQ $59, Z3, Z6 // the top bin
	VPSLLQ $5, Z3, Z3
	VPSRAQ $5, Z3, Z3 // l1
	VPSLLQ $32, Z2, Z2
	VPADDQ Z3, Z2, Z2 // v
	VPTESTNMQ Z2, Z2, K3 // v = 0
	KORB   K3, K1, K1
	KMOVB  K1, AX
	TESTL  AX, AX
	JNE    fdone
	VCVTQQ2PS Z2, Y7
	VCVTPS2PD Y7, Z7
	VPSLLQ $5, Z6, Z6
	VPADDQ Z20, Z6, Z6 // e2 + 1023 = 32*top - 181 + 1023
	VPSLLQ $52, Z6, Z6
	VMULPD Z6, Z7, Z7
	VCVTPD2PS Z7, Y7
	VMOVUPS Y7, 0(DI)
	ADDQ  $32, DI
	ADDQ  $128, SI
	ADDQ  $8, R13
	JMP   floop

fdone:
	VZEROUPPER
	MOVQ R13, ret+32(FP)
	RET
