package timeline

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Run is `kylix timeline DIR`: merge into DIR/timeline.json, draw DIR/timeline.svg, print the
// summary to w. It returns the paths written.
func Run(dir string, w io.Writer) (jsonPath, svgPath string, err error) {
	ranks, jsonPath, err := Merge(dir)
	if err != nil {
		return "", "", err
	}
	svgPath = filepath.Join(dir, "timeline.svg")
	f, err := os.Create(svgPath)
	if err != nil {
		return "", "", err
	}
	if err := WriteSVG(f, ranks, fmt.Sprintf("Kylix timeline: %d ranks", len(ranks))); err != nil {
		f.Close()
		return "", "", err
	}
	if err := f.Close(); err != nil {
		return "", "", err
	}
	Summarize(ranks).WriteSummary(w)
	return jsonPath, svgPath, nil
}
