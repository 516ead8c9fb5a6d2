package org.kylix;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import java.lang.ref.Reference;
import java.nio.Buffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;

/**
 * A configured pair of index sets ({@code kylix_plan}), made by {@link Comm#config} or {@link
 * Comm#configReduceKeepPlan}. Reduce with it any number of times; several plans may be live at
 * once. Close it when done (closing the comm frees it too).
 *
 * <p>Values are row-major, {@code width} values per index: out values hold nOut()*width
 * elements, in values receive nIn()*width. Longer arrays and buffers are fine (only the first
 * elements are used); shorter ones are an {@link ArgumentException} naming the parameter.
 */
public final class Plan implements AutoCloseable {
  private final Comm comm;
  private final CommHandle live; // the comm's: its messages, scratch memory, reject path
  final Pointer handle;
  final long nOut;
  final long nIn;
  private boolean closed;

  Plan(Comm comm, Pointer handle, long nOut, long nIn) {
    this.comm = comm;
    this.live = comm.live;
    this.handle = handle;
    this.nOut = nOut;
    this.nIn = nIn;
  }

  /** The comm this plan belongs to. */
  public Comm comm() {
    return comm;
  }

  /** The number of out indices given at configuration (repeats included). */
  public long nOut() {
    return nOut;
  }

  /** The number of in indices given at configuration (repeats included). */
  public long nIn() {
    return nIn;
  }

  /** The raw {@code kylix_plan *} handle, for {@link KylixNative} calls. */
  public Pointer handle() {
    return handle;
  }

  /** Whether the plan (or its comm) was closed. */
  public boolean isClosed() {
    return closed;
  }

  /**
   * Frees the plan ({@code kylix_plan_free}). Local, not a collective. A non-blocking reduce on
   * it still in flight completes normally. Calling it again does nothing.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    live.forget(this);
    if (!live.isClosed()) {
      live.check(KylixNative.kylix_plan_free(handle));
    }
  }

  void markClosed() {
    closed = true;
  }

  @Override
  public String toString() {
    return "Plan[nOut " + nOut + ", nIn " + nIn + (closed ? ", closed]" : "]");
  }

  // ---- blocking ------------------------------------------------------------------------------

  /**
   * Reduces values over the plan ({@code kylix_reduce}). Collective: every rank reduces the same
   * plan with the same op and width. Row j of in receives op over every rank's contributions to
   * inIdx[j], or op's identity when no rank contributes; the results are bitwise the same on
   * every rank and across runs.
   *
   * @param out nOut() values, read
   * @param in receives nIn() values
   * @param op the reduction
   * @throws ArgumentException a null or too short array (this rank still takes its turn)
   * @throws MismatchException ranks disagree, or another rank's arguments were bad
   */
  public void reduce(double[] out, double[] in, Op op) {
    reduce(out, in, op, 1);
  }

  /** {@link #reduce(double[], double[], Op)} with width values per index (row-major). */
  public void reduce(double[] out, double[] in, Op op, int width) {
    if (out != null && in != null && leanFits(out.length, in.length, out == in, op, width)) {
      leanReduce(out, in, DType.F64, op, width);
    } else {
      doReduce(Vals.of("outVals", out), Vals.of("inVals", in), op, width);
    }
  }

  /** See {@link #reduce(double[], double[], Op)}. */
  public void reduce(float[] out, float[] in, Op op) {
    reduce(out, in, op, 1);
  }

  /** See {@link #reduce(double[], double[], Op, int)}. */
  public void reduce(float[] out, float[] in, Op op, int width) {
    if (out != null && in != null && leanFits(out.length, in.length, out == in, op, width)) {
      leanReduce(out, in, DType.F32, op, width);
    } else {
      doReduce(Vals.of("outVals", out), Vals.of("inVals", in), op, width);
    }
  }

  /** See {@link #reduce(double[], double[], Op)}. */
  public void reduce(int[] out, int[] in, Op op) {
    reduce(out, in, op, 1);
  }

  /** See {@link #reduce(double[], double[], Op, int)}. */
  public void reduce(int[] out, int[] in, Op op, int width) {
    if (out != null && in != null && leanFits(out.length, in.length, out == in, op, width)) {
      leanReduce(out, in, DType.I32, op, width);
    } else {
      doReduce(Vals.of("outVals", out), Vals.of("inVals", in), op, width);
    }
  }

  /** See {@link #reduce(double[], double[], Op)}. */
  public void reduce(long[] out, long[] in, Op op) {
    reduce(out, in, op, 1);
  }

