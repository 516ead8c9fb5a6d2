"""Layer 2: classes that own the library's handles.

A :class:`CommHandle` owns a ``kylix_comm``, a :class:`PlanHandle` a ``kylix_plan``, a
:class:`RequestHandle` a ``kylix_request`` together with the numpy arrays the library reads
and writes until the request completes.  Every class has an idempotent ``close()``, works as a
context manager, and has a ``weakref.finalize`` safety net, with these rules (they follow the
header's ownership and thread rules):

* ``kylix_finalize`` frees every plan of the comm and finishes every request in flight, so
  closing a comm marks its plans and requests closed without calling into the library again.
* A plan's finalizer (garbage collection may run on any thread) does not call
  ``kylix_plan_free`` itself: it queues the plan, and the comm frees it on the next call made
  on the comm's own thread (or when the comm closes).
* A request in flight is referenced by its comm, arrays included, until the library reports it
  complete: dropping the last reference to a :class:`RequestHandle` can never free a buffer
  the library still writes.  Abandoned requests are polled (``kylix_test``) at the next call
  on the comm and released once done; ``kylix_finalize`` finishes the rest.
* After ``fork()`` the child never calls the library through a finalizer (every call would
  fail with KYLIX_ERR_STATE anyway); explicit calls raise :class:`~kylix.StateError`.
"""

from __future__ import annotations

import ctypes
import os
import threading
import warnings
import weakref
from typing import Any, Callable, Optional

from . import _raw
from ._errors import KylixError, StateError, error_for_status

__all__ = ["CommHandle", "PlanHandle", "RequestHandle", "forked", "check_global", "errmsg"]

_forked = False
# Every comm's state while it lives: a fork()ed child drops their repeated calls (state.hot).
_live_states: "weakref.WeakSet[_CommState]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    global _forked
    _forked = True
    for st in list(_live_states):
        st.drop_hot()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def forked() -> bool:
    """True in a child fork()ed from a process that had loaded the library."""
    return _forked


def errmsg(ptr: Optional[int]) -> str:
    """kylix_errmsg(ptr) as str (ptr None: the thread's last failure without a comm)."""
    m = _raw.kylix_errmsg(ptr)
    return m.decode("utf-8", "replace") if m else ""


def check_global(status: int, call: str) -> None:
    """Raise for a failed call that reports through kylix_errmsg(NULL)."""
    if status != _raw.KYLIX_OK:
        raise error_for_status(status, errmsg(None), call)


def _fork_error(call: str) -> StateError:
    return StateError(errmsg(None) or "this process was fork()ed after libkylix was loaded; "
                      "use the spawn or forkserver start method", call=call)


class _CommState:
    """Everything a comm's finalizer needs, without a reference to the comm object."""

    __slots__ = ("ptr", "closed", "plans", "inflight", "pending_free", "abandoned", "lock",
                 "hot", "__weakref__")

    def __init__(self, ptr: int):
        self.ptr = ptr
        self.closed = False
        # The comm's repeated call (kylix._api, "the repeated call"), or None; its plans keep
        # theirs in their _PlanState.  Whatever makes a call on the comm or its plans do more
        # than the C call (closed, plans or requests to clean up after, fork) drops them all
        # (drop_hot), so a call that finds one needs no other test.
        self.hot: Any = None
        self.plans: set = set()            # _PlanState of live plans
        self.inflight: dict = {}           # request ptr -> _RequestState (owns the arrays)
        self.pending_free: list = []       # _PlanState queued by finalizers
        self.abandoned: list = []          # request ptrs whose Python object was collected
        self.lock = threading.Lock()       # guards the containers against finalizer threads

    def drop_hot(self) -> None:
        """Forget the repeated calls of the comm and of its plans (under self.lock, or where
        no other thread runs)."""
        self.hot = None
        for ps in self.plans:
            ps.hot = None

    def mark_closed(self) -> None:
        with self.lock:
            self.drop_hot()
            self.closed = True
            plans, self.plans = self.plans, set()
            reqs, self.inflight = list(self.inflight.values()), {}
            self.pending_free.clear()
            self.abandoned.clear()
        for ps in plans:
            ps.closed = True
        for rs in reqs:
            if not rs.done:
                rs.finish(StateError("the comm was closed before the request completed; its "
                                     "status is lost (kylix_finalize finished it)",
                                     call="kylix_wait"))


