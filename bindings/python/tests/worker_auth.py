"""A rank with the wrong job secret is refused: AuthError on that rank; the others cannot form
the job and fail within the timeout (AuthError, TimeoutError, PeerError or NetworkError).
With PEERS (host:port,...) the ranks use that static table instead of the launcher's rendezvous,
so the ranks' own handshake has to refuse the secret.
Usage: worker_auth.py ODD_RANK TIMEOUT_MS [PEERS]"""

import os
import sys
import time

import numpy as np

import kylix
from _kyutil import Checker

odd = int(sys.argv[1])
timeout_ms = int(sys.argv[2])
extra = {"peers": sys.argv[3], "rendezvous": ""} if len(sys.argv) > 3 else {}
rank = int(os.environ["KYLIX_RANK"])
chk = Checker("auth", rank)
REFUSED = (kylix.AuthError, kylix.TimeoutError, kylix.PeerError, kylix.NetworkError)

t0 = time.monotonic()
try:
    if rank == odd:
        comm = kylix.init(secret=f"wrong-secret-{rank}", timeout_ms=timeout_ms, **extra)
    else:
        comm = kylix.init(timeout_ms=timeout_ms, **extra)
except kylix.KylixError as e:
    dt = time.monotonic() - t0
    chk.info(f"init raised {type(e).__name__} after {dt:.2f}s: {e}")
    if rank == odd:
        chk.ok(isinstance(e, kylix.AuthError) and e.status == 6 and e.message,
               f"wrong secret: AuthError with a message ({e.message})")
    else:
        chk.ok(isinstance(e, REFUSED), f"a good rank of a refused job: {type(e).__name__}")
    chk.ok(dt <= timeout_ms / 1000 + 3, f"init returned within the timeout ({dt:.2f}s)")
else:
    if odd < 0:
        comm.barrier()
        chk.ok(True, "control: everybody has the right secret")
        comm.close()
    else:
        chk.ok(rank != odd, "init succeeded on a good rank (lazy connect)")
        try:
            comm.barrier()
            chk.ok(False, "barrier in a job with a wrong-secret rank succeeded")
        except kylix.KylixError as e:
            chk.ok(isinstance(e, REFUSED), f"barrier refused: {type(e).__name__}: {e}")
        comm.close()
chk.finish()
