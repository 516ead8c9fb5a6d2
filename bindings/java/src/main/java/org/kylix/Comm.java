package org.kylix;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.lang.ref.Reference;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

/**
 * One process's membership in a Kylix job ({@code kylix_comm}). Made by {@link Kylix#init};
 * release it with {@link #close()} (try-with-resources), which also frees its plans.
 *
 * <p><b>Collectives</b> (config, configReduce, reduce, allreduce, bcast, barrier, mix and their
 * non-blocking forms) must be called by every rank, in the same order, with agreeing dtype, op,
 * width and count. A disagreement raises {@link MismatchException} on every rank, never a hang. A
 * rank whose arguments are bad (checked by the binding or by the library) gets an {@link
 * ArgumentException} naming the argument and still takes its turn, so its peers get a {@link
 * MismatchException} and the comm stays usable everywhere.
 *
 * <p><b>Memory.</b> Blocking calls take Java arrays or NIO buffers. Direct buffers in native
 * byte order are handed to the library as they are (zero copy); arrays and heap buffers are
 * copied through native scratch memory owned by the comm (which keeps the size of the largest
 * call). A buffer argument uses the elements from its position to its limit; position and limit
 * are never changed. An output is written only when the call succeeds. Non-blocking calls
 * ({@link #iallreduce}, {@link Plan#ireduce}) take direct buffers only.
 *
 * <p><b>Threads.</b> A comm, its plans and its requests are used by one thread at a time
 * (different comms may be used from different threads at once). Nothing here is synchronized.
 * No Cleaner frees a forgotten comm: freeing from a GC thread would break that rule, so close
 * it.
 */
public final class Comm implements AutoCloseable {
  final Pointer handle;
  private final int rank;
  private final int size;
  private boolean closed;
  private final Stage.Scratch scratch = new Stage.Scratch();
  private final Set<Plan> plans = new LinkedHashSet<>();
  final Set<Request> requests = new LinkedHashSet<>();

  Comm(Pointer handle) {
    this.handle = handle;
    this.rank = KylixNative.kylix_rank(handle);
    this.size = KylixNative.kylix_size(handle);
  }

  /** This rank, 0..size()-1. */
  public int rank() {
    return rank;
  }

  /** The number of ranks. */
  public int size() {
    return size;
  }

  /** Whether {@link #close()} was called. */
  public boolean isClosed() {
    return closed;
  }

  /** The raw {@code kylix_comm *} handle, for {@link KylixNative} calls. */
  public Pointer handle() {
    return handle;
  }

  /**
   * Leaves the job ({@code kylix_finalize}): finishes the non-blocking requests still in flight
   * (their statuses are lost: wait for them first), frees every plan of this comm and closes the
   * sockets. Not a collective: peers still waiting on this rank see a {@link PeerException}.
   * Calling it again does nothing.
   *
   * @throws KylixException if closing the sockets failed (the comm is released anyway)
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    int st = KylixNative.kylix_finalize(handle);
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

  @Override
  public String toString() {
    return "Comm[rank " + rank + " of " + size + (closed ? ", closed]" : "]");
  }

  // ---- sparse --------------------------------------------------------------------------------

  /**
   * Configures the routes for one pair of index sets ({@code kylix_config}). Collective.
   *
   * @param outIdx the indices this rank will contribute values for (&gt;= 0, any order,
   *     repeats allowed); null means none
   * @param inIdx the indices this rank wants results for; null means none
   * @return a plan to {@link Plan#reduce} with any number of times; close it when done
   */
  public Plan config(long[] outIdx, long[] inIdx) {
    return doConfig(Vals.of("outIdx", outIdx), Vals.of("inIdx", inIdx));
  }

  /**
   * {@link #config(long[], long[])} with the indices in buffers (position to limit; direct
   * buffers are read in place).
   */
  public Plan config(LongBuffer outIdx, LongBuffer inIdx) {
    return doConfig(Vals.of("outIdx", outIdx), Vals.of("inIdx", inIdx));
  }

  /**
   * Configures and reduces in one pass ({@code kylix_config_reduce} without keeping the plan),
   * for index sets that change every call (mini-batches). Collective.
   *
   * @param outIdx indices this rank contributes
   * @param outVals outIdx.length values, one per index
   * @param inIdx indices this rank wants
   * @param inVals receives inIdx.length values: op over every rank's contributions
   * @param op the reduction
   */
  public void configReduce(long[] outIdx, double[] outVals, long[] inIdx, double[] inVals, Op op) {
    configReduce(outIdx, outVals, inIdx, inVals, op, 1);
  }

  /**
   * {@link #configReduce(long[], double[], long[], double[], Op)} with {@code width} values per
   * index (row-major: values[j*width .. j*width+width) belong to index j).
   */
  public void configReduce(long[] outIdx, double[] outVals, long[] inIdx, double[] inVals, Op op,
      int width) {
    doConfigReduce(idx(outIdx, inIdx), Vals.of("outVals", outVals), Vals.of("inVals", inVals),
        op, width, false);
  }

  /** See {@link #configReduce(long[], double[], long[], double[], Op)}. */
  public void configReduce(long[] outIdx, float[] outVals, long[] inIdx, float[] inVals, Op op) {
    configReduce(outIdx, outVals, inIdx, inVals, op, 1);
  }

  /** See {@link #configReduce(long[], double[], long[], double[], Op, int)}. */
  public void configReduce(long[] outIdx, float[] outVals, long[] inIdx, float[] inVals, Op op,
      int width) {
    doConfigReduce(idx(outIdx, inIdx), Vals.of("outVals", outVals), Vals.of("inVals", inVals),
        op, width, false);
  }

  /** See {@link #configReduce(long[], double[], long[], double[], Op)}. */
  public void configReduce(long[] outIdx, int[] outVals, long[] inIdx, int[] inVals, Op op) {
    configReduce(outIdx, outVals, inIdx, inVals, op, 1);
  }

  /** See {@link #configReduce(long[], double[], long[], double[], Op, int)}. */
  public void configReduce(long[] outIdx, int[] outVals, long[] inIdx, int[] inVals, Op op,
      int width) {
    doConfigReduce(idx(outIdx, inIdx), Vals.of("outVals", outVals), Vals.of("inVals", inVals),
        op, width, false);
  }

  /** See {@link #configReduce(long[], double[], long[], double[], Op)}. */
  public void configReduce(long[] outIdx, long[] outVals, long[] inIdx, long[] inVals, Op op) {
    configReduce(outIdx, outVals, inIdx, inVals, op, 1);
  }

  /** See {@link #configReduce(long[], double[], long[], double[], Op, int)}. */
  public void configReduce(long[] outIdx, long[] outVals, long[] inIdx, long[] inVals, Op op,
      int width) {
    doConfigReduce(idx(outIdx, inIdx), Vals.of("outVals", outVals), Vals.of("inVals", inVals),
        op, width, false);
  }

  /**
   * {@link #configReduce(long[], double[], long[], double[], Op, int)} with buffers of any
   * element type: ByteBuffers (remaining bytes / dtype size elements) or typed buffers whose
   * element size matches {@code dtype} (use this with {@link DType#U64}).
   */
  public void configReduce(LongBuffer outIdx, Buffer outVals, LongBuffer inIdx, Buffer inVals,
      DType dtype, Op op, int width) {
    Vals[] ix = {Vals.of("outIdx", outIdx), Vals.of("inIdx", inIdx)};
    Vals[] v = typed(outVals, inVals, dtype);
    doConfigReduce(ix, v[0], v[1], op, width, false);
  }

  /**
   * Like {@link #configReduce(long[], double[], long[], double[], Op, int)}, and keeps the routes
   * as a plan for later {@link Plan#reduce} calls with the same index sets.
   *
   * @return the plan; close it when done
   */
  public Plan configReduceKeepPlan(long[] outIdx, double[] outVals, long[] inIdx, double[] inVals,
      Op op, int width) {
    return doConfigReduce(idx(outIdx, inIdx), Vals.of("outVals", outVals),
        Vals.of("inVals", inVals), op, width, true);
  }

