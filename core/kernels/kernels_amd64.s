//go:build amd64 && !noasm

#include "textflag.h"

// ---- dense Sum: dst[i] = dst[i] + src[i] for i < len(dst) ----
//
// func kernAddF32AVX2(dst, src []float32)
// func kernAddF64AVX2(dst, src []float64)
// func kernAddI32AVX2(dst, src []int32)
// func kernAddI64AVX2(dst, src []int64)
//
// The caller guarantees len(src) >= len(dst). Four ymm per iteration, then one, then one element
// at a time. dst is the first operand of every add, as in the Go loop (x86 returns the first
// operand's NaN when both are NaN); integers wrap.
// MOV moves a ymm, ADD adds ymm (ADDS a scalar in an xmm), LD moves one element, N is the
// elements per ymm and S the element size.
#define ADDFN(MOV, ADD, LD, ADDS, N, S) \
	MOVQ dst_base+0(FP), DI; \
	MOVQ dst_len+8(FP), CX; \
	MOVQ src_base+24(FP), SI; \
loop4: \
	CMPQ CX, $(4*N); \
	JL   loop1; \
	MOV  (DI), Y0; \
	MOV  32(DI), Y1; \
	MOV  64(DI), Y2; \
	MOV  96(DI), Y3; \
	ADD  (SI), Y0, Y0; \
	ADD  32(SI), Y1, Y1; \
	ADD  64(SI), Y2, Y2; \
	ADD  96(SI), Y3, Y3; \
	MOV  Y0, (DI); \
	MOV  Y1, 32(DI); \
	MOV  Y2, 64(DI); \
	MOV  Y3, 96(DI); \
	ADDQ $128, DI; \
	ADDQ $128, SI; \
	SUBQ $(4*N), CX; \
	JMP  loop4; \
loop1: \
	CMPQ CX, $N; \
	JL   tail; \
	MOV  (DI), Y0; \
	ADD  (SI), Y0, Y0; \
	MOV  Y0, (DI); \
	ADDQ $32, DI; \
	ADDQ $32, SI; \
	SUBQ $N, CX; \
	JMP  loop1; \
tail: \
	TESTQ CX, CX; \
	JZ    done; \
	LD    (DI), X0; \
	LD    (SI), X1; \
	ADDS  X1, X0, X0; \
	LD    X0, (DI); \
	ADDQ  $S, DI; \
	ADDQ  $S, SI; \
	DECQ  CX; \
	JMP   tail; \
done: \
	VZEROUPPER; \
	RET

// ---- dense Min and Max of floats: dst[i] = kernMin(dst[i], src[i]) (or kernMax) ----
//
// func kernMinF32AVX2(dst, src []float32) int
// func kernMaxF32AVX2(dst, src []float32) int
// func kernMinF64AVX2(dst, src []float64) int
// func kernMaxF64AVX2(dst, src []float64) int
//
// On whole blocks of two ymm (len(src) >= len(dst)); they return how many elements they did.
// VMINP/VMAXP give a < b ? a : b (a > b for Max), else b (NaNs, equal operands), so equal
// operands then take a | b for Min (-0 wins) or a & b for Max (+0 wins), other equal operands
// having equal bits; last, a NaN dst is put back (a NaN src is there already).
// MOV moves a ymm, OP is VMINP/VMAXP, LOGIC VORP/VANDP, CMP VCMPP, BLEND VBLENDVP; N is the
// elements per ymm and S the element size.
#define MINMAXFN(MOV, OP, LOGIC, CMP, BLEND, N, S) \
	MOVQ dst_base+0(FP), DI; \
	MOVQ dst_len+8(FP), CX; \
	MOVQ src_base+24(FP), SI; \
	ANDQ $(-2*N), CX; \
	XORQ AX, AX; \
loop: \
	CMPQ  AX, CX; \
	JGE   done; \
	MOV   (DI)(AX*S), Y0; \
	MOV   32(DI)(AX*S), Y4; \
	MOV   (SI)(AX*S), Y1; \
	MOV   32(SI)(AX*S), Y5; \
	OP    Y1, Y0, Y2; \
	OP    Y5, Y4, Y6; \
	LOGIC Y1, Y0, Y3; \
	LOGIC Y5, Y4, Y7; \
	CMP   $0, Y1, Y0, Y8; /* a == b, ordered */ \
	CMP   $0, Y5, Y4, Y9; \
	BLEND Y8, Y3, Y2, Y2; \
	BLEND Y9, Y7, Y6, Y6; \
	CMP   $3, Y0, Y0, Y8; /* a is NaN */ \
	CMP   $3, Y4, Y4, Y9; \
	BLEND Y8, Y0, Y2, Y2; \
	BLEND Y9, Y4, Y6, Y6; \
	MOV   Y2, (DI)(AX*S); \
	MOV   Y6, 32(DI)(AX*S); \
	ADDQ  $(2*N), AX; \
	JMP   loop; \
