package kernels

import "kylix/core/kx"

// CheckDtypeOp validates a dtype/op pair: a built-in op, or a registered user op (any dtype).
func CheckDtypeOp(d kx.Dtype, o kx.Op) error {
	if !d.Valid() {
		return kx.Errorf(kx.CodeArg, "dtype: %d is not a kylix_dtype", int(d))
	}
	if o >= kx.FirstUserOp {
		if lookupUserOp(o) == nil {
			return kx.Errorf(kx.CodeArg, "op: %d is not a kylix_op nor an id from kylix_op_create", int(o))
		}
		return nil
	}
	if !o.Builtin() {
		return kx.Errorf(kx.CodeArg, "op: %d is not a kylix_op", int(o))
	}
	if d.IsFloat() && o >= kx.Band && o <= kx.Bxor {
		return kx.Errorf(kx.CodeArg, "op: %s is defined for integer dtypes only, not %s", o, d)
	}
	if o == kx.RSum && !d.IsFloat() {
		return kx.Errorf(kx.CodeArg, "op: %s is defined for f32 and f64 only, not %s", o, d)
	}
	return nil
}