  /** See {@link #configReduceKeepPlan(long[], double[], long[], double[], Op, int)}. */
  public Plan configReduceKeepPlan(long[] outIdx, float[] outVals, long[] inIdx, float[] inVals,
      Op op, int width) {
    return doConfigReduce(idx(outIdx, inIdx), Vals.of("outVals", outVals),
        Vals.of("inVals", inVals), op, width, true);
  }

  /** See {@link #configReduceKeepPlan(long[], double[], long[], double[], Op, int)}. */
  public Plan configReduceKeepPlan(long[] outIdx, int[] outVals, long[] inIdx, int[] inVals,
      Op op, int width) {
    return doConfigReduce(idx(outIdx, inIdx), Vals.of("outVals", outVals),
        Vals.of("inVals", inVals), op, width, true);
  }

  /** See {@link #configReduceKeepPlan(long[], double[], long[], double[], Op, int)}. */
  public Plan configReduceKeepPlan(long[] outIdx, long[] outVals, long[] inIdx, long[] inVals,
      Op op, int width) {
    return doConfigReduce(idx(outIdx, inIdx), Vals.of("outVals", outVals),
        Vals.of("inVals", inVals), op, width, true);
  }

  /**
   * See {@link #configReduceKeepPlan(long[], double[], long[], double[], Op, int)} and {@link
   * #configReduce(LongBuffer, Buffer, LongBuffer, Buffer, DType, Op, int)}.
   */
  public Plan configReduceKeepPlan(LongBuffer outIdx, Buffer outVals, LongBuffer inIdx,
      Buffer inVals, DType dtype, Op op, int width) {
    Vals[] ix = {Vals.of("outIdx", outIdx), Vals.of("inIdx", inIdx)};
    Vals[] v = typed(outVals, inVals, dtype);
    return doConfigReduce(ix, v[0], v[1], op, width, true);
  }

  // ---- dense ---------------------------------------------------------------------------------

  /**
   * Dense allreduce ({@code kylix_allreduce}): recv[i] = op over every rank's send[i], for
   * send.length elements. Collective; every rank passes the same count. send == recv works in
   * place.
   *
   * @param send this rank's values
   * @param recv receives the result; at least send.length elements
   */
  public void allreduce(double[] send, double[] recv, Op op) {
    doAllreduce(Vals.of("send", send), Vals.of("recv", recv), op);
  }

  /** In-place {@link #allreduce(double[], double[], Op)}. */
  public void allreduce(double[] buf, Op op) {
    Vals v = Vals.of("buf", buf);
    doAllreduce(v, v, op);
  }

  /** See {@link #allreduce(double[], double[], Op)}. */
  public void allreduce(float[] send, float[] recv, Op op) {
    doAllreduce(Vals.of("send", send), Vals.of("recv", recv), op);
  }

  /** In-place {@link #allreduce(float[], float[], Op)}. */
  public void allreduce(float[] buf, Op op) {
    Vals v = Vals.of("buf", buf);
    doAllreduce(v, v, op);
  }

  /** See {@link #allreduce(double[], double[], Op)}. */
  public void allreduce(int[] send, int[] recv, Op op) {
    doAllreduce(Vals.of("send", send), Vals.of("recv", recv), op);
  }

  /** In-place {@link #allreduce(int[], int[], Op)}. */
  public void allreduce(int[] buf, Op op) {
    Vals v = Vals.of("buf", buf);
    doAllreduce(v, v, op);
  }

  /** See {@link #allreduce(double[], double[], Op)}. */
  public void allreduce(long[] send, long[] recv, Op op) {
    doAllreduce(Vals.of("send", send), Vals.of("recv", recv), op);
  }

  /** In-place {@link #allreduce(long[], long[], Op)}. */
  public void allreduce(long[] buf, Op op) {
    Vals v = Vals.of("buf", buf);
    doAllreduce(v, v, op);
  }

  /**
   * {@link #allreduce(double[], double[], Op)} over buffers: send.remaining() elements (for a
   * ByteBuffer, remaining bytes / dtype size); the same buffer for send and recv works in place.
   */
  public void allreduce(Buffer send, Buffer recv, DType dtype, Op op) {
    Vals[] v = typed(send, recv, dtype, "send", "recv");
    doAllreduce(v[0], v[1], op);
  }