def _finalize_comm(state: _CommState) -> None:
    """weakref.finalize callback: finalize a comm nobody closed."""
    if state.closed:
        return
    if not _forked:
        try:
            _raw.kylix_finalize(state.ptr)
        except Exception:  # interpreter shutdown: nothing sensible left to do
            pass
    state.mark_closed()


class CommHandle:
    """Owns one ``kylix_comm``: ``close()`` calls ``kylix_finalize``."""

    def __init__(self, ptr: int):
        if not ptr:
            raise StateError("no comm handle", call="kylix_init")
        self._state = _CommState(int(ptr))
        _live_states.add(self._state)
        self._finalizer = weakref.finalize(self, _finalize_comm, self._state)

    # -- handle access and status checks ------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran (or the comm was finalized another way)."""
        return self._state.closed

    def _ptr(self, call: str) -> int:
        """The live handle; maintenance of plans/requests dropped by the garbage collector."""
        if _forked:
            raise _fork_error(call)
        st = self._state
        if st.closed:
            raise StateError("the comm is closed", call=call)
        if st.pending_free or st.abandoned:
            self._maintain()
        return st.ptr

    def _maintain(self) -> None:
        st = self._state
        with st.lock:
            frees, st.pending_free = st.pending_free, []
            abandoned, st.abandoned = st.abandoned, []
        for ps in frees:
            if not ps.closed:
                ps.closed, ps.hot = True, None
                _raw.kylix_plan_free(ps.ptr)   # a failure here has nobody to report to
                with st.lock:
                    st.plans.discard(ps)
        still = []
        done = ctypes.c_int(0)
        for rptr in abandoned:
            rs = st.inflight.get(rptr)
            if rs is None or rs.done:
                continue
            done.value = 0
            status = _raw.kylix_test(rptr, ctypes.byref(done))
            if done.value or status != _raw.KYLIX_OK:
                rs.finish(None)
                with st.lock:
                    st.inflight.pop(rptr, None)
            else:
                still.append(rptr)
        if still:
            with st.lock:
                st.abandoned.extend(still)
                st.drop_hot()

    def _check(self, status: int, call: str) -> None:
        """Raise the exception for a failed call on this comm (message: kylix_errmsg(c))."""
        if status != _raw.KYLIX_OK:
            msg = errmsg(None) if self._state.closed else errmsg(self._state.ptr)
            raise error_for_status(status, msg, call)

    # -- lifetime -----------------------------------------------------------------------------

    def close(self) -> None:
        """Leave the job (``kylix_finalize``): frees every plan, finishes requests in flight.

        Idempotent.  Not a collective: peers still waiting on this rank see PeerError.
        Raises the library's error if closing the sockets failed (the comm is released
        anyway).  In a fork()ed child this only forgets the handle.
        """
        st = self._state
        if st.closed:
            return
        self._finalizer.detach()
        if _forked:
            st.mark_closed()
            return
        status = _raw.kylix_finalize(st.ptr)
        st.mark_closed()
        check_global(status, "kylix_finalize")

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:  # do not hide the body's exception behind a failure to close
            try:
                self.close()
            except KylixError:
                pass


class _PlanState:
    __slots__ = ("ptr", "closed", "hot", "__weakref__")

    def __init__(self, ptr: int):
        self.ptr = ptr
        self.closed = False
        self.hot: Any = None               # the plan's repeated call (see _CommState.hot)


def _plan_gc(comm_state: _CommState, ps: _PlanState) -> None:
    """weakref.finalize callback: queue the plan for the comm's own thread to free."""
    if ps.closed or comm_state.closed:
        return
    with comm_state.lock:
        comm_state.pending_free.append(ps)
        comm_state.drop_hot()


class PlanHandle:
    """Owns one ``kylix_plan``: ``close()`` calls ``kylix_plan_free``.

    Holds its comm, so the comm is not collected while a plan of it is alive.
    """

    def __init__(self, comm: CommHandle, ptr: int):
        self._comm = comm
        self._pstate = _PlanState(int(ptr))
        cs = comm._state
        with cs.lock:
            cs.plans.add(self._pstate)
        self._finalizer = weakref.finalize(self, _plan_gc, cs, self._pstate)

    @property
    def comm(self) -> CommHandle:
        """The comm this plan belongs to."""
        return self._comm

    @property
    def closed(self) -> bool:
        """True once the plan was freed (by :meth:`close` or by closing its comm)."""
        return self._pstate.closed

    def _ptr(self, call: str) -> int:
        self._comm._ptr(call)             # fork, closed comm, pending maintenance
        if self._pstate.closed:
            raise StateError("the plan is closed", call=call)
        return self._pstate.ptr

    def close(self) -> None:
        """Free the plan (``kylix_plan_free``).  Local, idempotent.

        A non-blocking reduce on the plan still in flight completes normally.
        """
        ps = self._pstate
        if ps.closed:
            return
        self._finalizer.detach()
        ps.hot = None
        if _forked or self._comm._state.closed:
            ps.closed = True
            return
        ps.closed = True
        with self._comm._state.lock:
            self._comm._state.plans.discard(ps)
        status = _raw.kylix_plan_free(ps.ptr)
        self._comm._check(status, "kylix_plan_free")

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()


