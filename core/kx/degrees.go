package kx

import (
	"strconv"
	"strings"
)

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
	if err := CheckDegrees(ds, m); err != nil {
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

// CheckDegrees checks that degrees are positive and multiply to m (an empty list is only valid
// for m == 1).
func CheckDegrees(degrees []int, m int) error {
	p := 1
	for _, d := range degrees {
		if d < 1 {
			return Errorf(CodeArg, "degrees: %d is not a positive degree", d)
		}
		p = min(p*d, 1<<40) // the whole product, saturated (it is printed)
	}
	if p != m {
		prod := strconv.Itoa(p)
		if p == 1<<40 {
			prod = "more than 2^40"
		}
		return Errorf(CodeArg, "degrees: %s multiply to %s, not to the %d nodes", FormatDegrees(degrees), prod, m)
	}
	return nil
}