  /** {@link #allreduce(Buffer, Buffer, DType, Op)} with the dtype of the buffer type. */
  public void allreduce(FloatBuffer send, FloatBuffer recv, Op op) {
    doAllreduce(Vals.of("send", send), Vals.of("recv", recv), op);
  }

  /** {@link #allreduce(Buffer, Buffer, DType, Op)} with the dtype of the buffer type. */
  public void allreduce(DoubleBuffer send, DoubleBuffer recv, Op op) {
    doAllreduce(Vals.of("send", send), Vals.of("recv", recv), op);
  }

  /** {@link #allreduce(Buffer, Buffer, DType, Op)} with the dtype of the buffer type. */
  public void allreduce(IntBuffer send, IntBuffer recv, Op op) {
    doAllreduce(Vals.of("send", send), Vals.of("recv", recv), op);
  }

  /** {@link #allreduce(Buffer, Buffer, DType, Op)} with the dtype of the buffer type. */
  public void allreduce(LongBuffer send, LongBuffer recv, Op op) {
    doAllreduce(Vals.of("send", send), Vals.of("recv", recv), op);
  }

  /**
   * Non-blocking dense allreduce ({@code kylix_iallreduce}) over direct buffers. Collective: the
   * start counts as the call. The library reads send and writes recv from its own threads until
   * the request completes: do not touch them until {@link Request#waitFor()} returns or {@link
   * Request#test()} returns true. The request keeps both buffers reachable until then.
   *
   * @throws IllegalArgumentException if a buffer is not direct (a heap array or heap buffer
   *     would be moved or copied by the JVM while the library writes it)
   */
  public Request iallreduce(FloatBuffer send, FloatBuffer recv, Op op) {
    return doIAllreduce(Vals.of("send", send), Vals.of("recv", recv), op);
  }

  /** See {@link #iallreduce(FloatBuffer, FloatBuffer, Op)}. */
  public Request iallreduce(DoubleBuffer send, DoubleBuffer recv, Op op) {
    return doIAllreduce(Vals.of("send", send), Vals.of("recv", recv), op);
  }

  /** See {@link #iallreduce(FloatBuffer, FloatBuffer, Op)}. */
  public Request iallreduce(IntBuffer send, IntBuffer recv, Op op) {
    return doIAllreduce(Vals.of("send", send), Vals.of("recv", recv), op);
  }

  /** See {@link #iallreduce(FloatBuffer, FloatBuffer, Op)}. */
  public Request iallreduce(LongBuffer send, LongBuffer recv, Op op) {
    return doIAllreduce(Vals.of("send", send), Vals.of("recv", recv), op);
  }

  /** See {@link #iallreduce(FloatBuffer, FloatBuffer, Op)}; any buffer type with a dtype. */
  public Request iallreduce(Buffer send, Buffer recv, DType dtype, Op op) {
    Vals[] v = typed(send, recv, dtype, "send", "recv");
    return doIAllreduce(v[0], v[1], op);
  }

  /**
   * Broadcast ({@code kylix_bcast}): copies root's buf to every rank. Collective; the length and
   * root must agree on every rank.
   */
  public void bcast(byte[] buf, int root) {
    doBcast(Vals.bytes("buf", buf == null ? null : ByteBuffer.wrap(buf)), root);
  }

  /** See {@link #bcast(byte[], int)}. */
  public void bcast(double[] buf, int root) {
    doBcast(Vals.bytes("buf", buf == null ? null : DoubleBuffer.wrap(buf)), root);
  }

  /** See {@link #bcast(byte[], int)}. */
  public void bcast(float[] buf, int root) {
    doBcast(Vals.bytes("buf", buf == null ? null : FloatBuffer.wrap(buf)), root);
  }

  /** See {@link #bcast(byte[], int)}. */
  public void bcast(int[] buf, int root) {
    doBcast(Vals.bytes("buf", buf == null ? null : IntBuffer.wrap(buf)), root);
  }

  /** See {@link #bcast(byte[], int)}. */
  public void bcast(long[] buf, int root) {
    doBcast(Vals.bytes("buf", buf == null ? null : LongBuffer.wrap(buf)), root);
  }

  /** See {@link #bcast(byte[], int)}: the buffer's remaining elements, any buffer type. */
  public void bcast(Buffer buf, int root) {
    doBcast(Vals.bytes("buf", buf), root);
  }

