package kernels

import "kylix/core/kx"

// Divide divides every element of b by deg (correctly rounded: deg is exact in either type).
func Divide(d kx.Dtype, b []byte, deg int) {
	switch d {
	case kx.F32:
		scaleFloats[float32](b, deg)
	case kx.F64:
		scaleFloats[float64](b, deg)
	default:
		kernPanic("Divide: %s is not a float dtype", d)
	}
}

func scaleFloats[T kernFloat](b []byte, deg int) {
	x, aligned := kernView[T](b)
	dv := T(deg)
	for i := range x {
		x[i] /= dv
	}
	if !aligned {
		copy(b, kernBytes(x))
	}
}
