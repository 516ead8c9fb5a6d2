package org.kylix;

import com.sun.jna.Pointer;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * A {@code kylix_comm *} and what every call on it shares: whether it is closed, the turn of a
 * status into an exception with the comm's message, the one way a rank gives up its turn ({@link
 * #rejectIf}), the native scratch memory of blocking calls, and the plans and requests that
 * {@link #close} must release. {@link Comm}, its {@link Plan}s and {@link Request}s share one.
 */
final class CommHandle {
  final Pointer ptr;
  final int rank;
  final int size;
  private boolean closed;
  private final Stage.Scratch scratch = new Stage.Scratch();
  private final Set<Plan> plans = new LinkedHashSet<>();
  private final Set<Request> requests = new LinkedHashSet<>();

  CommHandle(Pointer ptr) {
    this.ptr = ptr;
    this.rank = KylixNative.kylix_rank(ptr);
    this.size = KylixNative.kylix_size(ptr);
  }

  boolean isClosed() {
    return closed;
  }

  /**
   * {@code kylix_finalize}, then marks the plans closed, abandons the requests still in flight
   * and frees the scratch memory. Calling it again does nothing.
   *
   * @throws KylixException if closing the sockets failed (released anyway)
   */
  void close() {
    if (closed) {
      return;
    }
    closed = true;
    int st = KylixNative.kylix_finalize(ptr);
    String msg = st == 0 ? null : KylixNative.kylix_errmsg(null);
    for (Plan p : plans) {
      p.markClosed();
    }
    plans.clear();
    for (Request r : new ArrayList<>(requests)) {
      r.abandon();
    }
    requests.clear();
    scratch.release();
    if (st != 0) {
      throw KylixException.of(st, msg);
    }
  }

  /** Fails a call on a closed comm; {@code call} is the Java name, e.g. "Plan.reduce". */
  void checkOpen(String call) {
    if (closed) {
      throw new StateException(call + ": the comm is closed");
    }
  }

  /**
   * The one way a rank gives up its turn. When {@code bad} is not null (a problem the binding
   * found, see {@link ArgChecks}), this rank does not make the collective the other ranks are
   * making; it calls {@code kylix_reject} with bad's message as the reason, so their matching
   * call fails with a {@link MismatchException} naming this rank and that reason instead of
   * waiting, the comm stays usable everywhere, and bad is thrown here.
   */
  void rejectIf(RuntimeException bad) {
    if (bad == null) {
      return;
    }
    String reason = bad instanceof KylixException ? ((KylixException) bad).detail()
        : bad.getMessage();
    // Fails only when the comm is finalized or broken; the next call reports that.
    KylixNative.kylix_reject(ptr, reason);
    throw bad;
  }

  /** Throws the exception of a failed status, with this comm's message. */
  void check(int st) {
    if (st == 0) {
      return;
    }
    String msg = closed ? KylixNative.kylix_errmsg(null) : KylixNative.kylix_errmsg(ptr);
    if (msg == null || msg.isEmpty() || msg.startsWith("kylix_errmsg: comm was finalized")) {
      String tls = KylixNative.kylix_errmsg(null);
      msg = tls == null || tls.isEmpty() ? KylixNative.kylix_strerror(st) : tls;
    }
    throw KylixException.of(st, msg);
  }

  /**
   * {@link #check(int)} for a call that ran op: a failed status wins; after a successful one,
   * what a user op threw during the call is raised (and cleared either way).
   */
  void check(int st, Op op, String call) {
    Throwable thrown = op != null && op.callback != null ? op.callback.takeFailure() : null;
    check(st);
    if (thrown != null) {
      throw new InternalException(call + ": " + op + " threw " + thrown
          + "; the results of this call are undefined", thrown);
    }
  }

  /** The pointers of one blocking call, staged through this comm's scratch memory. */
  Stage stage() {
    return new Stage(scratch);
  }

  /** This comm's scratch memory, for the lean path of blocking calls on arrays (see Stage). */
  Stage.Scratch scratch() {
    return scratch;
  }

  Plan adopt(Plan p) {
    plans.add(p);
    return p;
  }

  void forget(Plan p) {
    plans.remove(p);
  }

  /** Keeps a started request, and so its buffers, reachable until it completes. */
  Request track(Request r) {
    requests.add(r);
    Request.INFLIGHT.add(r);
    return r;
  }

  void untrack(Request r) {
    requests.remove(r);
    Request.INFLIGHT.remove(r);
  }
}