done: \
	MOVQ AX, ret+48(FP); \
	VZEROUPPER; \
	RET


// ---- w == 1 gather: dst[p] = src[idx[p]], or id where idx[p] < 0 ----
//
// func kernGather32AVX512(dst, src []uint32, idx []int32, id uint32) int
// func kernGather64AVX512(dst, src []uint64, idx []int32, id uint64) int
// func kernGather32AVX2(dst, src []uint32, idx []int32, id uint32) int
// func kernGather64AVX2(dst, src []uint64, idx []int32, id uint64) int
//
// They handle whole blocks of 16 (AVX-512) or 8 (AVX2) indices, len(dst) >= len(idx), and return
// how many elements they wrote. Each block's indices are checked before its gather: a block
// holding an index >= len(src) stops the kernel there, so it never reads outside src, and the
// Go loop that finishes the job panics on that index exactly as it would alone. Negative
// indices are masked off the gather; the masked lanes keep the broadcast identity.
// Arguments: dst 0, src 24, idx 48, id 72, ret 80.

// GATHERARGS(B) loads DI = dst, SI = src, BX = idx, AX = min(len(src), MaxInt32), CX = len(idx)
// rounded down to blocks of B, R8 = 0 (the position) and R10 = CX-128 (see PREFETCH2).
#define GATHERARGS(B) \
	MOVQ    dst_base+0(FP), DI; \
	MOVQ    src_base+24(FP), SI; \
	MOVQ    src_len+32(FP), AX; \
	MOVQ    idx_base+48(FP), BX; \
	MOVQ    idx_len+56(FP), CX; \
	MOVQ    $0x7fffffff, DX; \
	CMPQ    AX, DX; \
	CMOVQGT DX, AX; \
	ANDQ    $(-B), CX; \
	XORQ    R8, R8; \
	LEAQ    -128(CX), R10

// PREFETCH2(LAST, S) prefetches the rows named by the first and last (byte offset LAST) index
// of the block 128 positions ahead, or of the current block near the end (never past idx;
// PREFETCH itself never faults). On increasing indices into a table far beyond the caches this
// turned a 0.7x loss into a 1.4-3x win: the gathers do not seem to train the hardware
// prefetcher. Prefetching every lane instead cost 0.7x in cache and gained nothing at 4M.
#define PREFETCH2(LAST, S) \
	LEAQ       128(R8), R12; \
	CMPQ       R8, R10; \
	CMOVQGE    R8, R12; \
	MOVLQSX    (BX)(R12*4), R9; \
	PREFETCHT0 (SI)(R9*S); \
	MOVLQSX    LAST(BX)(R12*4), R9; \
	PREFETCHT0 (SI)(R9*S)

// ---- exact element-wise ops on whole blocks: integer Min/Max and the bitwise ops ----
//
// func kernMinI32AVX2(dst, src []int32) int     func kernMaxI32AVX2(dst, src []int32) int
// func kernMinI64AVX512(dst, src []int64) int   func kernMaxI64AVX512(dst, src []int64) int
// func kernMinU64AVX512(dst, src []uint64) int  func kernMaxU64AVX512(dst, src []uint64) int
// func kernAndAVX2(dst, src []uint32) int       (and kernOrAVX2, kernXorAVX2)
//
// dst[i] = OP(dst[i], src[i]) on whole blocks of two vectors (len(src) >= len(dst)); they
// return how many elements they did. These ops are exact and commutative: no order question.
// MOV moves a vector, A and B are vector registers, N is the elements per vector, S the element
// size and VB the vector size in bytes.
#define BLOCKFN(MOV, OP, A, B, N, S, VB) \
	MOVQ dst_base+0(FP), DI; \
	MOVQ dst_len+8(FP), CX; \
	MOVQ src_base+24(FP), SI; \
	ANDQ $(-2*N), CX; \
	XORQ AX, AX; \
