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
    assert len(protos) == 30, sorted(protos)   # kylix_resize, kylix_members, kylix_join_address: 27-29, kylix_mark: 30
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


# ---- the lean path of allreduce and reduce (see "the lean path" in kylix/_api.py) ------------

def test_data_address_matches_ctypes():
    class Sub(np.ndarray):
        pass
    base = np.arange(100, dtype=np.float64)
    arrays = [base, base[7:], base[::3], base.reshape(10, 10)[3:, 2:], base.view(Sub)[5:],
              base.view(np.uint8)[1:], np.ones((3, 4), np.float32, order="F")]
    arrays += [np.ones(5, dtype=dt) for dt in kylix.DTYPES]
    for a in arrays:
        assert _arrays.data_address(a) == a.ctypes.data
        assert _arrays.ptr(a) == a.ctypes.data
    assert _arrays.ptr(np.ones(0)) is None and _arrays.ptr(None) is None
    if sys.implementation.name == "cpython":
        assert _arrays.DATA_OFFSET is not None       # the fast read is in use here


@pytest.fixture
def general_calls(monkeypatch):
    """Counts the calls that reached the general path of allreduce and reduce."""
    seen = []
    dense, args = _api.Comm._dense_args, _api.Plan._args

    def dense_spy(self, *a):
        seen.append("allreduce")
        return dense(self, *a)

    def args_spy(self, *a):
        seen.append("reduce")
        return args(self, *a)
    monkeypatch.setattr(_api.Comm, "_dense_args", dense_spy)
    monkeypatch.setattr(_api.Plan, "_args", args_spy)
    return seen


