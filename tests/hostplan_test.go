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
	"strconv"
	"testing"
)

// hostPlanTries bounds the degrees=auto jobs run until one's probe sees the host links clearly
// faster than the shaped one.
const hostPlanTries = 3

func TestShapedLinkHostPlan(t *testing.T) {
	nsA, nsB, prog := shapedHosts(t, "kx-h")
	// The grouping pays once the host links are clearly faster than the shaped one (8x: the
	// model's margin, kylix plan above). A loaded machine can make the probe's host links look
	// slow enough that one layer is priced as good, so a job whose probe saw less is run again;
	// the plan is checked on the first that saw the margin, and a test that never saw it says so
	// by skipping, never by passing.
	var auto map[string]string
	var local, remote float64
	for try := 1; ; try++ {
		auto = runShaped(t, nsA, nsB, prog, true, "KYLIX_DEGREES=auto", "KYLIX_COMPRESS=off")
		local, _ = strconv.ParseFloat(auto["local_mbps"], 64)
		remote, _ = strconv.ParseFloat(auto["remote_mbps"], 64)
		t.Logf("try %d measured: %s ranks per host, links within a host %.1f MB/s, between hosts %.1f MB/s, degrees %s",
			try, auto["ranks_per_host"], local, remote, auto["degrees"])
		if local > 8*remote || try == hostPlanTries {
			break
		}
	}
	if auto["ranks_per_host"] != "2" || !(remote > 0 && remote < 40) || !(local > 2*remote) {
		t.Errorf("the probe did not tell the hosts apart: ranks_per_host=%s, local %.1f MB/s, remote %.1f MB/s (the link is 12.5 MB/s)",
			auto["ranks_per_host"], local, remote)
	}
	if !(local > 8*remote) {
		t.Skipf("in %d jobs the probe never saw the host links 8x faster than the 12.5 MB/s link (last: %.1f against %.1f MB/s): the machine is too loaded to check the plan", hostPlanTries, local, remote)
	}
	if auto["degrees"] != "2x2" {
		t.Errorf("degrees=auto on two hosts of two ranks with host links %.0fx the network's: degrees=%s, want 2x2", local/remote, auto["degrees"])
	}
	direct := runShaped(t, nsA, nsB, prog, true, "KYLIX_DEGREES=direct", "KYLIX_COMPRESS=off")
	t.Logf("100 Mbit/s between two hosts of two ranks, n=1e6 density 0.2: auto (%s) config %s ms reduce %s ms; direct config %s ms reduce %s ms",
		auto["degrees"], auto["config_ms"], auto["reduce_ms"], direct["config_ms"], direct["reduce_ms"])
}