  /** Returns once every rank has entered the barrier ({@code kylix_barrier}). Collective. */
  public void barrier() {
    checkOpen("barrier");
    check(KylixNative.kylix_barrier(handle));
  }

  /**
   * One butterfly mixing step ({@code kylix_mix}): replaces buf with its average over this
   * rank's group at layer (step mod L). After L consecutive steps with no other change every
   * rank holds the global mean. Collective; every rank passes the same step and length.
   *
   * @param step &gt;= 0, e.g. the iteration number
   */
  public void mix(double[] buf, long step) {
    doMix(Vals.of("buf", buf), step);
  }

  /** See {@link #mix(double[], long)}. */
  public void mix(float[] buf, long step) {
    doMix(Vals.of("buf", buf), step);
  }

  /** See {@link #mix(double[], long)}. */
  public void mix(DoubleBuffer buf, long step) {
    doMix(Vals.of("buf", buf), step);
  }

  /** See {@link #mix(double[], long)}. */
  public void mix(FloatBuffer buf, long step) {
    doMix(Vals.of("buf", buf), step);
  }

  // ---- failures, observability ---------------------------------------------------------------

  /** The ranks of this comm known to have failed ({@code kylix_failed_ranks}). Local. */
  public int[] failedRanks() {
    checkOpen("failedRanks");
    int cap = Math.max(size, 1);
    Memory m = new Memory(4L * cap);
    IntByReference n = new IntByReference();
    check(KylixNative.kylix_failed_ranks(handle, m, cap, n));
    return m.getIntArray(0, Math.min(n.getValue(), cap));
  }

  /**
   * A new comm of the surviving ranks, renumbered 0..k-1 ({@code kylix_shrink}). Collective over
   * the survivors. This comm stays broken and must still be closed.
   */
  public Comm shrink() {
    checkOpen("shrink");
    PointerByReference out = new PointerByReference();
    check(KylixNative.kylix_shrink(handle, out));
    return new Comm(out.getValue());
  }

  /**
   * What this comm has done, as the library's JSON object ({@code kylix_stats_json}): traffic,
   * time per phase, calls and errors per collective, per-plan layer shapes. Local.
   */
  public String stats() {
    checkOpen("stats");
    LongByReference needed = new LongByReference();
    long cap = 0;
    Memory m = null;
    for (int attempt = 0; ; attempt++) {
      int st = KylixNative.kylix_stats_json(handle, m, cap, needed);
      if (st == 0) {
        return m.getString(0, StandardCharsets.UTF_8.name());
      }
      if (st != KylixNative.KYLIX_ERR_ARG || needed.getValue() <= cap || attempt > 4) {
        check(st);
      }
      cap = needed.getValue() + 256;
      m = new Memory(cap);
    }
  }

  /**
   * {@link #stats()} parsed: objects become {@code Map<String,Object>} (in order), arrays {@code
   * List<Object>}, integers {@code Long}, other numbers {@code Double}.
   */
  @SuppressWarnings("unchecked")
  public Map<String, Object> statsMap() {
    return (Map<String, Object>) Json.parse(stats());
  }

  /** Zeroes the counters and timers of {@link #stats()} ({@code kylix_stats_reset}). Local. */
  public void statsReset() {
    checkOpen("statsReset");
    check(KylixNative.kylix_stats_reset(handle));
  }

  // ---- implementation ------------------------------------------------------------------------

  private static Vals[] idx(long[] outIdx, long[] inIdx) {
    return new Vals[] {Vals.of("outIdx", outIdx), Vals.of("inIdx", inIdx)};
  }

  private static Vals[] typed(Buffer a, Buffer b, DType dtype) {
    return typed(a, b, dtype, "outVals", "inVals");
  }

  static Vals[] typed(Buffer a, Buffer b, DType dtype, String an, String bn) {
    return new Vals[] {Vals.of(an, a, dtype), Vals.of(bn, b, dtype)};
  }

  void checkOpen(String call) {
    if (closed) {
      throw new StateException("Comm." + call + ": the comm is closed");
    }
  }

  /** Throws the exception of a failed status, with this comm's message. */
  void check(int st) {
    if (st == 0) {
      return;
    }
    String msg = closed ? KylixNative.kylix_errmsg(null) : KylixNative.kylix_errmsg(handle);
    if (msg == null || msg.isEmpty() || msg.startsWith("kylix_errmsg: comm was finalized")) {
      String tls = KylixNative.kylix_errmsg(null);
      msg = tls == null || tls.isEmpty() ? KylixNative.kylix_strerror(st) : tls;
    }
    throw KylixException.of(st, msg);
  }

  /** What a user op threw during the call just made (and clears it), or null. */
  static Throwable userOpFailure(Op op) {
    return op != null && op.callback != null ? op.callback.takeFailure() : null;
  }

  /** Raises what a user op threw, if anything (after the call's own status was checked). */
  static void raiseUserOp(Throwable t, Op op, String call) {
    if (t != null) {
      throw new InternalException(call + ": " + op + " threw " + t
          + "; the results of this call are undefined", t);
    }
  }

  /** A problem the binding found: the rank still takes its turn through a rejected call. */
  private RuntimeException reject(Runnable rejectedCall, RuntimeException e) {
    rejectedCall.run(); // takes this rank's slot in the collective; its status is ours already
    return e;
  }

  private static ArgumentException argErr(String call, String arg, String what) {
    return new ArgumentException(call + ": " + arg + " " + what, arg);
  }

  /** Checks that v offers at least n elements; returns the problem or null. */
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

  static ArgumentException order(String call, Vals v) {
    if (v.problem != null) {
      return new ArgumentException(call + ": " + v.problem.detail(), v.problem.argument());
    }
    if (v.wrongOrder()) {
      return argErr(call, v.name, "is a direct buffer in " + Vals.order(v.owner)
          + " byte order; the library reads native order (" + java.nio.ByteOrder.nativeOrder()
          + "): create it with ByteBuffer.allocateDirect(n).order(ByteOrder.nativeOrder())");
    }
    return null;
  }

  static long times(long n, int width) {
    try {
      return Math.multiplyExact(n, (long) Math.max(width, 1));
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE;
    }
  }

  static ArgumentException first(ArgumentException... es) {
    for (ArgumentException e : es) {
      if (e != null) {
        return e;
      }
    }
    return null;
  }

  private Plan addPlan(Pointer h, long nOut, long nIn) {
    Plan p = new Plan(this, h, nOut, nIn);
    plans.add(p);
    return p;
  }

  void forget(Plan p) {
    plans.remove(p);
  }

  private Plan doConfig(Vals outIdx, Vals inIdx) {
    final String call = "Comm.config";
    checkOpen("config");
    ArgumentException bad = first(order(call, outIdx), order(call, inIdx));
    if (bad != null) {
      throw reject(() -> KylixNative.kylix_config(handle, null, -1, null, 0,
          new PointerByReference()), bad);
    }
    PointerByReference out = new PointerByReference();
    try {
      Stage s = new Stage(scratch);
      int a = s.add(outIdx, outIdx.count * 8, Stage.IN);
      int b = s.add(inIdx, inIdx.count * 8, Stage.IN);
      s.prepare();
      check(KylixNative.kylix_config(handle, s.ptr(a), outIdx.count, s.ptr(b), inIdx.count, out));
      return addPlan(out.getValue(), outIdx.count, inIdx.count);
    } finally {
      Reference.reachabilityFence(outIdx.owner);
      Reference.reachabilityFence(inIdx.owner);
    }
  }

