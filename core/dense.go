package core

import (
	"kylix/core/dense"
	"kylix/core/kx"
)

// Allreduce combines every rank's send vector elementwise and leaves the result in recv on
// every rank (send and recv may be the same buffer): the direct exchange for small vectors,
// the nested butterfly with dense ranges for large ones (core/dense). Every element is combined
// by one owner in source order, so all ranks get the same bits.
func (c *Comm) Allreduce(send, recv []byte, d kx.Dtype, o kx.Op) error {
	fp, err := c.checkDense(send, recv, d, o)
	if err != nil {
		return err
	}
	return c.collective(fp, func(seq uint64) error { return c.dense.Run(seq, send, recv, d, o) })
}

// IAllreduce starts Allreduce and returns at once; arguments and buffers as for IReduce.
func (c *Comm) IAllreduce(send, recv []byte, d kx.Dtype, o kx.Op) (*Request, error) {
	fp, err := c.checkDense(send, recv, d, o)
	if err != nil {
		return nil, err
	}
	return c.issue(fp, func(seq uint64) error { return c.dense.Run(seq, send, recv, d, o) })
}

// checkDense checks an allreduce's arguments and returns its fingerprint; a bad one is
// rejected, so the other ranks' calls fail with CodeMismatch instead of waiting.
func (c *Comm) checkDense(send, recv []byte, d kx.Dtype, o kx.Op) (kx.Fingerprint, error) {
	if err := c.st.usable(); err != nil {
		return kx.Fingerprint{}, err
	}
	fp, err := dense.Check(send, recv, d, o)
	if err != nil {
		return kx.Fingerprint{}, c.Reject(err)
	}
	return fp, nil
}

// DefaultDenseSwitch is the vector size in bytes up to which Allreduce takes the one-round
// direct exchange instead of the butterfly (dense.DefaultSwitch).
const DefaultDenseSwitch = dense.DefaultSwitch

// SetDenseSwitch changes the direct/butterfly switch point of this comm (benchmarks); every
// rank must use the same value. Negative restores the default.
func (c *Comm) SetDenseSwitch(bytes int) { c.dense.Switch = bytes }
