package core

import (
	"strconv"
	"strings"
)

// Topology is a nested butterfly over m nodes with degrees d1×…×dl (product m). A node's
// position is a mixed-radix number: digit i (0-based layer) has radix Degrees[i] and place value
// Stride[i]. In layer i a node talks to the Degrees[i] nodes that differ from it only in digit i.
type Topology struct {
	Degrees []int
	Stride  []int
	Nodes   int
}

// NewTopology checks that degrees multiply to m (an empty list is only valid for m == 1).
func NewTopology(degrees []int, m int) (Topology, error) {
	p := 1
	for _, d := range degrees {
		if d < 1 {
			return Topology{}, Errorf(CodeArg, "degrees: %d is not a positive degree", d)
		}
		p = min(p*d, 1<<40) // the whole product, saturated (it is printed)
	}
	if p != m {
		prod := strconv.Itoa(p)
		if p == 1<<40 {
			prod = "more than 2^40"
		}
		return Topology{}, Errorf(CodeArg, "degrees: %s multiply to %s, not to the %d nodes", FormatDegrees(degrees), prod, m)
	}
	t := Topology{Nodes: m}
	stride := 1
	for _, d := range degrees {
		if d == 1 {
			continue // a degree-1 layer moves nothing
		}
		t.Degrees = append(t.Degrees, d)
		t.Stride = append(t.Stride, stride)
		stride *= d
	}
	return t, nil
}

// Layers is the number of communication layers.
func (t Topology) Layers() int { return len(t.Degrees) }

// Digit is node's coordinate in layer i.
func (t Topology) Digit(node, i int) int { return node / t.Stride[i] % t.Degrees[i] }

// Member is the node of node's layer-i group whose digit i is g.
func (t Topology) Member(node, i, g int) int {
	return node + (g-t.Digit(node, i))*t.Stride[i]
}

// ParseDegreesSpec turns the degrees option into a list for m nodes: nil for "auto" (chosen
// per plan from the data), one layer of m for "direct", factors of two then the odd rest for
// "binary", or an explicit "8x4x2".
func ParseDegreesSpec(spec string, m int) ([]int, error) {
	spec = strings.ToLower(strings.TrimSpace(spec))
	switch spec {
	case "", "auto":
		return nil, nil
	case "direct":
		return []int{m}, nil
	case "binary":
		var ds []int
		r := m
		for r%2 == 0 && r > 1 {
			ds = append(ds, 2)
			r /= 2
		}
		if r > 1 {
			ds = append(ds, r)
		}
		if len(ds) == 0 {
			ds = []int{1}
		}
		return ds, nil
	}
	var ds []int
	for _, f := range strings.Split(spec, "x") {
		d, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || d < 1 {
			return nil, Errorf(CodeArg, "degrees: %q is not auto, direct, binary or a list like 8x4x2", spec)
		}
		ds = append(ds, d)
	}
	if _, err := NewTopology(ds, m); err != nil {
		return nil, err
	}
	return ds, nil
}

// FormatDegrees writes degrees as "8x4x2".
func FormatDegrees(ds []int) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = strconv.Itoa(d)
	}
	return strings.Join(s, "x")
}
