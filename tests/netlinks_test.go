package tests

// Network-aware behaviour on a real shaped link: four ranks in two network namespaces (two
// "hosts" of two ranks) joined by a veth pair whose both ends a token bucket filter holds to
// 100 Mbit/s (tests/netns/shape.sh; this kernel has no netem). The job is tests/bench/kylix_net.c.
//
//   - The link measurement sees the shaped link, not the veth's memory speed.
//   - compress=auto compresses the index lists that cross the link (fewer bytes on the wire than
//     raw), compress=off sends them raw. Whether that makes config faster is a benchmark's
//     question, not a test's: tests/bench/run_net.sh measures it (the README's table, about
//     0.4 of off's time at 200 Mbit/s). The test asserts the bytes instead: the lists that
//     cross the link shrink, the one to the same host does not (a loaded machine moves the
//     times: at a load average of 18 the ratio rose from 0.4 to 0.74).
//   - Results are right either way (check=1: brute force).
//
// Needs root, ip and tc (iproute2, which make test installs with tests/netns/deps.sh) and
// network namespaces: skipped, saying which, without them. The namespaces are removed on every
// path; every job is bounded by job.sh's limit and by runBounded's.

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestShapedLinkCompressAuto(t *testing.T) {
	nsA, nsB, prog := shapedHosts(t, "kx-l")
	run := func(compress string, check bool) map[string]string {
		t.Helper()
		return runShaped(t, nsA, nsB, prog, check, "KYLIX_COMPRESS="+compress, "KYLIX_DEGREES=direct")
	}
	num := func(kv map[string]string, k string) float64 {
		v, err := strconv.ParseFloat(kv[k], 64)
		if err != nil {
			t.Fatalf("RESULT field %s=%q", k, kv[k])
		}
		return v
	}
	o := run("off", true)
	// A loaded machine can make the link probe misjudge the shaped link (CI read 55 and, between
	// the hosts alone, 235 MB/s once each), as in TestShapedLinkHostPlan: a job whose probe did
	// is run again, and the check is on the last of three.
	var a map[string]string
	for try := 1; ; try++ {
		a = run("auto", true)
		if mbps := num(a, "link_mbps"); mbps <= 50 || try == 3 {
			break
		}
		t.Logf("try %d: the link probe saw %s MB/s (between the hosts %s): again", try, a["link_mbps"], a["remote_mbps"])
	}
	if mbps := num(a, "link_mbps"); mbps > 50 {
		t.Errorf("the link measurement saw %.0f MB/s on a 100 Mbit/s (12.5 MB/s) link, three times", mbps)
	}
	if raw, wire := num(o, "index_raw"), num(o, "index_wire"); raw != wire {
		t.Errorf("compress=off: index bytes %g raw, %g on the wire", raw, wire)
	}
	// The peer on the same "host" stays uncompressed; the two across the link shrink. With
	// direct degrees each rank sends a third of its index bytes to each peer (the keys are
	// hashed), so auto's wire bytes are the raw third to the host's other rank plus the two
	// compressed thirds that cross the shaped link: what makes config faster there, asserted
	// as bytes, since times move with the machine's load.
	raw, wire := num(a, "index_raw"), num(a, "index_wire")
	if !(wire < 0.6*raw) {
		t.Errorf("compress=auto: index bytes %g raw, %g on the wire", raw, wire)
	}
	if local := raw / 3; !(wire > 0.95*local) {
		t.Errorf("compress=auto: %g bytes on the wire, less than the %g raw bytes to the rank on the same host: it compressed them", wire, local)
	} else if across := wire - local; !(across < 0.5*(raw-local)) {
		t.Errorf("compress=auto: about %g bytes crossed the shaped link where off sends %g: the lists across it did not shrink 2x", across, raw-local)
	}
	t.Logf("config on 100 Mbit/s, 4 ranks, n=1e6 density 0.2, direct: off %s ms, auto %s ms (times: tests/bench/run_net.sh); links measured %s MB/s between the hosts, %s MB/s all links",
		o["config_ms"], a["config_ms"], a["remote_mbps"], a["link_mbps"])
}

var resultRE = regexp.MustCompile(`(?m)^RESULT (.*)$`)

// needNetns skips a test that cannot have network namespaces here: not root, or a tool missing.
func needNetns(t *testing.T, tools ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found (iproute2: make test installs it with tests/netns/deps.sh)", tool)
		}
	}
}

// twoNamespaces makes nsA and nsB joined by veth (netns/up.sh: 10.201.0.1 and .2), undone at
// cleanup, or skips the test when namespaces cannot be made.
func twoNamespaces(t *testing.T, nsA, nsB, veth string) {
	t.Helper()
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
}

// shapedHosts makes two namespaces (names from prefix) joined by a veth that tbf holds to
// 100 Mbit/s both ways, and builds tests/bench/kylix_net.c; it skips the test without root, the
// tools or namespaces.
func shapedHosts(t *testing.T, prefix string) (nsA, nsB, prog string) {
	t.Helper()
	needNetns(t, "ip", "tc")
	dir := setup(t)
	root := repoRoot()
	prog = filepath.Join(dir, "bench-kylix_net")
	if out, err := runTool(root, 2*time.Minute, "gcc", "-O2", "-std=c11", "-Wall", "-Wno-unused-function",
		"-I"+filepath.Join(root, "include"), "-o", prog, filepath.Join(root, "tests", "bench", "kylix_net.c"),
		"-L"+dir, "-lkylix", "-Wl,-rpath,"+dir, "-lm"); err != nil {
		t.Fatalf("compiling kylix_net.c: %v\n%s", err, out)
	}
	id := strconv.Itoa(os.Getpid())
	nsA, nsB, veth := prefix+"a-"+id, prefix+"b-"+id, strings.ReplaceAll(prefix, "-", "")+id
	twoNamespaces(t, nsA, nsB, veth)
	for _, end := range [][2]string{{nsA, veth + "-a"}, {nsB, veth + "-b"}} {
		if out, err := runTool(".", 20*time.Second, "sh", netnsScript("shape.sh"), end[0], end[1], "100mbit"); err != nil {
			t.Skipf("cannot shape the veth with tbf (%v): %s", err, out)
		}
	}
	return nsA, nsB, prog
}

// runShaped runs kylix_net on 4 ranks across the two namespaces (job.sh: two hosts of two ranks)
// with the extra environment and returns its RESULT line's fields; with check, results must
// match the brute force.
func runShaped(t *testing.T, nsA, nsB, prog string, check bool, env ...string) map[string]string {
	t.Helper()
	args := []string{netnsScript("job.sh"), nsA, nsB, "4", "60", prog, "n=1e6", "density=0.2", "check=0"}
	if check {
		args[len(args)-1] = "check=1"
	}
	cmd := exec.Command("sh", args...)
	cmd.Env = append(os.Environ(), env...)
	r := runBounded(t, cmd, 90*time.Second)
	m := resultRE.FindStringSubmatch(r.Output)
	if r.Code != 0 || m == nil {
		t.Fatalf("%v: exit %d, no RESULT line:\n%s", env, r.Code, r.Output)
	}
	kv := map[string]string{}
	for _, f := range strings.Fields(m[1]) {
		k, v, _ := strings.Cut(f, "=")
		kv[k] = v
	}
	if check && kv["check"] != "OK" {
		t.Errorf("%v: results wrong: %s", env, m[0])
	}
	return kv
}
