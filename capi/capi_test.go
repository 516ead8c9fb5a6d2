package main

// The C ABI is tested from C: `import "C"` is not allowed in _test.go files, and only a C
// program sees what a host sees (the public prototypes, the exported symbols, fork()).
// testdata/smoke.c is compiled with gcc against libkylix.so: $KYLIX_BUILD/libkylix.so when
// KYLIX_BUILD is set (make test), else a library built here into a temporary directory.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	libOnce sync.Once
	libPath string
	libErr  error
	tmpDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if tmpDir != "" {
		os.RemoveAll(tmpDir)
	}
	os.Exit(code)
}

// library returns the path of libkylix.so to test, building it once when KYLIX_BUILD is unset.
func library(t *testing.T) string {
	t.Helper()
	libOnce.Do(func() {
		if b := os.Getenv("KYLIX_BUILD"); b != "" {
			libPath = filepath.Join(b, "libkylix.so")
			if _, err := os.Stat(libPath); err != nil {
				libErr = fmt.Errorf("KYLIX_BUILD=%s: %v (run make first)", b, err)
			}
			return
		}
		tmpDir, libErr = os.MkdirTemp("", "kylix-capi-test-")
		if libErr != nil {
			return
		}
		libPath = filepath.Join(tmpDir, "libkylix.so")
		mapFile, _ := filepath.Abs("kylix.map")
		cmd := exec.Command("go", "build", "-buildmode=c-shared",
			"-ldflags", `-extldflags "-Wl,--version-script=`+mapFile+` -Wl,-soname,libkylix.so"`, "-o", libPath, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			libErr = fmt.Errorf("building libkylix.so: %v\n%s", err, out)
		}
	})
	if libErr != nil {
		t.Fatal(libErr)
	}
	return libPath
}

// compileSmoke builds testdata/smoke.c against the library under test.
func compileSmoke(t *testing.T) string {
	t.Helper()
	lib := library(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not found")
	}
	exe := filepath.Join(t.TempDir(), "smoke")
	dir := filepath.Dir(lib)
	cmd := exec.Command("gcc", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-std=gnu11", "-I../include",
		"-o", exe, "testdata/smoke.c", "-L"+dir, "-lkylix", "-Wl,-rpath,"+dir, "-lm")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compiling smoke.c: %v\n%s", err, out)
	}
	return exe
}

// cleanEnv drops the variables a launcher sets, so the test's rank=0;size=1 is all there is.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if (strings.HasPrefix(k, "KYLIX_") && k != "KYLIX_BUILD") || strings.HasPrefix(k, "OMPI_COMM_WORLD_") ||
			strings.HasPrefix(k, "PMI_") || strings.HasPrefix(k, "SLURM_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func runSmoke(t *testing.T, exe, mode string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, mode)
	cmd.Env = cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("smoke %s hung (killed after 2 minutes)\nstdout:\n%s\nstderr:\n%s", mode, &stdout, &stderr)
	}
	if err != nil || !strings.Contains(stdout.String(), "PASS") {
		t.Fatalf("smoke %s: %v\nstdout:\n%s\nstderr:\n%s", mode, err, &stdout, &stderr)
	}
}

func TestSmokeC(t *testing.T) {
	exe := compileSmoke(t)
	t.Run("basic", func(t *testing.T) { runSmoke(t, exe, "basic") })
	t.Run("fork", func(t *testing.T) { runSmoke(t, exe, "fork") })
}

// TestExportedSymbols checks the dynamic symbol table: exactly the functions of the header,
// nothing of the Go runtime or of cgo.
func TestExportedSymbols(t *testing.T) {
	lib := library(t)
	if _, err := exec.LookPath("nm"); err != nil {
		t.Skip("nm not found")
	}
	out, err := exec.Command("nm", "-D", "--defined-only", lib).Output()
	if err != nil {
		t.Fatalf("nm -D: %v", err)
	}
	var have []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		name, _, _ := strings.Cut(f[len(f)-1], "@")
		have = append(have, name)
	}
	sort.Strings(have)

	hdr, err := os.ReadFile("../include/kylix.h")
	if err != nil {
		t.Fatal(err)
	}
	// Every prototype of the header: a declaration at the start of a line, of any return type,
	// whose name starts with kylix_ (macros and comments do not match).
	re := regexp.MustCompile(`(?m)^[A-Za-z_][A-Za-z0-9_ ]*[ *](kylix_[a-z0-9_]+)\s*\(`)
	var want []string
	for _, m := range re.FindAllStringSubmatch(string(hdr), -1) {
		want = append(want, m[1])
	}
	sort.Strings(want)
	if len(want) == 0 {
		t.Fatal("found no prototypes in include/kylix.h")
	}
	if strings.Join(have, " ") != strings.Join(want, " ") {
		t.Errorf("exported symbols differ from the header\nlibrary: %v\nheader:  %v", have, want)
	}
}
