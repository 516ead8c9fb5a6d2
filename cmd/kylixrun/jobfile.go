package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// jobFile is what --job-file writes and --join reads: where an elastic job takes joiners, and
// the secret they prove; and where a kylixrun --join follows the job's resizes for its tags
// (tagfeed.go; absent in the job files of older launchers).
type jobFile struct {
	Join   string `json:"join"`
	Secret string `json:"secret"`
	Tags   string `json:"tags,omitempty"`
}

// writeJobFile writes jf to path with mode 0600. The file is written under a temporary name in
// the same directory and renamed into place, so a reader never sees half of it and the
// secret is never readable by others, not even for a moment. It returns the bytes written, for
// removeJobFile.
func writeJobFile(path string, jf jobFile) ([]byte, error) {
	b, err := json.Marshal(jf)
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	// CreateTemp makes the file 0600 already; Chmod says so whatever the umask did.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	return b, nil
}

// removeJobFile removes path if it still holds what this launcher wrote: a later job that
// reused the name keeps its file.
func removeJobFile(path string, wrote []byte) {
	if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, wrote) {
		_ = os.Remove(path)
	}
}

// readJobFile reads and checks the job file that kylixrun --join was given.
func readJobFile(path string) (jobFile, error) {
	var jf jobFile
	b, err := os.ReadFile(path)
	if err != nil {
		return jf, fmt.Errorf("--join: %v (is the job running with --elastic --job-file %s?)", err, path)
	}
	if err := json.Unmarshal(b, &jf); err != nil {
		return jf, fmt.Errorf("--join %s: not a kylixrun job file: %v", path, err)
	}
	if _, _, err := net.SplitHostPort(jf.Join); err != nil {
		return jf, fmt.Errorf("--join %s: \"join\" is %q, not host:port", path, jf.Join)
	}
	if jf.Secret == "" {
		return jf, fmt.Errorf("--join %s: no \"secret\"", path)
	}
	return jf, nil
}
