//go:build amd64 && !noasm

#include "textflag.h"

// func TSC() int64
TEXT ·TSC(SB), NOSPLIT, $0-8
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET
