"""examples/elastic_logreg.py (seed 004's batch gradient descent with elastic membership) in
both modes, each checked iteration by iteration by the example's own --check reference given
the membership log the job wrote."""

import re
import sys

import pytest

import kylix
from conftest import HARD_DEADLINE_S, JOB_TIMEOUT_S, PYROOT, _env, run_cmd, run_with_join

EXAMPLE = str(PYROOT / "examples" / "elastic_logreg.py")


def _check(tmp_path, log):
    r = run_cmd([sys.executable, EXAMPLE, "--check", str(log)], _env(), tmp_path, HARD_DEADLINE_S)
    assert r.code == 0 and "check: ok: 20 iterations" in r.output, r.dump()
    return [line for line in log.read_text().split("\n") if line.startswith("M ")]


@pytest.fixture(autouse=True)
def _needs_resize():
    if not hasattr(kylix._raw.lib, "kylix_resize"):
        pytest.skip(f"{kylix.library_path} has no kylix_resize")


def test_failure_ignorance(kylixrun, tmp_path):
    """Rank 1 of 3 dies at iteration 5, the others go on; kylixrun relaunches it and the job
    waits for it at iteration 12."""
    log = tmp_path / "m.log"
    r = run_cmd([str(kylixrun), "-n", "3", "--elastic", "--restarts", "1", "--timeout", "100",
                 "--job-timeout", str(JOB_TIMEOUT_S), "--", sys.executable, EXAMPLE, "--iters", "20",
                 "--resize-every", "0", "--die-at", "5:1", "--ramp", "12:3", "--log", str(log)],
                _env(), tmp_path, HARD_DEADLINE_S)
    assert r.code == 0, r.dump()
    # The relaunched rank usually joins at 12; when it reaches the join port before the
    # survivors' resize after the death, that resize admits it at once.
    assert _check(tmp_path, log) in (["M 0 3 0 1 2", "M 5 2 0 2", "M 12 3 0 1 -1"],
                                     ["M 0 3 0 1 2", "M 5 3 0 2 -1", "M 12 3 0 1 2"])
    assert re.search(r"rejoined and finished: joiner j0 \(pid \d+, relaunch of rank 1\)", r.output), r.dump()


def test_ramp_up(kylixrun, tmp_path):
    """2 ranks start; at iteration 5 the job waits for 4, which a kylixrun --join brings."""
    log, jf = tmp_path / "m.log", tmp_path / "job.json"
    prog = ["--", sys.executable, EXAMPLE, "--iters", "20", "--resize-every", "0", "--ramp", "5:4"]
    job = [str(kylixrun), "-n", "2", "--elastic", "--job-file", str(jf), "--timeout", "100",
           "--job-timeout", str(JOB_TIMEOUT_S), *prog, "--log", str(log)]
    join = [str(kylixrun), "--join", str(jf), "-n", "2", "--timeout", "100", *prog]
    r, jr = run_with_join(job, join, jf, tmp_path)
    assert r.code == 0, r.dump()
    assert jr.code == 0, jr.dump()
    assert _check(tmp_path, log) == ["M 0 2 0 1", "M 5 4 0 1 -1 -1"]