  /** See {@link #reduce(double[], double[], Op, int)}. */
  public void reduce(long[] out, long[] in, Op op, int width) {
    if (out != null && in != null && leanFits(out.length, in.length, out == in, op, width)) {
      leanReduce(out, in, DType.I64, op, width);
    } else {
      doReduce(Vals.of("outVals", out), Vals.of("inVals", in), op, width);
    }
  }

  /**
   * {@link #reduce(double[], double[], Op)} over buffers, from position to limit. Direct buffers
   * in native byte order are used in place (zero copy); heap buffers are copied.
   */
  public void reduce(DoubleBuffer out, DoubleBuffer in, Op op) {
    reduce(out, in, op, 1);
  }

  /** See {@link #reduce(DoubleBuffer, DoubleBuffer, Op)}, width values per index. */
  public void reduce(DoubleBuffer out, DoubleBuffer in, Op op, int width) {
    doReduce(Vals.of("outVals", out), Vals.of("inVals", in), op, width);
  }

  /** See {@link #reduce(DoubleBuffer, DoubleBuffer, Op)}. */
  public void reduce(FloatBuffer out, FloatBuffer in, Op op) {
    reduce(out, in, op, 1);
  }

  /** See {@link #reduce(DoubleBuffer, DoubleBuffer, Op, int)}. */
  public void reduce(FloatBuffer out, FloatBuffer in, Op op, int width) {
    doReduce(Vals.of("outVals", out), Vals.of("inVals", in), op, width);
  }

  /** See {@link #reduce(DoubleBuffer, DoubleBuffer, Op)}. */
  public void reduce(IntBuffer out, IntBuffer in, Op op) {
    reduce(out, in, op, 1);
  }

  /** See {@link #reduce(DoubleBuffer, DoubleBuffer, Op, int)}. */
  public void reduce(IntBuffer out, IntBuffer in, Op op, int width) {
    doReduce(Vals.of("outVals", out), Vals.of("inVals", in), op, width);
  }

  /** See {@link #reduce(DoubleBuffer, DoubleBuffer, Op)}. */
  public void reduce(LongBuffer out, LongBuffer in, Op op) {
    reduce(out, in, op, 1);
  }

  /** See {@link #reduce(DoubleBuffer, DoubleBuffer, Op, int)}. */
  public void reduce(LongBuffer out, LongBuffer in, Op op, int width) {
    doReduce(Vals.of("outVals", out), Vals.of("inVals", in), op, width);
  }

  /**
   * {@link #reduce(DoubleBuffer, DoubleBuffer, Op, int)} for any buffer type with an explicit
   * dtype: ByteBuffers (remaining bytes / dtype size elements) or typed buffers of the dtype's
   * element size (e.g. a LongBuffer with {@link DType#U64}).
   */
  public void reduce(Buffer out, Buffer in, DType dtype, Op op, int width) {
    doReduce(Vals.of("outVals", out, dtype), Vals.of("inVals", in, dtype), op, width);
  }

  // ---- non-blocking --------------------------------------------------------------------------

  /**
   * Starts a reduce and returns at once ({@code kylix_ireduce}); the library runs it on its own
   * threads. Collective: the start counts as the call. Direct buffers only: the library reads
   * out and writes in after this returns, until {@link Request#waitFor()} returns or {@link
   * Request#test()} returns true; do not touch them meanwhile. The request keeps both buffers
   * reachable until then.
   *
   * @throws IllegalArgumentException a heap buffer (the binding refuses it; this rank still takes
   *     its turn, so the peers' requests fail with a {@link MismatchException})
   */
  public Request ireduce(DoubleBuffer out, DoubleBuffer in, Op op) {
    return ireduce(out, in, op, 1);
  }

  /** See {@link #ireduce(DoubleBuffer, DoubleBuffer, Op)}, width values per index. */
  public Request ireduce(DoubleBuffer out, DoubleBuffer in, Op op, int width) {
    return doIReduce(Vals.of("outVals", out), Vals.of("inVals", in), op, width);
  }

  /** See {@link #ireduce(DoubleBuffer, DoubleBuffer, Op)}. */
  public Request ireduce(FloatBuffer out, FloatBuffer in, Op op) {
    return ireduce(out, in, op, 1);
  }

  /** See {@link #ireduce(DoubleBuffer, DoubleBuffer, Op, int)}. */
  public Request ireduce(FloatBuffer out, FloatBuffer in, Op op, int width) {
    return doIReduce(Vals.of("outVals", out), Vals.of("inVals", in), op, width);
  }

