package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

type counts struct{ passed, failed, skipped int }

func (c counts) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", c.passed, c.failed, c.skipped)
}

func (c counts) fields() string { return fmt.Sprintf("%d %d %d", c.passed, c.failed, c.skipped) }

func (c *counts) add(o counts) {
	c.passed += o.passed
	c.failed += o.failed
	c.skipped += o.skipped
}

// runTotal prints one line per suite and the sum of all of them last, as a plain
// `N passed, N failed, N skipped`. A suite is `name=pattern` (the files the pattern matches,
// e.g. Surefire's one report per class) or a file named after it. A suite that left no report
// counts as one failure: it did not pass.
func runTotal(suites []string, w io.Writer) int {
	var sum counts
	for _, s := range suites {
		name, pattern, ok := strings.Cut(s, "=")
		if !ok {
			pattern = s
			name = strings.TrimSuffix(filepath.Base(s), filepath.Ext(s))
		}
		c, err := suiteCounts(pattern)
		if err != nil {
			fmt.Fprintf(w, "%s: no report (%v): counted as 1 failed\n", name, err)
			c = counts{failed: 1}
		} else {
			fmt.Fprintf(w, "%s: %s\n", name, c)
		}
		sum.add(c)
	}
	fmt.Fprintf(w, "%s\n", sum)
	if sum.failed > 0 {
		return 1
	}
	return 0
}

func suiteCounts(pattern string) (counts, error) {
	files, err := filepath.Glob(pattern)
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("%s: no such file", pattern)
	}
	if err != nil {
		return counts{}, err
	}
	var sum counts
	for _, f := range files {
		c, err := readCounts(f)
		if err != nil {
			return counts{}, fmt.Errorf("%s: %v", f, err)
		}
		sum.add(c)
	}
	return sum, nil
}

func readCounts(f string) (counts, error) {
	b, err := os.ReadFile(f)
	if err != nil {
		return counts{}, err
	}
	if strings.HasSuffix(f, ".xml") {
		return junitCounts(b)
	}
	var c counts
	var name string
	if _, err := fmt.Sscanf(string(b), "%s %d %d %d", &name, &c.passed, &c.failed, &c.skipped); err != nil {
		return counts{}, fmt.Errorf("want 'suite passed failed skipped': %v", err)
	}
	return c, nil
}

// junitSuite is a <testsuite>, alone (Surefire) or inside <testsuites> (pytest).
type junitSuite struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Skipped  int `xml:"skipped,attr"`
}

func junitCounts(b []byte) (counts, error) {
	var root struct {
		XMLName xml.Name
		junitSuite
		Suites []junitSuite `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &root); err != nil {
		return counts{}, err
	}
	suites := root.Suites
	if root.XMLName.Local == "testsuite" {
		suites = []junitSuite{root.junitSuite}
	}
	if len(suites) == 0 {
		return counts{}, fmt.Errorf("no <testsuite> in it")
	}
	var c counts
	for _, s := range suites {
		bad := s.Failures + s.Errors
		c.add(counts{passed: s.Tests - bad - s.Skipped, failed: bad, skipped: s.Skipped})
	}
	return c, nil
}
