"""Run under kylixrun: kylix.init(), then the kyjob calls, each rank checked against the
single-process answer (kyjob.expected). Prints "rank r: PASS ..." or FAIL lines."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kyjob  # noqa: E402

import kylix  # noqa: E402

with kylix.init(timeout_ms=60000) as comm:
    got = kyjob.run(comm)
want = kyjob.expected(got["rank"], got["size"])
bad = [k for k in ("size", "reduce", "reduce2", "allreduce") if got[k] != want[k]]
for k in bad:
    print(f"rank {got['rank']}: FAIL {k} differs from the single-process answer")
print(f"rank {got['rank']}: {'FAIL' if bad else 'PASS'} of {got['size']}, library {kylix.library_path}",
      flush=True)
sys.exit(1 if bad else 0)