  /** See {@link #ireduce(DoubleBuffer, DoubleBuffer, Op)}. */
  public Request ireduce(IntBuffer out, IntBuffer in, Op op) {
    return ireduce(out, in, op, 1);
  }

  /** See {@link #ireduce(DoubleBuffer, DoubleBuffer, Op, int)}. */
  public Request ireduce(IntBuffer out, IntBuffer in, Op op, int width) {
    return doIReduce(Vals.of("outVals", out), Vals.of("inVals", in), op, width);
  }

  /** See {@link #ireduce(DoubleBuffer, DoubleBuffer, Op)}. */
  public Request ireduce(LongBuffer out, LongBuffer in, Op op) {
    return ireduce(out, in, op, 1);
  }

  /** See {@link #ireduce(DoubleBuffer, DoubleBuffer, Op, int)}. */
  public Request ireduce(LongBuffer out, LongBuffer in, Op op, int width) {
    return doIReduce(Vals.of("outVals", out), Vals.of("inVals", in), op, width);
  }

  /** See {@link #ireduce(DoubleBuffer, DoubleBuffer, Op)}; any buffer type with a dtype. */
  public Request ireduce(Buffer out, Buffer in, DType dtype, Op op, int width) {
    return doIReduce(Vals.of("outVals", out, dtype), Vals.of("inVals", in, dtype), op, width);
  }

  // ---- implementation ------------------------------------------------------------------------

  /** The checks shared by reduce and ireduce. */
  private RuntimeException checkValues(String call, Vals out, Vals in, Op op, int width) {
    return ArgChecks.first(ArgChecks.opGiven(call, op), ArgChecks.rows(call, out, nOut,
        "the plan's n_out", in, nIn, "the plan's n_in", width));
  }

  /**
   * Whether reduce on two distinct non-null arrays of these lengths can take the lean path (see
   * Stage's lean path): op given, width &gt;= 1, both counts non-zero and within the arrays; the
   * general path's checks would then all pass.
   */
  private boolean leanFits(int outLen, int inLen, boolean same, Op op, int width) {
    if (same || op == null || width < 1) {
      return false;
    }
    long no = ArgChecks.times(nOut, width);
    long ni = ArgChecks.times(nIn, width);
    return no > 0 && ni > 0 && outLen >= no && inLen >= ni;
  }

  /** The lean path of reduce on arrays, after {@link #leanFits}: stage, call, copy back. */
  private void leanReduce(Object out, Object in, DType dtype, Op op, int width) {
    final String call = "Plan.reduce";
    live.checkOpen(call);
    int no = (int) (nOut * width);
    int ni = (int) (nIn * width);
    long outBytes = Stage.aligned((long) no * dtype.size());
    Stage.Scratch scratch = live.scratch();
    Pointer po = scratch.get(outBytes + (long) ni * dtype.size());
    Pointer pi = scratch.at(outBytes);
    Stage.put(po, out, no);
    live.check(KylixNative.kylix_reduce(handle, po, pi, dtype.code(), op.id(), width), op, call);
    Stage.get(pi, in, ni);
  }

  private void doReduce(Vals out, Vals in, Op op, int width) {
    final String call = "Plan.reduce";
    live.checkOpen(call);
    live.rejectIf(checkValues(call, out, in, op, width));
    try (Stage s = live.stage()) {
      int a = s.add(out, ArgChecks.times(nOut, width) * out.dtype.size(), Stage.IN);
      int b = s.add(in, ArgChecks.times(nIn, width) * in.dtype.size(), Stage.OUT);
      s.prepare();
      live.check(KylixNative.kylix_reduce(handle, s.ptr(a), s.ptr(b), out.dtype.code(), op.id(),
          width), op, call);
      s.finish();
    }
  }

  private Request doIReduce(Vals out, Vals in, Op op, int width) {
    final String call = "Plan.ireduce";
    live.checkOpen(call);
    live.rejectIf(ArgChecks.first(ArgChecks.direct(call, out, in),
        checkValues(call, out, in, op, width)));
    PointerByReference req = new PointerByReference();
    Pointer po = out.owner == null ? null : out.address();
    Pointer pi = in.owner == null ? null : in.address();
    try {
      live.check(KylixNative.kylix_ireduce(handle, po, pi, out.dtype.code(), op.id(), width,
          req));
      return live.track(new Request(live, req.getValue(), call, op, out.owner, in.owner));
    } finally {
      Reference.reachabilityFence(out.owner);
      Reference.reachabilityFence(in.owner);
    }
  }
}