  private Plan doConfigReduce(Vals[] ix, Vals outVals, Vals inVals, Op op, int width,
      boolean keep) {
    final String call = "Comm.configReduce";
    checkOpen("configReduce");
    Vals outIdx = ix[0], inIdx = ix[1];
    ArgumentException bad = first(op == null ? argErr(call, "op", "is null") : null,
        order(call, outIdx), order(call, inIdx), order(call, outVals), writable(call, inVals),
        width < 1 ? null : need(call, outVals, times(outIdx.count, width),
            "outIdx.length*width = " + outIdx.count + "*" + width),
        width < 1 ? null : need(call, inVals, times(inIdx.count, width),
            "inIdx.length*width = " + inIdx.count + "*" + width));
    if (bad != null) {
      throw reject(() -> KylixNative.kylix_config_reduce(handle, null, -1, null, null, 0, null,
          outVals.dtype.code(), 0, 0, keep ? new PointerByReference() : null), bad);
    }
    int w = Math.max(width, 1);
    PointerByReference out = keep ? new PointerByReference() : null;
    try {
      Stage s = new Stage(scratch);
      int a = s.add(outIdx, outIdx.count * 8, Stage.IN);
      int b = s.add(outVals, times(outIdx.count, w) * outVals.dtype.size(), Stage.IN);
      int c = s.add(inIdx, inIdx.count * 8, Stage.IN);
      int d = s.add(inVals, times(inIdx.count, w) * inVals.dtype.size(), Stage.OUT);
      s.prepare();
      int st = KylixNative.kylix_config_reduce(handle, s.ptr(a), outIdx.count, s.ptr(b), s.ptr(c),
          inIdx.count, s.ptr(d), outVals.dtype.code(), op.id(), width, out);
      Throwable uf = userOpFailure(op);
      check(st);
      Plan plan = keep ? addPlan(out.getValue(), outIdx.count, inIdx.count) : null; // owned now
      raiseUserOp(uf, op, call);
      s.finish();
      return plan;
    } finally {
      Reference.reachabilityFence(outIdx.owner);
      Reference.reachabilityFence(inIdx.owner);
      Reference.reachabilityFence(outVals.owner);
      Reference.reachabilityFence(inVals.owner);
    }
  }

  void doReduce(Plan p, Vals out, Vals in, Op op, int width) {
    final String call = "Plan.reduce";
    checkOpen("reduce");
    ArgumentException bad = first(op == null ? argErr(call, "op", "is null") : null,
        order(call, out), writable(call, in),
        width < 1 ? null : need(call, out, times(p.nOut, width),
            "the plan's n_out*width = " + p.nOut + "*" + width),
        width < 1 ? null : need(call, in, times(p.nIn, width),
            "the plan's n_in*width = " + p.nIn + "*" + width));
    if (bad != null) {
      throw reject(() -> KylixNative.kylix_reduce(p.handle, null, null, 0, 0, 0), bad);
    }
    int w = Math.max(width, 1);
    try {
      Stage s = new Stage(scratch);
      int a = s.add(out, times(p.nOut, w) * out.dtype.size(), Stage.IN);
      int b = s.add(in, times(p.nIn, w) * in.dtype.size(), Stage.OUT);
      s.prepare();
      int st = KylixNative.kylix_reduce(p.handle, s.ptr(a), s.ptr(b), out.dtype.code(), op.id(),
          width);
      Throwable uf = userOpFailure(op);
      check(st);
      raiseUserOp(uf, op, call);
      s.finish();
    } finally {
      Reference.reachabilityFence(out.owner);
      Reference.reachabilityFence(in.owner);
    }
  }

