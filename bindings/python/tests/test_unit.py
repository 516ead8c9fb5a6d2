"""In-process tests on one-rank comms (size=1 needs neither peers nor rendezvous): the raw
layer against the header, errors, option strings, dtype conversions, handle lifetimes."""

import ctypes
import gc
import pickle
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import kylix
from kylix import _api, _arrays, _raw
from conftest import REPO, _env

HEADER = (REPO / "include" / "kylix.h").read_text()


def _norm(s):
    return re.sub(r"\s+", " ", s).replace("( ", "(").replace(" )", ")").strip()


def header_prototypes():
    body = re.sub(r"/\*.*?\*/", "", HEADER, flags=re.S)
    protos = re.findall(r"^\s*((?:int|const char \*)\s*(kylix_\w+)\s*\(([^)]*)\);)", body,
                        flags=re.M)
    return {name: (_norm(full), params) for full, name, params in protos}


def test_raw_layer_matches_header():
    protos = header_prototypes()
    assert len(protos) == 29, sorted(protos)   # kylix_resize, kylix_members, kylix_join_address: 27-29
    src = open(_raw.__file__).read()
    comments = _norm(" ".join(
        line.strip()[1:] for line in src.splitlines() if line.strip().startswith("#")))
    for name, (proto, params) in protos.items():
        fn = getattr(_raw, name)
        nparams = 0 if params.strip() == "void" else params.count(",") + 1
        assert len(fn.argtypes) == nparams, name
        assert proto in comments, f"{name}: C prototype not quoted in _raw.py: {proto}"
        # CDLL (not PyDLL): ctypes releases the GIL during every call
        assert not fn._flags_ & ctypes._FUNCFLAG_PYTHONAPI, name
    assert type(_raw.lib) is ctypes.CDLL


def test_version_and_strerror():
    m = {k: int(v) for k, v in re.findall(r"#define KYLIX_VERSION_(MAJOR|MINOR|PATCH) (\d+)",
                                          HEADER)}
    assert kylix.version() == (m["MAJOR"], m["MINOR"], m["PATCH"])
    for st in range(-1, 12):
        assert isinstance(kylix.strerror(st), str) and kylix.strerror(st)
    assert kylix.strerror(99) == "unknown status"


def test_exception_hierarchy():
    cases = [(kylix.ArgumentError, 1, ValueError), (kylix.StateError, 2, None),
             (kylix.TimeoutError, 3, TimeoutError), (kylix.PeerError, 4, None),
             (kylix.MismatchError, 5, None), (kylix.AuthError, 6, None),
             (kylix.NetworkError, 7, OSError), (kylix.NoMemoryError, 8, MemoryError),
             (kylix.InternalError, 9, None)]
    from kylix._errors import error_for_status
    for cls, st, builtin in cases:
        e = error_for_status(st, "the detail", "kylix_reduce")
        assert type(e) is cls and e.status == st and isinstance(e, kylix.KylixError)
        assert e.message == "the detail" and e.call == "kylix_reduce"
        assert str(e).startswith("kylix_reduce: ") and str(e).endswith(": the detail")
        if builtin:
            assert isinstance(e, builtin)
        e2 = pickle.loads(pickle.dumps(e))
        assert type(e2) is cls and str(e2) == str(e) and e2.status == st
    # the library's own "call: " prefix is not repeated
    assert str(error_for_status(1, "kylix_init: options: x", "kylix_init")).count("kylix_init") == 1


def test_options_string():
    f = _api._options_string
    assert f(None, {}) == ""
    assert f("rank=0;size=1", {}) == "rank=0;size=1"
    assert f(None, {"degrees": (8, 4, 2), "peers": ["a:1", "b:2"], "timeout_ms": 5,
                    "log": None}) == "degrees=8x4x2;peers=a:1,b:2;timeout_ms=5"
    assert f({"rendezvous": ""}, {}) == "rendezvous="
    with pytest.raises(kylix.ArgumentError, match="secret"):
        f(None, {"secret": "a;b"})