loop: \
	CMPQ AX, CX; \
	JGE  done; \
	MOV  (DI)(AX*S), A; \
	MOV  VB(DI)(AX*S), B; \
	OP   (SI)(AX*S), A, A; \
	OP   VB(SI)(AX*S), B, B; \
	MOV  A, (DI)(AX*S); \
	MOV  B, VB(DI)(AX*S); \
	ADDQ $(2*N), AX; \
	JMP  loop; \
done: \
	MOVQ AX, ret+48(FP); \
	VZEROUPPER; \
	RET

TEXT ·kernAddF32AVX2(SB), NOSPLIT, $0-48
	ADDFN(VMOVUPS, VADDPS, VMOVSS, VADDSS, 8, 4)

TEXT ·kernAddF64AVX2(SB), NOSPLIT, $0-48
	ADDFN(VMOVUPD, VADDPD, VMOVSD, VADDSD, 4, 8)

TEXT ·kernAddI32AVX2(SB), NOSPLIT, $0-48
	ADDFN(VMOVDQU, VPADDD, VMOVD, VPADDD, 8, 4)

TEXT ·kernAddI64AVX2(SB), NOSPLIT, $0-48
	ADDFN(VMOVDQU, VPADDQ, VMOVQ, VPADDQ, 4, 8)

TEXT ·kernGather32AVX512(SB), NOSPLIT, $0-88
	GATHERARGS(16)
	VPBROADCASTD AX, Z30
	MOVL         id+72(FP), AX
	VPBROADCASTD AX, Z31
	VPXORD       Z29, Z29, Z29

g32loop:
	CMPQ      R8, CX
	JGE       g32done
	PREFETCH2(60, 4)
	VMOVDQU32 (BX)(R8*4), Z1
	VPCMPUD   $1, Z30, Z1, K1 // 0 <= idx < len(src)
	VPCMPD    $1, Z29, Z1, K2 // idx < 0
	KORW      K1, K2, K3
	KORTESTW  K3, K3
	JCC       g32done         // some index >= len(src)
	VMOVDQA32 Z31, Z0
	VPGATHERDD (SI)(Z1*4), K1, Z0
	VMOVDQU32 Z0, (DI)(R8*4)
	ADDQ      $16, R8
	JMP       g32loop

g32done:
	MOVQ R8, ret+80(FP)
	VZEROUPPER
	RET

TEXT ·kernGather64AVX512(SB), NOSPLIT, $0-88
	GATHERARGS(16)
	VPBROADCASTD AX, Z30
	MOVQ         id+72(FP), AX
	VPBROADCASTQ AX, Z31
	VPXORD       Z29, Z29, Z29

g64loop:
	CMPQ      R8, CX
	JGE       g64done
	PREFETCH2(60, 8)
	VMOVDQU32 (BX)(R8*4), Z1
	VPCMPUD   $1, Z30, Z1, K1
	VPCMPD    $1, Z29, Z1, K2
	KORW      K1, K2, K3
	KORTESTW  K3, K3
	JCC       g64done
	KSHIFTRW  $8, K1, K2      // lanes 8..15 for the second gather
	VEXTRACTI32X8 $1, Z1, Y2
	VMOVDQA64 Z31, Z0
	VMOVDQA64 Z31, Z3
	VPGATHERDQ (SI)(Y1*8), K1, Z0
	VPGATHERDQ (SI)(Y2*8), K2, Z3
	VMOVDQU64 Z0, (DI)(R8*8)
	VMOVDQU64 Z3, 64(DI)(R8*8)
	ADDQ      $16, R8
	JMP       g64loop

g64done:
	MOVQ R8, ret+80(FP)
	VZEROUPPER
	RET

// The AVX2 forms have no unsigned compare: an index is out of range when idx > len(src)-1
// (signed; -1 for an empty src), and the gather mask is idx > -1.

TEXT ·kernGather32AVX2(SB), NOSPLIT, $0-88
	GATHERARGS(8)
	DECQ         AX
	MOVQ         AX, X14
	VPBROADCASTD X14, Y14
	MOVL         id+72(FP), AX
	MOVQ         AX, X15
	VPBROADCASTD X15, Y15
	VPCMPEQD     Y13, Y13, Y13 // -1

