//go:build !amd64 || noasm

package kernels

import "kylix/core/kx"

// Without assembly every kernel is the portable loop and "go" is the only level.

const kernLevelGo = "go"

func kernLevels() []string { return []string{kernLevelGo} }

func Level() string { return kernLevelGo }

func kernSetLevel(level string) {
	if level != kernLevelGo {
		kernPanic("SIMD level %q not supported in this build", level)
	}
}

func kernAddF32(x, y []float32) { kernAddGo(x, y) }
func kernAddF64(x, y []float64) { kernAddGo(x, y) }
func kernAddI32(x, y []int32)   { kernAddGo(x, y) }
func kernAddI64(x, y []int64)   { kernAddGo(x, y) }
func kernAddU64(x, y []uint64)  { kernAddGo(x, y) }

func kernGatherW1[T kernNum](x, y []T, idx []int32, id T) int { return 0 }

func kernMinMax[T kernNum](o kx.Op, x, y []T) int { return 0 }

func kernBitwisePrefix[T kernNum](o kx.Op, x, y []T) int { return 0 }
