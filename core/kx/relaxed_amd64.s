//go:build amd64 && !noasm

#include "textflag.h"

// func storeRelaxed(p *int64, v int64)
TEXT ·storeRelaxed(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET
