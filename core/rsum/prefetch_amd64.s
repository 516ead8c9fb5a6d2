//go:build amd64 && !noasm

#include "textflag.h"

// func prefetchRows(base *byte, idx []int32, size int)
// PREFETCHT0 the first and last byte of row idx[j] (size bytes a row from base) for every j.
TEXT ·prefetchRows(SB), NOSPLIT, $0-40
	MOVQ base+0(FP), DI
	MOVQ idx_base+8(FP), SI
	MOVQ idx_len+16(FP), CX
	MOVQ size+32(FP), DX
	LEAQ -1(DX), R8
loop:
	TESTQ CX, CX
	JEQ done
	MOVLQSX (SI), AX
	IMULQ DX, AX
	ADDQ DI, AX
	PREFETCHT0 (AX)
	PREFETCHT0 (AX)(R8*1)
	ADDQ $4, SI
	DECQ CX
	JMP loop
done:
	RET