class _RequestState:
    """A request's outcome and the objects the library uses until it completes."""

    __slots__ = ("ptr", "keep", "done", "error", "on_done", "__weakref__")

    def __init__(self, ptr: int, keep: tuple, on_done: Optional[Callable[[], None]]):
        self.ptr = ptr
        self.keep = keep           # arrays (and anything else) the library touches
        self.done = False
        self.error: Optional[BaseException] = None
        self.on_done = on_done

    def finish(self, error: Optional[BaseException]) -> None:
        self.done = True
        self.error = error
        self.keep = ()             # the library no longer touches the buffers


def _request_gc(comm_state: _CommState, rs: _RequestState) -> None:
    """weakref.finalize callback: a request dropped before completion stays owned by its comm."""
    if rs.done or comm_state.closed:
        return
    warnings.warn("kylix: a non-blocking request was dropped without wait(); its buffers "
                  "stay alive until the library completes it", ResourceWarning, stacklevel=2)
    with comm_state.lock:
        comm_state.abandoned.append(rs.ptr)
        comm_state.drop_hot()


class RequestHandle:
    """Owns one ``kylix_request`` and the arrays it reads and writes.

    ``wait()`` (or ``test()`` returning True) completes it; ``close()`` is ``wait()`` without
    raising the operation's error.  The arrays stay referenced (by the comm too) until the
    library reports completion, whatever happens to this object.
    """

    def __init__(self, comm: CommHandle, ptr: int, keep: tuple, result: Any = None,
                 call: str = "", on_done: Optional[Callable[[], None]] = None):
        self._comm = comm
        self._call = call
        self._result = result
        self._rstate = _RequestState(int(ptr), keep, on_done)
        cs = comm._state
        with cs.lock:
            cs.inflight[self._rstate.ptr] = self._rstate
        self._finalizer = weakref.finalize(self, _request_gc, cs, self._rstate)

    @property
    def done(self) -> bool:
        """True once the operation has completed (successfully or not)."""
        return self._rstate.done

    def _complete(self, status: int) -> None:
        rs = self._rstate
        cs = self._comm._state
        err: Optional[BaseException] = None
        if status != _raw.KYLIX_OK:
            err = error_for_status(status, errmsg(cs.ptr) if not cs.closed else errmsg(None),
                                   self._call or "kylix_wait")
        if rs.on_done is not None:
            try:
                rs.on_done()
            except BaseException as e:  # e.g. a user op that raised
                err = err or e
        rs.finish(err)
        with cs.lock:
            cs.inflight.pop(rs.ptr, None)
        self._finalizer.detach()

    def _raise_or_result(self):
        if self._rstate.error is not None:
            raise self._rstate.error
        return self._result

    def wait(self):
        """Block until the operation completes and return its result (raises its error).

        Calling it again returns the same result (or raises the same error).
        """
        rs = self._rstate
        if not rs.done:
            if _forked:
                raise _fork_error("kylix_wait")
            self._complete(_raw.kylix_wait(rs.ptr))
        return self._raise_or_result()

    def test(self) -> bool:
        """Poll without blocking: False while running; True once done (raises its error).

        Poll with a pause or useful work in between: progress does not depend on polling.
        """
        rs = self._rstate
        if not rs.done:
            if _forked:
                raise _fork_error("kylix_test")
            done = ctypes.c_int(0)
            status = _raw.kylix_test(rs.ptr, ctypes.byref(done))
            if not done.value:
                if status != _raw.KYLIX_OK:   # the request itself was unknown/freed
                    self._complete(status)
                else:
                    return False
            else:
                self._complete(status)
        self._raise_or_result()
        return True

    def close(self) -> None:
        """Complete the request (``kylix_wait``) if still running; never raises its error."""
        if not self._rstate.done:
            try:
                self.wait()
            except KylixError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()
