"""Multi-process jobs under kylixrun over loopback TCP; each rank runs a worker script that
checks its own results against numpy references (see _kyutil.py)."""

import pytest


@pytest.mark.parametrize("n,degrees,seed", [
    (3, None, 1),            # degrees=auto
    (4, "2x2", 0),           # two layers; an empty out set and an empty in set (seed 0)
    (2, "binary", 3),
    (5, "direct", 10),       # an empty in set on rank 0 (seed 10)
])
def test_sparse(job, n, degrees, seed):
    job(n, "worker_sparse.py", seed, degrees=degrees).expect_clean(range(n))


@pytest.mark.parametrize("n,degrees", [(3, None), (4, "2x2")])
def test_dense(job, n, degrees):
    job(n, "worker_dense.py", 2, degrees=degrees).expect_clean(range(n))


@pytest.mark.parametrize("n", [2, 3])
def test_errors(job, n):
    job(n, "worker_errors.py").expect_clean(range(n))


@pytest.mark.parametrize("n,degrees", [(2, None), (4, "2x2")])
def test_nonblocking(job, n, degrees):
    job(n, "worker_nonblocking.py", 4, degrees=degrees).expect_clean(range(n))


@pytest.mark.parametrize("n,degrees", [(3, None), (4, "2x2")])
def test_user_op(job, n, degrees):
    job(n, "worker_userop.py", 5, degrees=degrees).expect_clean(range(n))


def test_rsum_same_bits_across_job_sizes(job):
    """op="rsum": jobs of 1, 2 and 3 ranks deal one multiset differently and print the same
    digests (each worker also checks its results against math.fsum)."""
    digests = []
    for n in (3, 2, 1):
        r = job(n, "worker_rsum.py", 7)
        r.expect_clean(range(n))
        def dig(k):
            return sorted(t for t in r.find(k, "INFO") if t.startswith("digest "))
        d = dig(0)
        assert len(d) == 2 and all(dig(k) == d for k in range(n)), r.dump()
        digests.append(d)
    assert digests[0] == digests[1] == digests[2], digests


def _free_ports(k):
    """k distinct loopback addresses for a static peers table, each picked as the engines pick
    a rank's port (below the kernel's ephemeral range, checked free: a port-0 pick races)."""
    from kylix._engines import _free_port
    ports = []
    while len(ports) < k:
        p = _free_port("127.0.0.1")
        if p not in ports:
            ports.append(p)
    return ",".join(f"127.0.0.1:{p}" for p in ports)


@pytest.mark.parametrize("how", ["rendezvous", "static-peers", "control"])
def test_wrong_secret(job, how):
    args = ["-1" if how == "control" else "1", "3000"]
    if how == "static-peers":
        args.append(_free_ports(3))
    r = job(3, "worker_auth.py", *args, keep_going=True)
    r.expect_clean(range(3))
    if how != "control":
        assert any("AuthError" in t for t in r.find(1, "PASS")), r.dump()


@pytest.mark.parametrize("victim", [0, 2])
def test_dead_peer_and_shrink(job, victim):
    """A rank dies: PeerError on the others, failed_ranks() lists it, shrink() regroups them."""
    r = job(4, "worker_kill.py", victim, 5000, keep_going=True)
    r.expect_clean(range(4))


def test_fork_guard(python_script):
    """multiprocessing 'fork' child: StateError naming spawn/forkserver; spawn/forkserver work."""
    python_script("worker_fork.py", deadline=120).expect_clean([0])
