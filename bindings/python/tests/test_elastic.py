"""Elastic membership (kylix_resize) with a real joiner: a job under `kylixrun --elastic
--job-file F` and a second `kylixrun --join F` from "another shell" (worker_elastic.py)."""

import sys

import pytest

import kylix
from conftest import JOB_TIMEOUT_S, TESTS, run_with_join


def _needs_resize():
    if not hasattr(kylix._raw.lib, "kylix_resize"):
        pytest.skip(f"{kylix.library_path} has no kylix_resize: the library side of elastic "
                    "membership is not built into it")


@pytest.mark.parametrize("members,joiners", [(2, 1), (2, 2)])
def test_resize_with_joiner(kylixrun, tmp_path, members, joiners):
    _needs_resize()
    jf = tmp_path / "job.json"
    worker = [sys.executable, str(TESTS / "worker_elastic.py"), str(members), str(joiners)]
    common = ["--tag-output", "--timeout", "60", "--job-timeout", str(JOB_TIMEOUT_S)]
    job = [str(kylixrun), "-n", str(members), "--elastic", "--job-file", str(jf), *common, "--", *worker]
    join = [str(kylixrun), "--join", str(jf), "-n", str(joiners), *common[:1], "--", *worker]
    r, jr = run_with_join(job, join, jf, tmp_path)
    jr.expect_clean(range(members, members + joiners))
    r.expect_clean(range(members))
    assert not jf.exists(), "the job file outlived the job"


def test_one_rank_membership():
    with kylix.init(rank=0, size=1) as c:
        with pytest.raises(kylix.ArgumentError, match="min_size"):
            c.resize(-1)
        _needs_resize()
        assert c.members() == [0]
        with pytest.raises(kylix.StateError):
            c.join_address()          # not elastic: no join listener