@pytest.mark.parametrize("fast_address", [True, False])
def test_lean_allreduce(comm, general_calls, monkeypatch, fast_address):
    if not fast_address:       # where the layout check fails: a.ctypes.data, same results
        monkeypatch.setattr(_api, "_OFF", None)
        monkeypatch.setattr(_arrays, "DATA_OFFSET", None)
    for dt in kylix.DTYPES:
        x = np.arange(1, 9, dtype=dt)
        out = np.zeros_like(x)
        assert comm.allreduce(x, out=out) is out and np.array_equal(out, x)
        assert comm.allreduce(x, "max", out=out) is out and np.array_equal(out, x)
        assert comm.allreduce(x, _raw.KYLIX_MIN, out=out) is out and np.array_equal(out, x)
        r = comm.allreduce(x)
        assert r is not x and r.dtype == x.dtype and np.array_equal(r, x)
        assert comm.allreduce(x, out=x) is x and np.array_equal(x, np.arange(1, 9, dtype=dt))
    m = np.arange(12.0).reshape(3, 4)
    mo = np.empty_like(m)
    assert comm.allreduce(m, out=mo) is mo and np.array_equal(mo, m)
    v = m.view()                                  # another object on the same memory: in place
    assert comm.allreduce(m, out=v) is v and np.array_equal(v, np.arange(12.0).reshape(3, 4))
    buf = np.arange(16, dtype=np.float32)         # adjacent, not overlapping
    assert comm.allreduce(buf[:8], out=buf[8:]) is not None
    assert np.array_equal(buf[8:], np.arange(8, dtype=np.float32))
    assert general_calls == []

    # Taken by the general path, with the same results as before.
    x = np.arange(1, 9, dtype=np.float32)
    out = np.empty_like(x)
    cases = [
        lambda: comm.allreduce(x, "SUM", out=out),                    # name not lower case
        lambda: comm.allreduce(x, np.int32(1), out=out),              # a numpy int op
        lambda: comm.allreduce(x, out=out, dtype=np.float32),         # dtype given
        lambda: comm.allreduce(list(x), out=out),                     # not an array
        lambda: comm.allreduce(np.repeat(x, 2)[::2], out=out),            # strided
        lambda: comm.allreduce(x.astype(np.float16), out=out),        # widened
        lambda: comm.allreduce(x.astype(">f4"), out=out),             # foreign byte order
        lambda: comm.allreduce(x.reshape(2, 4), out=out),             # out flat
        lambda: comm.allreduce(x.view(type("Sub", (np.ndarray,), {})), out=out),
    ]
    for i, f in enumerate(cases):
        out[:] = 0
        before = len(general_calls)
        f()
        assert np.array_equal(out, np.arange(1, 9, dtype=np.float32)), i
        assert len(general_calls) == before + 1, i
    assert comm.allreduce(np.ones(0, np.float32), out=np.ones(0, np.float32)).size == 0

    # Refused by the general path, with its messages (the comm stays usable after each).
    ro = np.empty_like(x)
    ro.flags.writeable = False
    xr = x.copy()
    xr.flags.writeable = False
    buf = np.arange(16, dtype=np.float32)
    bad = [
        (lambda: comm.allreduce(x, out=np.empty(8)), "out: dtype float64 does not match"),
        (lambda: comm.allreduce(x, out=np.empty(7, np.float32)), r"out: shape \(7,\)"),
        (lambda: comm.allreduce(x, out=ro), "out: is read-only"),
        (lambda: comm.allreduce(x, out=np.empty(16, np.float32)[::2]), "out: must be C-contig"),
        (lambda: comm.allreduce(buf[:8], out=buf[4:12]), "out: partially overlaps arr"),
        (lambda: comm.allreduce(buf[4:12], out=buf[:8]), "out: partially overlaps arr"),
        (lambda: comm.allreduce(xr, out=xr), "arr: is read-only"),
        (lambda: comm.allreduce(x, "nope", out=out), "op: unknown op 'nope'"),
        (lambda: comm.allreduce(x, 1.5, out=out), "op: expected a name, an int"),
        (lambda: comm.allreduce(x, True, out=out), "op: expected a name, an int"),
        (lambda: comm.allreduce(x, out=list(x)), "out: must be a numpy array"),
        (lambda: comm.allreduce(np.ones(3, complex), out=out), "arr: dtype complex128"),
    ]
    for f, msg in bad:
        with pytest.raises(kylix.ArgumentError, match=msg):
            f()
    for op in (99, -1, 2**40):                                 # the library refuses the op id
        with pytest.raises(kylix.ArgumentError):
            comm.allreduce(x, op, out=out)
    assert np.array_equal(comm.allreduce(x, out=out), x)
    c2 = kylix.init(rank=0, size=1)
    c2.close()
    with pytest.raises(kylix.StateError, match="closed"):
        c2.allreduce(x, out=out)


@pytest.fixture
def lean_calls(monkeypatch):
    """Counts the calls that went through the lean path's checks (the repeated call skips them)."""
    seen = []
    get = _api._NP_TO_CODE_get

    def spy(dt):
        seen.append(dt)
        return get(dt)
    monkeypatch.setattr(_api, "_NP_TO_CODE_get", spy)
    return seen


def test_stamp_layout():
    if sys.implementation.name == "cpython":
        assert _arrays.STAMP_LEN is not None          # the repeated call's check is in use here
    a = np.arange(8.0)
    f, d = _arrays.stamp_words(a)
    before = (_arrays.snapshot_of(f), _arrays.snapshot_of(d))
    assert f.tolist()[0] == a.ctypes.data and d.tolist() == [8]
    a.flags.writeable = False
    assert f != before[0]
    a.flags.writeable = True
    assert (f, d) == before
    a.resize(4, refcheck=False)                   # in place: the dimensions change
    assert d != before[1] and d.tolist() == [4]
    m = np.arange(6.0).reshape(2, 3)
    f, d = _arrays.stamp_words(m)
    assert d.tolist() == [2, 3]
    assert _arrays.stamp_words(np.float64(1.0).reshape(())) is None     # 0-d: no stamp


