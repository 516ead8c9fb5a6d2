package core

import (
	"kylix/core/kx"
	"kylix/core/mix"
)

// Mix replaces buf (a whole number of elements of the float dtype d) with the average of buf
// over this rank's group at layer step mod L of the butterfly (butterfly mixing, core/mix).
// All members of the group end with the bitwise-same vector. The step is part of the
// fingerprint: ranks that disagree on it fail with CodeMismatch, never a timeout. Integer
// dtypes and a negative step are CodeArg. On failure buf is unchanged.
func (c *Comm) Mix(buf []byte, d kx.Dtype, step int64) error {
	if err := c.st.usable(); err != nil {
		return err
	}
	fp, err := mix.Check(buf, d, step)
	if err != nil {
		return c.Reject(err)
	}
	return c.collective(fp, func(seq uint64) error { return c.mix.Run(seq, buf, d, step) })
}
