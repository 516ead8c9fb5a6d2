package org.kylix;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import java.nio.Buffer;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A non-blocking operation in flight ({@code kylix_request}), from {@link Plan#ireduce} or
 * {@link Comm#iallreduce}. Complete it with {@link #waitFor()} or by polling {@link #test()}.
 * Until then the library reads and writes its buffers, and this object keeps them reachable (a
 * request nobody completes stays in flight, with its buffers, until its comm is closed).
 * Requests of a comm run in the order they were started and may be completed in any order.
 */
public final class Request {
  /** Requests not yet completed: keeps them and their buffers reachable whatever the caller does. */
  static final Set<Request> INFLIGHT = ConcurrentHashMap.newKeySet();

  private final CommHandle live;
  private final Pointer handle;
  private final String call;
  private final Op op;
  private Buffer out;
  private Buffer in;
  private boolean done;
  private KylixException failure;

  Request(CommHandle live, Pointer handle, String call, Op op, Buffer out, Buffer in) {
    this.live = live;
    this.handle = handle;
    this.call = call;
    this.op = op;
    this.out = out;
    this.in = in;
  }

  /** Whether the operation has completed (waitFor returned or test returned true). */
  public boolean isDone() {
    return done;
  }

  /** The raw {@code kylix_request *} handle (invalid once the request is done). */
  public Pointer handle() {
    return handle;
  }

  /**
   * Blocks until the operation has completed ({@code kylix_wait}); afterwards the library no
   * longer touches the buffers, whatever the outcome. Calling it again returns at once (and
   * throws the same exception if the operation failed).
   *
   * @throws KylixException the operation's failure: {@link MismatchException}, {@link
   *     TimeoutException}, {@link PeerException}, {@link StateException}...
   */
  public void waitFor() {
    if (!done) {
      int st = KylixNative.kylix_wait(handle);
      complete(st);
    }
    if (failure != null) {
      throw failure;
    }
  }

  /**
   * Polls without blocking ({@code kylix_test}): false while the operation runs; true once it
   * has completed (and from then on). Poll with a pause or useful work in between; progress does
   * not depend on polling.
   *
   * @throws KylixException when it has completed with a failure
   */
  public boolean test() {
    if (!done) {
      IntByReference d = new IntByReference();
      int st = KylixNative.kylix_test(handle, d);
      if (d.getValue() == 0) {
        if (st != 0) { // the poll itself failed; the request stays valid
          live.check(st);
        }
        return false;
      }
      complete(st);
    }
    if (failure != null) {
      throw failure;
    }
    return true;
  }

  private void complete(int st) {
    done = true;
    try {
      live.check(st, op, call);
    } catch (KylixException e) {
      failure = e;
    }
    release();
  }

  /** The comm was closed first: kylix_finalize finished and freed the request. */
  void abandon() {
    if (!done) {
      done = true;
      failure = new StateException(call + ": the comm was closed before the request was waited"
          + " for; the library finished it, its status is lost");
      release();
    }
  }

  private void release() {
    out = null;
    in = null;
    live.untrack(this);
  }

  @Override
  public String toString() {
    return "Request[" + call + (done ? ", done]" : ", in flight]");
  }
}