@pytest.mark.parametrize("gather", [True, False])
def test_stamps(monkeypatch, gather):
    """A call's stamps (both arrays' type pointers and fields, then both arrays' dimensions,
    each compared in one go) see every change the checks depend on, in either array; the type
    pointers come first, so that an object of another type at an array's address is told apart
    before its other words are read."""
    if sys.implementation.name == "cpython":
        assert _arrays.GATHER                         # one memoryview per stamp here
    if not gather:
        monkeypatch.setattr(_arrays, "GATHER", False)
    a, b = np.arange(8.0), np.zeros((2, 4))

    def fresh():
        f, d, keep = _arrays.stamps((a, b))
        return f, d, keep, _arrays.snapshot_of(f), _arrays.snapshot_of(d)

    f, d, keep, fb, db = fresh()
    assert f == fb and d == db
    words = f.tolist() if gather else [w for v in f for w in v.tolist()]
    assert words[:2] == [id(np.ndarray)] * 2
    assert words[2] == a.ctypes.data and words[2 + _arrays.STAMP_WORDS] == b.ctypes.data
    if gather:
        assert d.tolist() == [8, 2, 4]
    # The dimensions are read only while the fields match (their block may be gone otherwise).
    for change, undo in [
        (lambda: setattr(b.flags, "writeable", False), lambda: setattr(b.flags, "writeable", True)),
        (lambda: setattr(a.flags, "writeable", False), lambda: setattr(a.flags, "writeable", True)),
        (lambda: setattr(b, "dtype", np.int64), lambda: setattr(b, "dtype", np.float64)),
        (lambda: setattr(b, "strides", (8, 16)), lambda: setattr(b, "strides", (32, 8))),
    ]:
        f, d, keep, fb, db = fresh()
        change()
        assert f != fb
        undo()
    f, d, keep, fb, db = fresh()
    b.shape = (4, 2)                                  # may keep the dimensions' block
    assert f != fb or d != db
    f, d, keep, fb, db = fresh()
    a.resize(4, refcheck=False)                       # may keep the data and dimensions' block
    assert f != fb or d != db
    assert _arrays.stamps((a, np.float64(1.0).reshape(()))) is None


def test_frozen_args():
    """The repeated call's arguments, converted once, pass the same values as the lean path's."""
    x = np.arange(1, 9, dtype=np.float32)
    args = (ctypes.c_void_p(x.ctypes.data), ctypes.c_int64(8), _raw.KYLIX_F32, -1)
    fz = _api._frozen(args)
    if sys.implementation.name == "cpython":
        assert _api._CARG
        assert [type(a).__name__ for a in fz] == ["CArgObject"] * 4
    assert len(fz) == 4


def test_repeated_allreduce(comm, general_calls, lean_calls):
    """Repeated calls with the same arrays skip the checks, and every change to those arrays
    in place between calls still meets the general path's checks (results against x)."""
    def fresh():
        x = np.arange(1, 9, dtype=np.float32)
        out = np.zeros_like(x)
        for _ in range(3):
            out[:] = 0
            assert comm.allreduce(x, out=out) is out and np.array_equal(out, x)
        return x, out

    x, out = fresh()
    n = len(lean_calls)
    for _ in range(5):
        out[:] = 0
        assert comm.allreduce(x, out=out) is out and np.array_equal(out, x)
    assert len(lean_calls) == n and general_calls == []       # the repeated call took them
    out[:] = 0
    assert comm.allreduce(x, "max", out=out) is out and np.array_equal(out, x)
    assert len(lean_calls) == n + 1                           # another op: checked again
    for _ in range(3):                                        # in place
        assert comm.allreduce(x, out=x) is x and np.array_equal(x, np.arange(1, 9))

    # Changed in place between calls: refused with the general path's message, or a right result.
    changes = [
        (lambda x, out: setattr(out.flags, "writeable", False), "out: is read-only"),
        (lambda x, out: setattr(out, "shape", (2, 4)), r"out: shape \(2, 4\)"),
        (lambda x, out: out.resize(4, refcheck=False), r"out: shape \(4,\)"),
        (lambda x, out: x.resize(4, refcheck=False), r"out: shape \(8,\)"),
        (lambda x, out: x.resize(16, refcheck=False), r"out: shape \(8,\)"),
        (lambda x, out: setattr(x, "dtype", np.int32), "out: dtype float32 does not match"),
        (lambda x, out: setattr(out, "dtype", np.int32), "out: dtype int32 does not match"),
        (lambda x, out: setattr(out, "strides", (0,)), "out: must be C-contiguous"),
    ]
    for i, (change, msg) in enumerate(changes):
        x, out = fresh()
        change(x, out)
        with pytest.raises(kylix.ArgumentError, match=msg):
            comm.allreduce(x, out=out)
    x, out = fresh()
    x.shape = (2, 4)                                          # the general path takes a flat out
    out[:] = 0
    assert comm.allreduce(x, out=out) is out and np.array_equal(out, x.ravel())
    x, _ = fresh()
    x.flags.writeable = False
    with pytest.raises(kylix.ArgumentError, match="arr: is read-only"):
        comm.allreduce(x, out=x)

    # The kept arrays die: nothing is written where they were.
    x, out = fresh()
    del out
    gc.collect()
    r = comm.allreduce(x)                                     # out=None: a new array
    assert np.array_equal(r, x)
    for _ in range(3):
        out = np.zeros_like(x)                                # may reuse the old one's id
        assert comm.allreduce(x, out=out) is out and np.array_equal(out, x)
    x, out = fresh()
    comm.close()
    with pytest.raises(kylix.StateError, match="closed"):
        comm.allreduce(x, out=out)


