package tests

// Host-aware plans on a real shaped link: four ranks in two network namespaces (two "hosts" of
// two ranks, shared memory within each) joined by a veth pair held to 100 Mbit/s by tbf
// (tests/netns/shape.sh). degrees=auto measures the links, tells the pairs within a host from
// those between hosts (core/planning/links_hosts.go) and prices them apart: it groups each
// host's ranks in the first layer (2x2), so the shaped link carries each index once per host,
// where pricing every link alike picks one direct layer. `kylix plan --ranks 4
// --ranks-per-host 2 --link 200us,100mbit --local-link 30us,2GB/s` predicts the same choice.
// Results are checked against the brute force; times are logged, not asserted (the machine is
// shared; tests/bench/run_net.sh measures).

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestShapedLinkHostPlan(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces and tc")
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found (iproute2: make test installs it with tests/netns/deps.sh)", tool)
		}
	}
	dir := setup(t)
	root := repoRoot()
	prog := filepath.Join(dir, "bench-kylix_net")
	if out, err := runTool(root, 2*time.Minute, "gcc", "-O2", "-std=c11", "-Wall", "-Wno-unused-function",
		"-I"+filepath.Join(root, "include"), "-o", prog, filepath.Join(root, "tests", "bench", "kylix_net.c"),
		"-L"+dir, "-lkylix", "-Wl,-rpath,"+dir, "-lm"); err != nil {
		t.Fatalf("compiling kylix_net.c: %v\n%s", err, out)
	}
	id := strconv.Itoa(os.Getpid())
	nsA, nsB, veth := "kx-ha-"+id, "kx-hb-"+id, "kxh"+id
	if out, err := runTool(".", 20*time.Second, "ip", "netns", "add", nsA); err != nil {
		t.Skipf("cannot create a network namespace (ip netns add: %v): %s", err, out)
	}
	runTool(".", 20*time.Second, "ip", "netns", "del", nsA)
	t.Cleanup(func() {
		if out, err := runTool(".", 30*time.Second, "sh", netnsScript("down.sh"), nsA, nsB); err != nil {
			t.Errorf("down.sh: %v\n%s", err, out)
		}
	})
	if out, err := runTool(".", 30*time.Second, "sh", netnsScript("up.sh"), nsA, nsB, veth); err != nil {
		t.Fatalf("up.sh: %v\n%s", err, out)
	}
	for _, end := range [][2]string{{nsA, veth + "-a"}, {nsB, veth + "-b"}} {
		if out, err := runTool(".", 20*time.Second, "sh", netnsScript("shape.sh"), end[0], end[1], "100mbit"); err != nil {
			t.Skipf("cannot shape the veth with tbf (%v): %s", err, out)
		}
	}
	run := func(degrees string) map[string]string {
		t.Helper()
		cmd := exec.Command("sh", netnsScript("job.sh"), nsA, nsB, "4", "60", prog, "n=1e6", "density=0.2", "check=1")
		cmd.Env = append(os.Environ(), "KYLIX_DEGREES="+degrees, "KYLIX_COMPRESS=off")
		r := runBounded(t, cmd, 90*time.Second)
		m := resultRE.FindStringSubmatch(r.Output)
		if r.Code != 0 || m == nil {
			t.Fatalf("degrees=%s: exit %d, no RESULT line:\n%s", degrees, r.Code, r.Output)
		}
		kv := map[string]string{}
		for _, f := range strings.Fields(m[1]) {
			k, v, _ := strings.Cut(f, "=")
			kv[k] = v
		}
		if kv["check"] != "OK" {
			t.Errorf("degrees=%s: results wrong: %s", degrees, m[0])
		}
		return kv
	}
	auto := run("auto")
	if auto["ranks_per_host"] != "2" || auto["degrees"] != "2x2" {
		t.Errorf("degrees=auto on two hosts of two ranks: ranks_per_host=%s degrees=%s, want 2 and 2x2",
			auto["ranks_per_host"], auto["degrees"])
	}
	direct := run("direct")
	t.Logf("100 Mbit/s between two hosts of two ranks, n=1e6 density 0.2: auto (%s) config %s ms reduce %s ms; direct config %s ms reduce %s ms",
		auto["degrees"], auto["config_ms"], auto["reduce_ms"], direct["config_ms"], direct["reduce_ms"])
}
