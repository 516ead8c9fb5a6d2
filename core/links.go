package core

import (
	"kylix/core/kx"
	"kylix/core/planning"
	"kylix/core/probe"
)

// MeasureLinks measures the links now (a collective: every rank calls it, core/probe) and
// keeps the result for planning (degrees=auto without min_packet) and compress=auto. A
// replicated comm cannot agree on measured figures (planner.needLinks) and gets CodeArg.
func (c *Comm) MeasureLinks() (*planning.Links, error) {
	if err := c.st.usable(); err != nil {
		return nil, err
	}
	if c.opts.Replication > 1 {
		return nil, c.Reject(kx.Errorf(kx.CodeArg, "replication: links are not measured with replication %d > 1 (replicas' timings race)", c.opts.Replication))
	}
	var l *planning.Links
	err := c.collective(kx.Fingerprint{Kind: kx.KindLinks}, func(seq uint64) error {
		var err error
		if l, err = probe.Measure(&c.cx, seq); l != nil {
			c.plan.setLinks(l)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Links returns the measured link model, or nil before it is measured. It is shared: do not
// change it.
func (c *Comm) Links() *planning.Links { return c.plan.links() }
