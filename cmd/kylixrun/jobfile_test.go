package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestJobFileWriteRead(t *testing.T) {
	// A permissive umask must not make the secret readable by others.
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "job.json")
	if err := os.WriteFile(path, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := jobFile{Join: "127.0.0.1:4567", Secret: strings.Repeat("ab", 32)}
	wrote, err := writeJobFile(path, want)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("job file mode %v, %v; want 0600", st.Mode(), err)
	}
	var raw map[string]string
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &raw); err != nil || len(raw) != 2 || raw["join"] != want.Join || raw["secret"] != want.Secret {
		t.Errorf("job file holds %s, %v", b, err)
	}
	if got, err := readJobFile(path); err != nil || got != want {
		t.Errorf("readJobFile = %+v, %v", got, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) > 0 {
		t.Errorf("temporary files left: %v", m)
	}

	// Removed only while it is still this job's file.
	if err := os.WriteFile(path, []byte("another job\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	removeJobFile(path, wrote)
	if _, err := os.Stat(path); err != nil {
		t.Errorf("another job's file was removed: %v", err)
	}
	if wrote, err = writeJobFile(path, want); err != nil {
		t.Fatal(err)
	}
	removeJobFile(path, wrote)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("job file still there: %v", err)
	}
}

func TestReadJobFileErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ body, err string }{
		{"", "not a kylixrun job file"},
		{`{"join": "nohostport", "secret": "s"}`, "not host:port"},
		{`{"join": "h:1"}`, `no "secret"`},
	} {
		path := filepath.Join(dir, "j")
		if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readJobFile(path); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("readJobFile(%q) = %v, want %q", tc.body, err, tc.err)
		}
	}
	if _, err := readJobFile(filepath.Join(dir, "none")); err == nil || !strings.Contains(err.Error(), "--elastic --job-file") {
		t.Errorf("missing file: %v", err)
	}
}
