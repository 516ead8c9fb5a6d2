package kx

// Dtype and Op values match enum kylix_dtype and enum kylix_op in include/kylix.h.
type Dtype uint8

const (
	F32 Dtype = iota + 1
	F64
	I32
	I64
	U64
)

type Op uint16

const (
	Sum Op = iota + 1
	Prod
	Min
	Max
	Band
	Bor
	Bxor
	// RSum is the reproducible sum (F32, F64): its values travel and combine as core/rsum
	// accumulators, so the result depends only on the multiset of contributions.
	RSum
	// FirstUserOp is the first id handed out for user-defined ops.
	FirstUserOp Op = 64
)

var dtypeNames = [...]string{"", "f32", "f64", "i32", "i64", "u64"}
var opNames = [...]string{"", "sum", "prod", "min", "max", "band", "bor", "bxor", "rsum"}

func (d Dtype) Valid() bool { return d >= F32 && d <= U64 }

func (d Dtype) String() string {
	if d.Valid() {
		return dtypeNames[d]
	}
	return "dtype?"
}

// Size is the element size in bytes.
func (d Dtype) Size() int {
	switch d {
	case F32, I32:
		return 4
	case F64, I64, U64:
		return 8
	}
	return 0
}

func (d Dtype) IsFloat() bool { return d == F32 || d == F64 }

func (o Op) String() string {
	if o.Builtin() {
		return opNames[o]
	}
	return "op?"
}

// Builtin reports whether o is one of the predefined ops.
func (o Op) Builtin() bool { return o >= Sum && o <= RSum }
