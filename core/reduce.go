package core

// Reduce sends this rank's out values down the configured butterfly and writes the op over
// all ranks into inVals, in the caller's in-index order.
func (p *Plan) Reduce(outVals, inVals []byte, d Dtype, o Op, width int) error {
	if err := p.usable(); err != nil {
		return err
	}
	c := p.c
	err := checkReduceArgs(d, o, width)
	if err == nil {
		err = checkValues("out_vals", outVals, p.nOut, d, width)
	}
	if err == nil {
		err = checkValues("in_vals", inVals, p.nIn, d, width)
	}
	if err != nil {
		return c.Reject(err)
	}
	vs := &valueSpec{d: d, o: o, width: width, es: width * d.Size()}
	fp := Fingerprint{Kind: KindReduce, Dtype: uint8(d), Op: uint16(o), Width: int32(width), Plan: p.id}
	return c.collective(fp, func(seq uint64) error {
		v := make([]byte, p.out0*vs.es)
		cb := newCombiner(d, o, width, v)
		cb.scatter(outVals, p.outPos)
		for i := range p.layers {
			var err error
			if v, err = p.down(seq, i, v, vs); err != nil {
				return err
			}
		}
		return p.up(seq, v, inVals, vs)
	})
}

// down is one scatter-reduce layer: member g gets the contiguous slice of v for its key range
// (sent straight from v), and the slices received are combined in source order.
func (p *Plan) down(seq uint64, i int, v []byte, vs *valueSpec) ([]byte, error) {
	c, t, lm := p.c, p.topo, &p.layers[i]
	node, d, es := c.Rank(), t.Degrees[i], vs.es
	me := t.Digit(node, i)
	tag := Tag{Seq: seq, Layer: uint8(i), Phase: PhaseDown}
	sg := sendGroup{t: c.t}
	for g := 0; g < d; g++ {
		if g != me {
			sg.send(t.Member(node, i, g), tag, v[lm.outSplit[g]*es:lm.outSplit[g+1]*es])
		}
	}
	nv := make([]byte, lm.outLen*es)
	cb := newCombiner(vs.d, vs.o, vs.width, nv)
	var rerr error
	for g := 0; g < d; g++ {
		src := v[lm.outSplit[me]*es : lm.outSplit[me+1]*es]
		if g != me {
			from := t.Member(node, i, g)
			if src, rerr = c.t.Recv(from, tag); rerr != nil {
				break
			}
			if len(src) != len(lm.outMaps[g])*es {
				rerr = Errorf(CodeInternal, "rank %d sent %d bytes of values in layer %d, want %d", from, len(src), i, len(lm.outMaps[g])*es)
				break
			}
		}
		cb.scatter(src, lm.outMaps[g])
		if g != me {
			c.release(src)
		}
	}
	if err := sg.wait(); rerr == nil {
		rerr = err
	}
	return nv, rerr
}

// up maps the bottom in keys onto the reduced out values, then climbs the layers: each node
// gathers for every member the values of the keys that member asked for, and concatenates what
// it receives into the value vector of the layer above. The last step lands in inVals.
func (p *Plan) up(seq uint64, v, inVals []byte, vs *valueSpec) error {
	c, t, es := p.c, p.topo, vs.es
	node := c.Rank()
	vin := make([]byte, len(p.bottom)*es)
	Gather(vs.d, vs.o, vin, v, p.bottom, vs.width)
	for i := len(p.layers) - 1; i >= 0; i-- {
		lm := &p.layers[i]
		d := t.Degrees[i]
		me := t.Digit(node, i)
		tag := Tag{Seq: seq, Layer: uint8(i), Phase: PhaseUp}
		sg := sendGroup{t: c.t}
		for g := 0; g < d; g++ {
			if g == me {
				continue
			}
			buf := make([]byte, len(lm.inMaps[g])*es)
			Gather(vs.d, vs.o, buf, vin, lm.inMaps[g], vs.width)
			sg.send(t.Member(node, i, g), tag, buf)
		}
		prev := make([]byte, lm.inSplit[d]*es)
		Gather(vs.d, vs.o, prev[lm.inSplit[me]*es:lm.inSplit[me+1]*es], vin, lm.inMaps[me], vs.width)
		var rerr error
		for g := 0; g < d && rerr == nil; g++ {
			if g == me {
				continue
			}
			from := t.Member(node, i, g)
			b, err := c.t.Recv(from, tag)
			dst := prev[lm.inSplit[g]*es : lm.inSplit[g+1]*es]
			switch {
			case err != nil:
				rerr = err
			case len(b) != len(dst):
				rerr = Errorf(CodeInternal, "rank %d sent %d bytes of values up layer %d, want %d", from, len(b), i, len(dst))
			default:
				copy(dst, b)
				c.release(b)
			}
		}
		if err := sg.wait(); rerr == nil {
			rerr = err
		}
		if rerr != nil {
			return rerr
		}
		vin = prev
	}
	Gather(vs.d, vs.o, inVals, vin, p.inPos, vs.width)
	return nil
}