def test_repeated_allreduce_other_arrays(comm, general_calls, lean_calls):
    """After a repeated call, other arrays (of a wrong dtype, shape or layout) are checked in
    full and refused naming the argument; the kept pair still works afterwards."""
    x = np.arange(1, 9, dtype=np.float32)
    out = np.zeros_like(x)
    for _ in range(3):
        comm.allreduce(x, out=out)
    assert comm._state.hot is not None
    n = len(lean_calls)
    bad = [
        (lambda: comm.allreduce(x.astype(np.complex64), out=out), "arr: dtype complex64"),
        (lambda: comm.allreduce(x, out=np.zeros(8)), "out: dtype float64 does not match"),
        (lambda: comm.allreduce(x, out=np.zeros(9, np.float32)), r"out: shape \(9,\)"),
        (lambda: comm.allreduce(x, out=np.zeros(16, np.float32)[::2]), "out: must be C-contig"),
        (lambda: comm.allreduce(x, "nope", out=out), "op: unknown op 'nope'"),
    ]
    for f, msg in bad:
        with pytest.raises(kylix.ArgumentError, match=msg):
            f()
    assert len(lean_calls) > n                        # each went through the checks
    out[:] = 0
    assert comm.allreduce(x, out=out) is out and np.array_equal(out, x)


def test_repeated_allreduce_comm_upkeep(comm, monkeypatch):
    """What gives the comm work to do (a plan to free, fork, close) drops the repeated call, so
    the next call does that work (or raises) instead of going straight to the library."""
    from kylix import _handles
    x = np.arange(1, 9, dtype=np.float32)
    out = np.zeros_like(x)

    def warm():
        for _ in range(3):
            out[:] = 0
            assert comm.allreduce(x, out=out) is out and np.array_equal(out, x)
        assert comm._state.hot is not None

    warm()
    plan = comm.config([1], [1])
    ps = plan._pstate
    del plan
    gc.collect()                                      # queued for the comm's thread to free
    assert comm._state.hot is None and comm._state.pending_free
    assert comm.allreduce(x, out=out) is out
    assert ps.closed and not comm._state.pending_free

    warm()
    monkeypatch.setattr(_handles, "_forked", False)   # restored after the test
    _handles._after_fork_in_child()                   # what a fork()ed child runs
    assert comm._state.hot is None
    with pytest.raises(kylix.StateError):
        comm.allreduce(x, out=out)
    monkeypatch.setattr(_handles, "_forked", False)

    warm()
    c2 = kylix.init(rank=0, size=1)
    for _ in range(3):
        c2.allreduce(x, out=out)
    assert c2._state.hot is not None
    c2.close()
    assert c2._state.hot is None
    with pytest.raises(kylix.StateError, match="closed"):
        c2.allreduce(x, out=out)


