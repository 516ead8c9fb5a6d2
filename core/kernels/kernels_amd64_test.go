//go:build amd64 && !noasm

package kernels

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestKernelDispatch checks, independently of the cpuid package, that start-up picked the best
// level /proc/cpuinfo advertises (Linux lists AVX/AVX-512 flags only when the OS saves their
// state), and that KYLIX_NOSIMD caps it.
func TestKernelDispatch(t *testing.T) {
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip("no /proc/cpuinfo")
	}
	var flags []string
	for _, line := range strings.Split(string(info), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			flags = strings.Fields(v)
			break
		}
	}
	has := func(fs ...string) bool {
		for _, f := range fs {
			if !slices.Contains(flags, f) {
				return false
			}
		}
		return true
	}
	want := kernLevelGo
	if has("avx", "avx2") {
		want = kernLevelAVX2
		if has("avx512f", "avx512dq") {
			want = kernLevelAVX512
		}
	}
	if got := kernCPULevels[len(kernCPULevels)-1]; got != want {
		t.Errorf("best level %q, /proc/cpuinfo says %q", got, want)
	}
	if os.Getenv("KYLIX_NOSIMD") == "" {
		if got := Level(); got != want {
			t.Errorf("start-up level %q, want %q", got, want)
		}
	}
	capped := map[string]string{"": want, "0": want, "1": kernLevelGo, "all": kernLevelGo,
		"avx512": want}
	if want == kernLevelAVX512 {
		capped["avx512"] = kernLevelAVX2
	}
	for env, w := range capped {
		if got := kernDefaultLevel(env); got != w {
			t.Errorf("KYLIX_NOSIMD=%q: level %q, want %q", env, got, w)
		}
	}
	// The environment variable itself, read at start-up of a fresh process.
	for env, w := range map[string]string{"1": kernLevelGo, "avx512": capped["avx512"]} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKernelLevelHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), "KYLIX_NOSIMD="+env, "KYLIX_KERNEL_LEVEL_HELPER=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "level="+w+"\n") {
			t.Errorf("KYLIX_NOSIMD=%s in a child: want level=%s, got %v\n%s", env, w, err, out)
		}
	}
}

// TestKernelLevelHelper runs only as TestKernelDispatch's child process, to report the level
// chosen under that child's KYLIX_NOSIMD; run directly it skips.
func TestKernelLevelHelper(t *testing.T) {
	if os.Getenv("KYLIX_KERNEL_LEVEL_HELPER") == "" {
		t.Skip("helper for TestKernelDispatch")
	}
	os.Stdout.WriteString("level=" + Level() + "\n")
}
