"""The README's "Elastic jobs" example, run as printed: the program block saved as elastic.py,
the sh block run as one shell session with this environment's kylixrun and python3 first on
PATH. Two ranks start, two join, and rank 0 ends on 4 ranks."""

import os
import re
import sys

import pytest

import kylix
from conftest import HARD_DEADLINE_S, KYLIXRUN, PYROOT, _env, run_cmd


def _section(text, heading):
    m = re.search(r"^## " + re.escape(heading) + r"\n(.*?)(?=^## )", text, re.S | re.M)
    assert m, f"README has no section {heading!r}"
    return m.group(1)


def test_readme_elastic_example(kylixrun, tmp_path):
    if not hasattr(kylix._raw.lib, "kylix_resize"):
        pytest.skip(f"{kylix.library_path} has no kylix_resize")
    sec = _section((PYROOT / "README.md").read_text(), "Elastic jobs")
    blocks = dict(re.findall(r"^```(\w+)\n(.*?)^```", sec, re.S | re.M))
    (tmp_path / "elastic.py").write_text(blocks["python"])
    env = _env()
    env["PATH"] = os.pathsep.join([str(KYLIXRUN.parent), os.path.dirname(sys.executable),
                                   env.get("PATH", "")])
    r = run_cmd(["sh", "-ec", blocks["sh"]], env, tmp_path, HARD_DEADLINE_S)
    assert r.code == 0, r.dump()
    assert re.search(r"^\[0\] step 60: 4 ranks, sum \d+$", r.output, re.M), r.dump()
    assert "--elastic job ended with status 0; 2 joiner(s) admitted" in r.output, r.dump()
    assert not (tmp_path / "job.json").exists(), "the job file outlived the job"