h32loop:
	CMPQ     R8, CX
	JGE      h32done
	PREFETCH2(28, 4)
	VMOVDQU  (BX)(R8*4), Y1
	VPCMPGTD Y14, Y1, Y2
	VPTEST   Y2, Y2
	JNZ      h32done
	VPCMPGTD Y13, Y1, Y3
	VMOVDQA  Y15, Y0
	VPGATHERDD Y3, (SI)(Y1*4), Y0
	VMOVDQU  Y0, (DI)(R8*4)
	ADDQ     $8, R8
	JMP      h32loop

h32done:
	MOVQ R8, ret+80(FP)
	VZEROUPPER
	RET

TEXT ·kernGather64AVX2(SB), NOSPLIT, $0-88
	GATHERARGS(8)
	DECQ         AX
	MOVQ         AX, X14
	VPBROADCASTD X14, Y14
	MOVQ         id+72(FP), AX
	MOVQ         AX, X15
	VPBROADCASTQ X15, Y15
	VPCMPEQD     Y13, Y13, Y13

h64loop:
	CMPQ     R8, CX
	JGE      h64done
	PREFETCH2(28, 8)
	VMOVDQU  (BX)(R8*4), Y1
	VPCMPGTD Y14, Y1, Y2
	VPTEST   Y2, Y2
	JNZ      h64done
	VPCMPGTD Y13, Y1, Y3
	VEXTRACTI128 $1, Y1, X4
	VEXTRACTI128 $1, Y3, X5
	VPMOVSXDQ X3, Y3        // dword masks to qword masks
	VPMOVSXDQ X5, Y5
	VMOVDQA  Y15, Y0
	VMOVDQA  Y15, Y6
	VPGATHERDQ Y3, (SI)(X1*8), Y0
	VPGATHERDQ Y5, (SI)(X4*8), Y6
	VMOVDQU  Y0, (DI)(R8*8)
	VMOVDQU  Y6, 32(DI)(R8*8)
	ADDQ     $8, R8
	JMP      h64loop

h64done:
	MOVQ R8, ret+80(FP)
	VZEROUPPER
	RET

TEXT ·kernMinF32AVX2(SB), NOSPLIT, $0-56
	MINMAXFN(VMOVUPS, VMINPS, VORPS, VCMPPS, VBLENDVPS, 8, 4)

TEXT ·kernMaxF32AVX2(SB), NOSPLIT, $0-56
	MINMAXFN(VMOVUPS, VMAXPS, VANDPS, VCMPPS, VBLENDVPS, 8, 4)

TEXT ·kernMinF64AVX2(SB), NOSPLIT, $0-56
	MINMAXFN(VMOVUPD, VMINPD, VORPD, VCMPPD, VBLENDVPD, 4, 8)

TEXT ·kernMaxF64AVX2(SB), NOSPLIT, $0-56
	MINMAXFN(VMOVUPD, VMAXPD, VANDPD, VCMPPD, VBLENDVPD, 4, 8)

TEXT ·kernMinI32AVX2(SB), NOSPLIT, $0-56
	BLOCKFN(VMOVDQU, VPMINSD, Y0, Y1, 8, 4, 32)

TEXT ·kernMaxI32AVX2(SB), NOSPLIT, $0-56
	BLOCKFN(VMOVDQU, VPMAXSD, Y0, Y1, 8, 4, 32)

TEXT ·kernMinI64AVX512(SB), NOSPLIT, $0-56
	BLOCKFN(VMOVDQU64, VPMINSQ, Z0, Z1, 8, 8, 64)

TEXT ·kernMaxI64AVX512(SB), NOSPLIT, $0-56
	BLOCKFN(VMOVDQU64, VPMAXSQ, Z0, Z1, 8, 8, 64)

TEXT ·kernMinU64AVX512(SB), NOSPLIT, $0-56
	BLOCKFN(VMOVDQU64, VPMINUQ, Z0, Z1, 8, 8, 64)

TEXT ·kernMaxU64AVX512(SB), NOSPLIT, $0-56
	BLOCKFN(VMOVDQU64, VPMAXUQ, Z0, Z1, 8, 8, 64)

TEXT ·kernAndAVX2(SB), NOSPLIT, $0-56
	BLOCKFN(VMOVDQU, VPAND, Y0, Y1, 8, 4, 32)

TEXT ·kernOrAVX2(SB), NOSPLIT, $0-56
	BLOCKFN(VMOVDQU, VPOR, Y0, Y1, 8, 4, 32)

TEXT ·kernXorAVX2(SB), NOSPLIT, $0-56
	BLOCKFN(VMOVDQU, VPXOR, Y0, Y1, 8, 4, 32)
