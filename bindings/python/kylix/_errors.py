"""Statuses of the C library as Python exceptions.

Every non-OK status of a kylix_* call becomes an instance of one :class:`KylixError`
subclass, carrying the status value (``.status``), the name of the C call (``.call``) and
the library's detail message (``.message``: ``kylix_errmsg`` of the comm, or of NULL when
the call had no live comm, e.g. ``kylix_init``).  Where a builtin exception means the same
thing, the subclass also derives from it, so ``except ValueError`` / ``except TimeoutError``
/ ``except OSError`` / ``except MemoryError`` work as a Python user expects.
"""

from __future__ import annotations

import builtins
from typing import Optional

from . import _raw

__all__ = [
    "KylixError", "ArgumentError", "StateError", "TimeoutError", "PeerError",
    "MismatchError", "AuthError", "NetworkError", "NoMemoryError", "InternalError",
    "UserOpError", "error_for_status", "strerror",
]


def strerror(status: int) -> str:
    """The library's short description of a status value (``kylix_strerror``)."""
    s = _raw.kylix_strerror(int(status))
    return s.decode("utf-8", "replace") if s else "unknown status"


_NAMES = {
    _raw.KYLIX_OK: "KYLIX_OK",
    _raw.KYLIX_ERR_ARG: "KYLIX_ERR_ARG",
    _raw.KYLIX_ERR_STATE: "KYLIX_ERR_STATE",
    _raw.KYLIX_ERR_TIMEOUT: "KYLIX_ERR_TIMEOUT",
    _raw.KYLIX_ERR_PEER: "KYLIX_ERR_PEER",
    _raw.KYLIX_ERR_MISMATCH: "KYLIX_ERR_MISMATCH",
    _raw.KYLIX_ERR_AUTH: "KYLIX_ERR_AUTH",
    _raw.KYLIX_ERR_NET: "KYLIX_ERR_NET",
    _raw.KYLIX_ERR_NOMEM: "KYLIX_ERR_NOMEM",
    _raw.KYLIX_ERR_INTERNAL: "KYLIX_ERR_INTERNAL",
}


class KylixError(Exception):
    """A kylix_* call failed.

    Attributes:
        status: the ``enum kylix_status`` value (an ``int``).
        call: the C function (or Python check) that failed, e.g. ``"kylix_reduce"``.
        message: the library's detail message (which argument, which rank), may be ``""``.
    """

    status: int = _raw.KYLIX_ERR_INTERNAL

    def __init__(self, message: str = "", *, status: Optional[int] = None, call: str = ""):
        if status is not None:
            self.status = int(status)
        self.call = call
        self.message = message
        name = _NAMES.get(self.status, f"status {self.status}")
        head = f"{call}: " if call else ""
        text = f"{head}{strerror(self.status)} ({name})"
        if message:
            # the library's messages usually start with the call's name already
            detail = message[len(call) + 2:] if call and message.startswith(call + ": ") else message
            text += f": {detail}"
        # Exception.__init__ with one argument, also for the OSError subclasses (two
        # arguments would be read as (errno, strerror)).
        Exception.__init__(self, text)

    def __str__(self) -> str:  # OSError's __str__ would format errno/strerror
        return self.args[0] if self.args else ""

    def __reduce__(self):  # picklable across multiprocessing (keyword-only arguments)
        return (_rebuild, (type(self), self.message, self.status, self.call))


def _rebuild(cls, message, status, call):
    return cls(message, status=status, call=call)


class ArgumentError(KylixError, ValueError):
    """KYLIX_ERR_ARG: a bad argument; the message names it."""
    status = _raw.KYLIX_ERR_ARG


class StateError(KylixError):
    """KYLIX_ERR_STATE: call out of order, handle closed, comm broken, or used after fork()."""
    status = _raw.KYLIX_ERR_STATE


class TimeoutError(KylixError, builtins.TimeoutError):  # noqa: A001 (shadows the builtin on purpose)
    """KYLIX_ERR_TIMEOUT: a peer did not answer within timeout_ms (the rank is named)."""
    status = _raw.KYLIX_ERR_TIMEOUT


class PeerError(KylixError):
    """KYLIX_ERR_PEER: a peer failed and no replica could stand in (the rank is named)."""
    status = _raw.KYLIX_ERR_PEER


class MismatchError(KylixError):
    """KYLIX_ERR_MISMATCH: ranks disagree on the collective, dtype, op, width or count."""
    status = _raw.KYLIX_ERR_MISMATCH


class AuthError(KylixError):
    """KYLIX_ERR_AUTH: a peer failed the handshake (wrong secret, job or version)."""
    status = _raw.KYLIX_ERR_AUTH


class NetworkError(KylixError, OSError):
    """KYLIX_ERR_NET: socket error (cannot bind, connect, resolve)."""
    status = _raw.KYLIX_ERR_NET


class NoMemoryError(KylixError, MemoryError):
    """KYLIX_ERR_NOMEM: the library ran out of memory."""
    status = _raw.KYLIX_ERR_NOMEM


class InternalError(KylixError):
    """KYLIX_ERR_INTERNAL: a bug in the library, or a call that is not implemented yet."""
    status = _raw.KYLIX_ERR_INTERNAL


class UserOpError(KylixError):
    """A Python reduction op (:func:`kylix.op_create`) raised during a collective.

    The collective itself completed on every rank (the library cannot abort it), but the
    elements the failing callback should have combined hold unspecified values.  The
    callback's exception is the ``__cause__``.
    """
    status = _raw.KYLIX_ERR_INTERNAL


_BY_STATUS = {
    cls.status: cls
    for cls in (ArgumentError, StateError, TimeoutError, PeerError, MismatchError, AuthError,
                NetworkError, NoMemoryError, InternalError)
}


def error_for_status(status: int, message: str = "", call: str = "") -> KylixError:
    """The exception for a non-OK status (an unknown value gives a plain KylixError)."""
    cls = _BY_STATUS.get(int(status), KylixError)
    return cls(message, status=status, call=call)