  /** Checks shared by the non-blocking calls: direct buffers only. */
  private static IllegalArgumentException heap(String call, Vals... vs) {
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

  Request doIReduce(Plan p, Vals out, Vals in, Op op, int width) {
    final String call = "Plan.ireduce";
    checkOpen("ireduce");
    Runnable rejected = () -> KylixNative.kylix_ireduce(p.handle, null, null, 0, 0, 0,
        new PointerByReference());
    IllegalArgumentException h = heap(call, out, in);
    if (h != null) {
      throw reject(rejected, h);
    }
    ArgumentException bad = first(op == null ? argErr(call, "op", "is null") : null,
        order(call, out), writable(call, in),
        width < 1 ? null : need(call, out, times(p.nOut, width),
            "the plan's n_out*width = " + p.nOut + "*" + width),
        width < 1 ? null : need(call, in, times(p.nIn, width),
            "the plan's n_in*width = " + p.nIn + "*" + width));
    if (bad != null) {
      throw reject(rejected, bad);
    }
    PointerByReference req = new PointerByReference();
    Pointer po = out.owner == null ? null : out.address();
    Pointer pi = in.owner == null ? null : in.address();
    try {
      check(KylixNative.kylix_ireduce(p.handle, po, pi, out.dtype.code(), op.id(), width, req));
      return track(new Request(this, req.getValue(), call, op, out.owner, in.owner));
    } finally {
      Reference.reachabilityFence(out.owner);
      Reference.reachabilityFence(in.owner);
    }
  }

  private Request doIAllreduce(Vals send, Vals recv, Op op) {
    final String call = "Comm.iallreduce";
    checkOpen("iallreduce");
    Runnable rejected = () -> KylixNative.kylix_iallreduce(handle, null, null, 0, 0, 0,
        new PointerByReference());
    IllegalArgumentException h = heap(call, send, recv);
    if (h != null) {
      throw reject(rejected, h);
    }
    ArgumentException bad = first(op == null ? argErr(call, "op", "is null") : null,
        order(call, send), writable(call, recv),
        need(call, recv, send.count, "send.remaining() = " + send.count));
    if (bad != null) {
      throw reject(rejected, bad);
    }
    PointerByReference req = new PointerByReference();
    Pointer ps = send.owner == null ? null : send.address();
    Pointer pr = recv.owner == null ? null : recv.address();
    try {
      check(KylixNative.kylix_iallreduce(handle, ps, pr, send.count, send.dtype.code(), op.id(),
          req));
      return track(new Request(this, req.getValue(), call, op, send.owner, recv.owner));
    } finally {
      Reference.reachabilityFence(send.owner);
      Reference.reachabilityFence(recv.owner);
    }
  }

  private Request track(Request r) {
    requests.add(r);
    Request.INFLIGHT.add(r);
    return r;
  }

  private void doAllreduce(Vals send, Vals recv, Op op) {
    final String call = "Comm.allreduce";
    checkOpen("allreduce");
    ArgumentException bad = first(op == null ? argErr(call, "op", "is null") : null,
        order(call, send), writable(call, recv),
        need(call, recv, send.count, "send's length " + send.count));
    if (bad != null) {
      throw reject(() -> KylixNative.kylix_allreduce(handle, null, null, 0, 0, 0), bad);
    }
    long bytes = send.count * send.dtype.size();
    try {
      Stage s = new Stage(scratch);
      int a = s.add(send, bytes, Stage.IN);
      int b = s.add(recv, bytes, Stage.OUT);
      s.prepare();
      int st = KylixNative.kylix_allreduce(handle, s.ptr(a), s.ptr(b), send.count,
          send.dtype.code(), op.id());
      Throwable uf = userOpFailure(op);
      check(st);
      raiseUserOp(uf, op, call);
      s.finish();
    } finally {
      Reference.reachabilityFence(send.owner);
      Reference.reachabilityFence(recv.owner);
    }
  }

  private void doBcast(Vals buf, int root) {
    final String call = "Comm.bcast";
    checkOpen("bcast");
    ArgumentException bad = buf.problem != null ? order(call, buf)
        : buf.isReadOnly() && root != rank
        ? argErr(call, "buf", "is a read-only buffer but is written on this rank") : null;
    if (bad != null) {
      throw reject(() -> KylixNative.kylix_bcast(handle, null, -1, root), bad);
    }
    long bytes = buf.byteCount();
    try {
      Stage s = new Stage(scratch);
      int a = s.add(buf, bytes, root == rank ? Stage.IN : Stage.OUT);
      s.prepare();
      check(KylixNative.kylix_bcast(handle, s.ptr(a), bytes, root));
      s.finish();
    } finally {
      Reference.reachabilityFence(buf.owner);
    }
  }

  private void doMix(Vals buf, long step) {
    final String call = "Comm.mix";
    checkOpen("mix");
    ArgumentException bad = writable(call, buf);
    if (bad != null) {
      throw reject(() -> KylixNative.kylix_mix(handle, null, -1, 0, step), bad);
    }
    try {
      Stage s = new Stage(scratch);
      int a = s.add(buf, buf.count * buf.dtype.size(), Stage.INOUT);
      s.prepare();
      check(KylixNative.kylix_mix(handle, s.ptr(a), buf.count, buf.dtype.code(), step));
      s.finish();
    } finally {
      Reference.reachabilityFence(buf.owner);
    }
  }
}
