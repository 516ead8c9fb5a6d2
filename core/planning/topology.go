package planning

import "kylix/core/kx"

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
	if err := kx.CheckDegrees(degrees, m); err != nil {
		return Topology{}, err
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
