"""pytest plugin for `make test`'s progress lines (loaded with ``-p pytest_progress``).

With TESTSUM_PROGRESS set, it appends to that file ``total N`` once the tests are collected,
``start NODEID`` as each test starts and ``done OUTCOME SECONDS NODEID`` as it ends (setup,
call and teardown together), each with the time after the kind: the protocol of
tests/testsum/progress.go, which prints slow and failed tests as they end and names the test
that runs now every 30 s. Without TESTSUM_PROGRESS it does nothing.
"""

from __future__ import annotations

import os
import time

_PATH = os.environ.get("TESTSUM_PROGRESS")
_runs: dict = {}


def _emit(kind: str, text: str) -> None:
    if _PATH:
        with open(_PATH, "a") as f:
            f.write(f"{kind} {time.time():.3f} {text}\n")


def pytest_collection_finish(session) -> None:
    _emit("total", str(len(session.items)))


def pytest_runtest_logstart(nodeid, location) -> None:
    _runs[nodeid] = ["passed", 0.0]
    _emit("start", nodeid)


def pytest_runtest_logreport(report) -> None:
    run = _runs.setdefault(report.nodeid, ["passed", 0.0])
    run[1] += report.duration
    if report.failed:
        run[0] = "failed"
    elif report.skipped and run[0] != "failed":
        run[0] = "skipped"


def pytest_runtest_logfinish(nodeid, location) -> None:
    outcome, secs = _runs.pop(nodeid, ["passed", 0.0])
    _emit("done", f"{outcome} {secs:.1f} {nodeid}")
