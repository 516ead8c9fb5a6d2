"""Replication through the Python binding (include/kylix.h, replication; "Kylix: A Sparse
Allreduce for Commodity Clusters", §V): a job of 4 ranks as 2 nodes x 2 replicas under
`kylixrun --replication 2` loses replicas to SIGKILL in the middle of a call and goes on; every
survivor checks every result against a brute force over the node data (worker_replicated.py),
and the launcher reports each death. kylixrun's exit status is asserted too, but it is 0 even
when a replica exits non-zero, so every survivor's DONE line is what proves success."""

import pytest

ITERS = 4


@pytest.mark.parametrize("events", [
    ["3:reduce:1"],                  # the brief's case: one replica dies mid-reduce
    ["3:reduce:1", "0:dense:2"],     # one replica of each node, rank 0 included, dense too
], ids=["one_mid_reduce", "one_per_node"])
def test_killed_replica(job, events):
    dead = sorted(int(e.split(":")[0]) for e in events)
    live = [r for r in range(4) if r not in dead]
    r = job(4, "worker_replicated.py", ITERS, *events, replication=2)
    r.expect_clean(live)
    problems = []
    for rk in live:
        for it in range(ITERS):
            for call in ("reduce", "allreduce", "config_reduce"):
                if f"{call} of iteration {it}" not in r.find(rk, "PASS"):
                    problems.append(f"rank {rk}: no PASS for {call} of iteration {it}")
    for d in dead:
        if not any(t.startswith("victim: dies") for t in r.find(d, "INFO")):
            problems.append(f"rank {d} never armed its SIGKILL")
        if r.find(d, "DONE"):
            problems.append(f"rank {d} was meant to die but finished")
        if f"kylixrun: rank {d} " not in r.output or "the job goes on" not in r.output:
            problems.append(f"kylixrun did not report rank {d} dead and go on")
    if problems:
        pytest.fail("\n".join(problems) + "\n" + r.dump(), pytrace=False)
