"""kylix.from_mpi and kylix.from_spark with stand-in engines in this process.

Each stand-in is a one-rank job (the real multi-process runs, under Open MPI and in a real Spark,
are in tests/userpaths/test_engines.py): what is checked here is the binding's side, that the
engine's rank, size and gathered addresses make the options kylix.init receives, in rank order.
"""

from types import SimpleNamespace

import numpy as np
import pytest

import kylix
from kylix import _engines


class FakeMPI:
    def __init__(self):
        self.gathered = []

    def Get_rank(self):
        return 0

    def Get_size(self):
        return 1

    def allgather(self, x):
        self.gathered.append(x)
        return [x]


class FakeBarrier:
    def __init__(self, reply=None):
        self.reply = reply

    def partitionId(self):
        return 0

    def getTaskInfos(self):
        return [SimpleNamespace(address="127.0.0.1:40000")]

    def allGather(self, m):
        return self.reply if self.reply is not None else [m]


def test_from_mpi_one_rank():
    fake = FakeMPI()
    with kylix.from_mpi(fake, timeout_ms=5000) as comm:
        assert (comm.rank, comm.size) == (0, 1)
        np.testing.assert_array_equal(comm.allreduce(np.arange(3.0)), np.arange(3.0))
    # one gather of host names (all on this machine: loopback), one of rank|addr|secret
    assert len(fake.gathered) == 2
    rank, addr, secret = fake.gathered[1].split("|")
    assert rank == "0" and addr.startswith("127.0.0.1:") and len(secret) == 32


def test_from_spark_one_task():
    with kylix.from_spark(FakeBarrier(), timeout_ms=5000) as comm:
        assert (comm.rank, comm.size) == (0, 1)


def test_join_rejects_an_incomplete_gather(monkeypatch):
    called = []
    monkeypatch.setattr(_engines, "init", lambda *a, **k: called.append(1))
    with pytest.raises(RuntimeError, match="not one address per rank"):
        _engines._join(0, 2, lambda m: [m], "127.0.0.1", None, {})
    # peers come back in rank order whatever order the engine returns the messages in
    got = {}
    monkeypatch.setattr(_engines, "init", lambda opts, **k: got.update(k))
    _engines._join(1, 2, lambda m: [m, "0|127.0.0.1:7000|s3cr3t"], "127.0.0.1", None, {})
    assert got["peers"][0] == "127.0.0.1:7000" and got["peers"][1].startswith("127.0.0.1:")
    assert got["secret"] == "s3cr3t" and (got["rank"], got["size"]) == (1, 2)
    assert not called
