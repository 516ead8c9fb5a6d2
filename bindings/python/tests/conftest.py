"""Test harness: run worker scripts as multi-process jobs under kylixrun.

Where things are found:
  KYLIX_BUILD    the build directory with kylixrun and libkylix.so (default: <repo>/build)
  KYLIX_LIBRARY  the library the workers load (default: $KYLIX_BUILD/libkylix.so)
The workers run with this interpreter (sys.executable), so they import the same installed
`kylix` package as the tests. Every job is bounded twice: kylixrun --job-timeout, and a hard
deadline here that stops the launcher's process group (which this harness started).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import pytest

TESTS = Path(__file__).resolve().parent
PYROOT = TESTS.parent                      # bindings/python
REPO = PYROOT.parent.parent
BUILD = Path(os.environ.get("KYLIX_BUILD") or REPO / "build").resolve()
KYLIXRUN = BUILD / "kylixrun"
LIBRARY = Path(os.environ.get("KYLIX_LIBRARY") or BUILD / "libkylix.so").resolve()
JOB_TIMEOUT_S = 120
HARD_DEADLINE_S = 150

os.environ["KYLIX_LIBRARY"] = str(LIBRARY)     # for `import kylix` here and in the workers

try:
    import kylix  # the installed package (run_tests.sh installs it)
except ImportError as e:
    if "libkylix" in str(e):
        raise
    # Not installed: test the source tree (for development).
    sys.path.insert(0, str(PYROOT))
    import kylix
# The workers must import the same package as the tests.
_extra_path = str(PYROOT) if Path(kylix.__file__).resolve().parent.parent == PYROOT else ""


def pytest_report_header(config):
    import kylix as k
    return [f"kylix {k.__version__} from {Path(k.__file__).parent}, library {k.library_path} "
            f"(version {'.'.join(map(str, k.version()))})", f"kylixrun {KYLIXRUN}"]


LINE_RE = re.compile(r"\br(-?\d+) (PASS|FAIL|INFO|DONE) (.*)$")


@dataclass
class Result:
    cmd: str
    code: int
    output: str
    elapsed: float
    lines: Dict[int, List[tuple]] = field(default_factory=dict)

    def find(self, rank: int, kind: str) -> List[str]:
        return [t for k, t in self.lines.get(rank, []) if k == kind]

    def failures(self) -> List[str]:
        return [f"r{r}: {t}" for r in sorted(self.lines) for k, t in self.lines[r] if k == "FAIL"]

    def dump(self) -> str:
        o = self.output
        if len(o) > 20000:
            o = o[:10000] + f"\n... [{len(o) - 20000} bytes cut] ...\n" + o[-10000:]
        return f"command: {self.cmd}\nexit code {self.code} after {self.elapsed:.2f}s\n" \
               f"--- output ---\n{o}--- end ---"

    def expect_clean(self, ranks: Sequence[int]) -> None:
        problems = []
        if self.code != 0:
            problems.append(f"exit code {self.code}, want 0")
        problems += self.failures()
        for r in ranks:
            done = self.find(r, "DONE")
            if not done or not done[-1].startswith("fails=0"):
                problems.append(f"rank {r}: no 'DONE fails=0' line ({done})")
            if not self.find(r, "PASS"):
                problems.append(f"rank {r}: no PASS line at all")
        if problems:
            pytest.fail("\n".join(problems) + "\n" + self.dump(), pytrace=False)


def _env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ)
    # A job's settings come from kylixrun, not from whatever KYLIX_* the caller had set.
    for k in list(env):
        if k.startswith("KYLIX_") and k not in ("KYLIX_LIBRARY", "KYLIX_BUILD"):
            del env[k]
    env["KYLIX_LIBRARY"] = str(LIBRARY)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if _extra_path:
        env["PYTHONPATH"] = _extra_path + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


def run_cmd(argv: List[str], env: Dict[str, str], cwd: Path, deadline: float) -> Result:
    t0 = time.monotonic()
    p = subprocess.Popen(argv, cwd=str(cwd), env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)       # own process group: we can stop it all
    try:
        out, _ = p.communicate(timeout=deadline)
        code = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            out, _ = p.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
        code = -1
        out = (out or b"") + f"\n[harness: stopped after {deadline}s]\n".encode()
    text = out.decode("utf-8", "replace")
    res = Result(" ".join(argv), code, text, time.monotonic() - t0)
    for line in text.splitlines():
        m = LINE_RE.search(line)
        if m:
            res.lines.setdefault(int(m.group(1)), []).append((m.group(2), m.group(3)))
    return res


@pytest.fixture(scope="session")
def kylixrun() -> Path:
    for f in (KYLIXRUN, LIBRARY):
        if not f.exists():
            pytest.fail(f"{f} not found: run `make` in {REPO} first (or set KYLIX_BUILD)",
                        pytrace=False)
    return KYLIXRUN


@pytest.fixture
def job(kylixrun, tmp_path):
    """job(n, script, *args, degrees=None, replication=None, keep_going=False, env=None)."""

    def run(n: int, script: str, *args: str, degrees: Optional[str] = None,
            replication: Optional[int] = None, keep_going: bool = False,
            env: Optional[Dict[str, str]] = None, python_args: Sequence[str] = ()) -> Result:
        argv = [str(kylixrun), "-n", str(n), "--tag-output", "--job-timeout", str(JOB_TIMEOUT_S)]
        if degrees:
            argv += ["--degrees", degrees]
        if replication:
            argv += ["--replication", str(replication)]
        if keep_going:
            argv.append("--keep-going")
        target = script if os.path.isabs(script) else str(TESTS / script)
        argv += ["--", sys.executable, *python_args, target, *map(str, args)]
        return run_cmd(argv, _env(env), tmp_path, HARD_DEADLINE_S)

    return run


@pytest.fixture
def python_script(tmp_path):
    """Run a script with this interpreter, no launcher: python_script(script, *args) -> Result."""

    def run(script: str, *args: str, env: Optional[Dict[str, str]] = None,
            deadline: float = HARD_DEADLINE_S) -> Result:
        target = script if os.path.isabs(script) else str(TESTS / script)
        return run_cmd([sys.executable, target, *map(str, args)], _env(env), tmp_path, deadline)

    return run


def run_with_join(job: List[str], join: List[str], job_file: Path, cwd: Path):
    """Runs an elastic job (kylixrun --elastic --job-file job_file ...) and, once the job file
    exists, `join` (a kylixrun --join) beside it, as from another shell: (job, join) Results."""
    import threading
    results: List[Result] = []
    t = threading.Thread(target=lambda: results.append(run_cmd(job, _env(), cwd, HARD_DEADLINE_S)))
    t.start()
    deadline = time.monotonic() + 60
    while not job_file.exists() and time.monotonic() < deadline and t.is_alive():
        time.sleep(0.05)
    assert job_file.exists(), f"no job file {job_file}"
    jr = run_cmd(join, _env(), cwd, HARD_DEADLINE_S)
    t.join()
    return results[0], jr
