"""examples/pagerank.py on 4 ranks under kylixrun against an independent single-process
PageRank (scipy.sparse, its own parser), every score within 1e-6 relative."""

import gzip
import io
import re

import numpy as np
import scipy.sparse as sp

from conftest import PYROOT, REPO

GRAPH = REPO / "examples" / "data" / "powerlaw_graph.el.gz"
EXAMPLE = PYROOT / "examples" / "pagerank.py"
# examples/data/README.md: the reference top 10 of pagerankref
TOP10 = [118694, 87836, 40089, 35911, 110518, 3225, 24571, 43309, 3170, 11594]


def reference_pagerank(path, iters=20, d=0.85):
    raw = gzip.open(path, "rb").read().decode()
    m = re.search(r"\sn=(\d+)", raw.split("\n", 1)[0])
    body = "\n".join(line for line in raw.split("\n") if line and not line.startswith("#"))
    e = np.loadtxt(io.StringIO(body), dtype=np.int64, ndmin=2)
    src, dst = e[:, 0], e[:, 1]
    n = max(int(m.group(1)) if m else 0, int(e.max()) + 1)
    outdeg = np.bincount(src, minlength=n)
    X = sp.csr_matrix((1.0 / outdeg[src], (dst, src)), shape=(n, n))
    dangling = outdeg == 0
    v = np.full(n, 1.0 / n)
    for _ in range(iters):
        v = (1 - d) / n + d * (X @ v + v[dangling].sum() / n)
    return v


def test_pagerank_example(job, tmp_path):
    out = tmp_path / "scores.txt"
    r = job(4, str(EXAMPLE), str(GRAPH), "--out", str(out))
    assert r.code == 0, r.dump()
    got = np.loadtxt(out, comments="#")
    ref = reference_pagerank(GRAPH)
    assert got.shape == (ref.size, 2), r.dump()
    assert np.array_equal(got[:, 0], np.arange(ref.size))
    scores = got[:, 1]
    rel = np.abs(scores - ref) / ref
    worst = int(np.argmax(rel))
    assert rel.max() <= 1e-6, f"vertex {worst}: {scores[worst]} vs {ref[worst]} (rel {rel.max():.2e})"
    assert abs(scores.sum() - 1) < 1e-9
    assert f"top10: {' '.join(map(str, TOP10))}" in r.output, r.dump()
    top = list(np.lexsort((np.arange(ref.size), -ref))[:10])
    assert top == TOP10
    print(f"max relative difference to scipy: {rel.max():.2e}")