def test_repeated_allreduce_plain_args(comm, monkeypatch):
    """Where ctypes makes no CArgObjects, the repeated call passes the lean path's arguments."""
    monkeypatch.setattr(_api, "_CARG", False)
    x = np.arange(1, 9, dtype=np.int64)
    out = np.zeros_like(x)
    for _ in range(5):
        out[:] = 0
        assert comm.allreduce(x, "max", out=out) is out and np.array_equal(out, x)
    assert comm._state.hot is not None
    assert not any(type(a).__name__ == "CArgObject" for a in comm._state.hot.args)


def test_repeated_reduce(comm, general_calls, lean_calls):
    """As test_repeated_allreduce, for a plan's reduce."""
    plan = comm.config([1, 2], [2, 1, 0])
    want = np.array([20.0, 10.0, 0.0])

    def fresh():
        v = np.array([10.0, 20.0])
        out = np.empty(3)
        for _ in range(3):
            out[:] = -1
            assert plan.reduce(v, out=out) is out and np.array_equal(out, want)
        return v, out

    v, out = fresh()
    n = len(lean_calls)
    for _ in range(5):
        out[:] = -1
        assert plan.reduce(v, out=out) is out and np.array_equal(out, want)
    assert len(lean_calls) == n and general_calls == []
    assert plan.reduce(v, "max", out=out) is out and np.array_equal(out[:2], want[:2])
    assert len(lean_calls) == n + 1
    changes = [
        (lambda v, out: setattr(out.flags, "writeable", False), "out: is read-only"),
        (lambda v, out: out.resize(2, refcheck=False), r"out: shape \(2,\)"),
        (lambda v, out: out.resize(4, refcheck=False), r"out: shape \(4,\)"),
        (lambda v, out: v.resize(3, refcheck=False), "out_vals: has 3 rows"),
        (lambda v, out: v.resize(1, refcheck=False), "out_vals: has 1 rows"),
        (lambda v, out: setattr(v, "dtype", np.int64), "out: dtype float64 does not match"),
        (lambda v, out: setattr(out, "strides", (0,)), "out: must be C-contiguous"),
    ]
    for change, msg in changes:
        v, out = fresh()
        change(v, out)
        with pytest.raises(kylix.ArgumentError, match=msg):
            plan.reduce(v, out=out)
    v, out = fresh()
    v.shape = (2, 1)                                          # width 1: out (n_in,) or (n_in, 1)
    out[:] = -1
    assert plan.reduce(v, out=out) is out and np.array_equal(out, want)
    v, out = fresh()
    del out
    gc.collect()
    assert np.array_equal(plan.reduce(v), want)
    for _ in range(3):
        out = np.empty(3)
        assert plan.reduce(v, out=out) is out and np.array_equal(out, want)
    plan.close()
    with pytest.raises(kylix.StateError, match="closed"):
        plan.reduce(v, out=out)


def test_repeated_reduce_upkeep(comm, monkeypatch):
    """As test_repeated_allreduce_comm_upkeep, for a plan's repeated call: another plan to
    free, fork, closing the plan or its comm drop it."""
    from kylix import _handles
    plan = comm.config([1, 2], [2, 1, 0])
    want = np.array([20.0, 10.0, 0.0])
    v, out = np.array([10.0, 20.0]), np.empty(3)

    def warm():
        for _ in range(3):
            out[:] = -1
            assert plan.reduce(v, out=out) is out and np.array_equal(out, want)
        assert plan._pstate.hot is not None

    warm()
    other = comm.config([1], [1])
    ps = other._pstate
    del other
    gc.collect()
    assert plan._pstate.hot is None and comm._state.pending_free
    assert plan.reduce(v, out=out) is out and np.array_equal(out, want)
    assert ps.closed and not comm._state.pending_free

    warm()
    monkeypatch.setattr(_handles, "_forked", False)
    _handles._after_fork_in_child()
    assert plan._pstate.hot is None
    with pytest.raises(kylix.StateError):
        plan.reduce(v, out=out)
    monkeypatch.setattr(_handles, "_forked", False)

    warm()
    plan.close()
    assert plan._pstate.hot is None
    with pytest.raises(kylix.StateError, match="plan is closed"):
        plan.reduce(v, out=out)
    plan = comm.config([1, 2], [2, 1, 0])
    warm()
    comm.close()
    assert plan._pstate.hot is None
    with pytest.raises(kylix.StateError, match="closed"):
        plan.reduce(v, out=out)


