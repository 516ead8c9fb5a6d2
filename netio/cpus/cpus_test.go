package cpus

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseCPUMax(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"max 100000", 0, false},
		{"max 100000\n", 0, false},
		{"max", 0, false},
		{"150000 100000", 2, true},
		{"150000 100000\n", 2, true},
		{"100000 100000", 1, true},
		{"200000 100000", 2, true},
		{"50000 100000", 1, true},
		{"1000 100000", 1, true},
		{"400000 50000", 8, true},
		{"250000", 3, true}, // period defaults to 100000
		{"", 0, false},
		{"junk 100000", 0, false},
		{"100000 junk", 0, false},
		{"0 100000", 0, false},
	} {
		got, ok := ParseCPUMax(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseCPUMax(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestQuotaCPUs(t *testing.T) {
	if _, ok := quotaCPUs(-1, 100000); ok {
		t.Error("v1 quota -1 read as a limit")
	}
	if n, ok := quotaCPUs(150000, 100000); n != 2 || !ok {
		t.Errorf("1.5 CPUs: %d %v", n, ok)
	}
}

func write(t *testing.T, root, path, s string) {
	t.Helper()
	p := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A fake /proc and /sys per layout: the limit is the smallest on the path to the root.
func TestCgroupLimitV2(t *testing.T) {
	root := t.TempDir()
	write(t, root, "proc/self/cgroup", "0::/job/rank3\n")
	write(t, root, "proc/self/mountinfo",
		"25 1 0:23 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n")
	write(t, root, "sys/fs/cgroup/cpu.max", "max 100000\n")
	write(t, root, "sys/fs/cgroup/job/cpu.max", "150000 100000\n")
	write(t, root, "sys/fs/cgroup/job/rank3/cpu.max", "max 100000\n")
	if n, ok := cgroupLimit(root); n != 2 || !ok {
		t.Fatalf("limit %d %v, want 2 from the parent", n, ok)
	}
	if n := usable(root); n > 2 || n < 1 {
		t.Fatalf("usable %d, want at most 2", n)
	}
	write(t, root, "sys/fs/cgroup/job/cpu.max", "max 100000\n")
	if _, ok := cgroupLimit(root); ok {
		t.Fatal("limit found where every level says max")
	}
}

// Inside a cgroup namespace the mount's root is the process's own cgroup.
func TestCgroupLimitV2Namespace(t *testing.T) {
	root := t.TempDir()
	write(t, root, "proc/self/cgroup", "0::/\n")
	write(t, root, "proc/self/mountinfo",
		"25 1 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
	write(t, root, "sys/fs/cgroup/cpu.max", "50000 100000\n")
	if n, ok := cgroupLimit(root); n != 1 || !ok {
		t.Fatalf("limit %d %v, want 1", n, ok)
	}
}

func TestCgroupLimitV1(t *testing.T) {
	root := t.TempDir()
	write(t, root, "proc/self/cgroup", "12:memory:/x\n4:cpu,cpuacct:/docker/abc\n0::/\n")
	write(t, root, "proc/self/mountinfo",
		"31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"+
			"32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"+
			"33 31 0:30 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n")
	write(t, root, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n")
	write(t, root, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n")
	write(t, root, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "300000\n")
	write(t, root, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n")
	if n, ok := cgroupLimit(root); n != 3 || !ok {
		t.Fatalf("limit %d %v, want 3", n, ok)
	}
}

func TestCgroupMissing(t *testing.T) {
	if _, ok := cgroupLimit(t.TempDir()); ok {
		t.Fatal("limit found without /proc")
	}
}

// On the machine itself: a sane count, no more than the affinity mask allows.
func TestUsableHere(t *testing.T) {
	n := Usable()
	if n < 1 || n > affinity() {
		t.Fatalf("Usable() = %d with %d CPUs in the affinity mask", n, affinity())
	}
	if !SpinAllowed(1) || SpinAllowed(n+1) {
		t.Fatalf("SpinAllowed wrong around %d usable CPUs", n)
	}
	t.Logf("usable CPUs: %d (affinity %d)", n, affinity())
}