def test_init_errors():
    with pytest.raises(kylix.ArgumentError, match="bogus"):
        kylix.init(rank=0, size=1, bogus=1)
    with pytest.raises(kylix.ArgumentError) as ei:
        kylix.init("rank=0;size=1;replication=zero")
    assert "replication" in str(ei.value) and ei.value.call == "kylix_init"


def test_library_not_found():
    env = _env({"KYLIX_LIBRARY": "/nonexistent/libkylix.so"})
    p = subprocess.run([sys.executable, "-c", "import kylix"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode != 0
    assert "KylixLibraryNotFound" in p.stderr and "KYLIX_LIBRARY" in p.stderr
    assert "/nonexistent/libkylix.so" in p.stderr


@pytest.fixture
def comm():
    with kylix.init(rank=0, size=1) as c:
        yield c


def test_one_rank_semantics(comm):
    assert (comm.rank, comm.size) == (0, 1)
    plan = comm.config([5, 3, 5, 9], [5, 7, 3, 5])
    got = plan.reduce(np.array([1.0, 2.0, 4.0, 8.0]))
    assert np.array_equal(got, [5.0, 0.0, 2.0, 5.0])      # repeats combined, 7: identity
    got = plan.reduce(np.array([[1, 2], [3, 4], [5, 6], [7, 8]], dtype=np.int32), op="min")
    imax = np.iinfo(np.int32).max
    assert np.array_equal(got, [[1, 2], [imax, imax], [3, 4], [1, 2]])
    assert got.shape == (4, 2) and got.dtype == np.int32
    assert np.array_equal(comm.config_reduce([1, 1], [2.0, 3.0], [1], op="prod"), [6.0])


@pytest.mark.parametrize("dt", kylix.DTYPES)
def test_zero_copy_and_conversions(dt):
    a = np.arange(12, dtype=dt).reshape(4, 3)
    assert _arrays.values(a, "x") is a                     # C-contiguous, supported: no copy
    assert _arrays.values(a, "x", copy=False) is a
    t = a.T                                                 # not contiguous: one copy
    c = _arrays.values(t, "x")
    assert c is not t and c.flags.c_contiguous and np.array_equal(c, t)
    with pytest.raises(_arrays.BadArg, match="copy=False"):
        _arrays.values(t, "x", copy=False)
    b = a.astype(a.dtype.newbyteorder(">"))                 # foreign byte order: converted
    assert _arrays.values(b, "x").dtype == np.dtype(dt)


def test_dtype_rules():
    assert _arrays.values(np.ones(2, np.int16), "x").dtype == np.int32
    assert _arrays.values(np.ones(2, np.uint32), "x").dtype == np.int64
    assert _arrays.values(np.ones(2, np.float16), "x").dtype == np.float32
    assert _arrays.values([1.5, 2], "x").dtype == np.float64
    with pytest.raises(_arrays.BadArg, match="complex"):
        _arrays.values(np.ones(2, complex), "out_vals")
    i = np.arange(5, dtype=np.int64)
    assert _arrays.indices(i, "out_idx") is i
    assert _arrays.indices(np.arange(5, dtype=np.int32), "out_idx").dtype == np.int64
    assert _arrays.indices([], "out_idx").dtype == np.int64
    with pytest.raises(_arrays.BadArg, match="in_idx: indices must be integers"):
        _arrays.indices(np.array([1.0]), "in_idx")
    with pytest.raises(_arrays.BadArg, match="does not fit in int64"):
        _arrays.indices(np.array([2**63], dtype=np.uint64), "in_idx")


def test_out_buffers(comm):
    plan = comm.config([1, 2], [2, 1, 0])
    buf = np.empty(3)
    assert plan.reduce(np.array([1.0, 2.0]), out=buf) is buf
    assert np.array_equal(buf, [2.0, 1.0, 0.0])
    a = np.array([1.0, 2.0])
    with pytest.raises(kylix.ArgumentError, match="overlaps"):
        comm.config_reduce([1, 2], a, [1, 2], out=a)
    ro = np.empty(3)
    ro.flags.writeable = False
    with pytest.raises(kylix.ArgumentError, match="read-only"):
        plan.reduce(np.array([1.0, 2.0]), out=ro)
    x = np.arange(6.0)
    assert comm.allreduce(x, out=x) is x


def test_plan_collected_is_freed_on_the_comm_thread(comm):
    plan = comm.config([1], [1])
    pstate = plan._pstate
    del plan
    gc.collect()
    assert not pstate.closed and comm._state.pending_free    # queued, not freed by the GC
    comm.barrier()                                             # next call on the comm frees it
    assert pstate.closed and not comm._state.pending_free
    assert comm.stats()["plans"][-1]["freed"] is True


def test_closing_the_comm_closes_plans_and_requests():
    c = kylix.init(rank=0, size=1)
    plan = c.config([1], [1])
    c.close()
    assert plan.closed and c.closed
    plan.close()                                               # idempotent, no library call
    with pytest.raises(kylix.StateError):
        plan.reduce(np.ones(1))
    c.close()


def test_dropped_comm_is_finalized():
    c = kylix.init(rank=0, size=1)
    fin = c._finalizer
    del c
    gc.collect()
    assert not fin.alive


def test_user_op_one_rank(comm):
    op = kylix.op_create(lambda io, x: np.maximum(io, x, out=io))
    assert op.id >= 64 and int(op) == op.id
    assert np.array_equal(comm.allreduce(np.array([3.0, -1.0]), op=op), [3.0, -1.0])
    plan = comm.config([1, 1, 2], [1, 2, 3])
    got = plan.reduce(np.array([1.0, 5.0, -2.0]), op=op)      # repeats fold through the op
    assert np.array_equal(got, [5.0, -2.0, 0.0])               # none contributed: zero bytes
    with pytest.raises(kylix.ArgumentError):
        kylix.op_create(42)


def test_user_op_exception_one_rank(comm):
    def bad(io, x):
        raise ZeroDivisionError("nope")
    op = kylix.op_create(bad)
    plan = comm.config([1, 1], [1])
    with pytest.raises(kylix.UserOpError, match="nope") as ei:
        plan.reduce(np.array([1.0, 2.0]), op=op)
    assert isinstance(ei.value.__cause__, ZeroDivisionError)
    assert np.array_equal(plan.reduce(np.array([1.0, 2.0])), [3.0])   # comm still fine


def test_requests_one_rank(comm):
    plan = comm.config([0, 1], [1, 0])
    r1 = plan.ireduce(np.array([1.0, 2.0]))
    r2 = comm.iallreduce(np.arange(3))
    assert np.array_equal(r2.wait(), [0, 1, 2])
    assert r1.test() is True and np.array_equal(r1.wait(), [2.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with comm.iallreduce(np.ones(2)) as r3:
            pass
        assert r3.done


def test_plan_degrees():
    assert kylix.plan_degrees(int(6e7), 0.21, 64, 1.0, int(5e6), 4) == (8, 4, 2)
    d = kylix.plan_degrees(10**7, 0.03, 4)
    assert int(np.prod(d)) == 4
    with pytest.raises(kylix.ArgumentError, match="ranks"):
        kylix.plan_degrees(1000, 0.5, 0)


def test_stats_shape(comm):
    comm.allreduce(np.ones(4))
    st = comm.stats()
    assert st["version"] == 1 and st["rank"] == 0 and st["size"] == 1
    assert st["collectives"]["allreduce"]["calls"] == 1
    comm.reset_stats()
    assert comm.stats()["collectives"]["allreduce"]["calls"] == 0
    assert comm.failed_ranks() == []
