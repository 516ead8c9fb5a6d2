package org.kylix;

import java.nio.ByteOrder;

/**
 * The binding's own argument checks, for what the library cannot see: lengths of arrays and
 * buffers against the counts passed, byte order, read-only outputs, heap memory for non-blocking
 * calls. Each returns the problem, or null when there is none; the caller hands the first problem
 * to {@link CommHandle#rejectIf}. Every message starts with the call ("Plan.reduce: ..."), so it
 * reads the same as the peers' reason.
 */
final class ArgChecks {
  private ArgChecks() {}

  /** The first problem found, or null. */
  static RuntimeException first(RuntimeException... problems) {
    for (RuntimeException p : problems) {
      if (p != null) {
        return p;
      }
    }
    return null;
  }

  static ArgumentException argErr(String call, String arg, String what) {
    return new ArgumentException(call + ": " + arg + " " + what, arg);
  }

  static ArgumentException opGiven(String call, Op op) {
    return op == null ? argErr(call, "op", "is null") : null;
  }

  /**
   * The value checks of a call that reads nOut*width values from out and writes nIn*width into
   * in; {@code outCount} and {@code inCount} say where the counts come from, for the message
   * (e.g. "the plan's n_out"). A width below 1 is left to the library, which names it.
   */
  static RuntimeException rows(String call, Vals out, long nOut, String outCount, Vals in,
      long nIn, String inCount, int width) {
    return first(order(call, out), writable(call, in),
        width < 1 ? null : need(call, out, times(nOut, width),
            outCount + "*width = " + nOut + "*" + width),
        width < 1 ? null : need(call, in, times(nIn, width),
            inCount + "*width = " + nIn + "*" + width));
  }

  /** Checks that v offers at least n elements. */
  static ArgumentException need(String call, Vals v, long n, String why) {
    if (v.count >= n) {
      return null;
    }
    String has = v.owner == null ? "is null" : "has " + v.count + " elements";
    return argErr(call, v.name, has + " but " + why + " needs " + n);
  }

  /** Output checks: not read-only, native order if direct. */
  static ArgumentException writable(String call, Vals v) {
    if (v.owner != null && v.isReadOnly()) {
      return argErr(call, v.name, "is a read-only buffer but is written");
    }
    return order(call, v);
  }

  /** Input checks: a buffer type that fits the dtype, native order if direct. */
  static ArgumentException order(String call, Vals v) {
    if (v.problem != null) {
      return new ArgumentException(call + ": " + v.problem.detail(), v.problem.argument());
    }
    if (v.wrongOrder()) {
      return argErr(call, v.name, "is a direct buffer in " + Vals.order(v.owner)
          + " byte order; the library reads native order (" + ByteOrder.nativeOrder()
          + "): create it with ByteBuffer.allocateDirect(n).order(ByteOrder.nativeOrder())");
    }
    return null;
  }

  /** Non-blocking calls: direct buffers only. */
  static IllegalArgumentException direct(String call, Vals... vs) {
    for (Vals v : vs) {
      if (v.owner != null && !v.isDirect()) {
        return new IllegalArgumentException(call + ": " + v.name + " is a heap buffer (or a "
            + "wrapped Java array); non-blocking calls need direct buffers, because the library "
            + "keeps using the memory after the call returns and the JVM may move or copy heap "
            + "memory. Allocate with ByteBuffer.allocateDirect(n).order(ByteOrder.nativeOrder())"
            + " (.asFloatBuffer() etc.), or use the blocking call.");
      }
    }
    return null;
  }

  /** n*width, saturated (a count that overflows is too big for any buffer). */
  static long times(long n, int width) {
    try {
      return Math.multiplyExact(n, (long) Math.max(width, 1));
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE;
    }
  }
}