@pytest.mark.parametrize("fast_address", [True, False])
def test_lean_reduce(comm, general_calls, monkeypatch, fast_address):
    if not fast_address:
        monkeypatch.setattr(_api, "_OFF", None)
        monkeypatch.setattr(_arrays, "DATA_OFFSET", None)
    plan = comm.config([1, 2], [2, 1, 0])
    for dt in kylix.DTYPES:
        v = np.array([10, 20], dtype=dt)
        want = np.array([20, 10, 0], dtype=dt)
        assert np.array_equal(plan.reduce(v), want) and plan.reduce(v).dtype == dt
        out = np.empty(3, dtype=dt)
        assert plan.reduce(v, "max", out=out) is out and np.array_equal(out[:2], want[:2])
        v2 = np.array([[1, 2], [3, 4]], dtype=dt)
        out2 = np.empty((3, 2), dtype=dt)
        assert plan.reduce(v2, out=out2) is out2 and np.array_equal(out2[:2], [[3, 4], [1, 2]])
    assert general_calls == []

    v = np.array([10.0, 20.0])
    cases = [
        lambda: plan.reduce(v, out=np.empty((3, 1))),                 # (n_in, 1) for 1-D values
        lambda: plan.reduce(v.reshape(2, 1), out=np.empty(3)),
        lambda: plan.reduce([10.0, 20.0]),
        lambda: plan.reduce(v, "SUM"),
        lambda: plan.reduce(v, dtype=np.float64),
        lambda: plan.reduce(np.array([10.0, 0, 20.0])[::2]),
    ]
    for i, f in enumerate(cases):
        before = len(general_calls)
        assert np.array_equal(np.ravel(f()), [20.0, 10.0, 0.0]), i
        assert len(general_calls) == before + 1, i
    empty_in = comm.config([1, 2], [])
    assert plan.reduce(v).size == 3 and empty_in.reduce(v).size == 0

    ro = np.empty(3)
    ro.flags.writeable = False
    buf = np.zeros(8)
    buf[:2] = v
    bad = [
        (lambda: plan.reduce(np.ones(3)), "out_vals: has 3 rows but the plan"),
        (lambda: plan.reduce(np.ones((2, 0))), "out_vals: width 0"),
        (lambda: plan.reduce(np.ones((2, 2, 2))), "out_vals: expected a 1-D or 2-D array"),
        (lambda: plan.reduce(v, out=ro), "out: is read-only"),
        (lambda: plan.reduce(v, out=np.empty(3, np.float32)), "out: dtype float32"),
        (lambda: plan.reduce(v, out=np.empty(4)), r"out: shape \(4,\)"),
        (lambda: plan.reduce(buf[:2], out=buf[1:4]), "out: overlaps out_vals"),
        (lambda: plan.reduce(buf[2:4], out=buf[:3]), "out: overlaps out_vals"),
        (lambda: plan.reduce(v, "nope"), "op: unknown op"),
    ]
    for f, msg in bad:
        with pytest.raises(kylix.ArgumentError, match=msg):
            f()
    assert np.array_equal(plan.reduce(v), [20.0, 10.0, 0.0])
    plan.close()
    with pytest.raises(kylix.StateError, match="closed"):
        plan.reduce(v)
