//go:build !amd64 || noasm

package core

// Without assembly the dense Sum is the portable loop.

func kernAddF32(x, y []float32) { kernAddGo(x, y) }

func kernAddF64(x, y []float64) { kernAddGo(x, y) }
