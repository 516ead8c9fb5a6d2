package org.kylix;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.nio.Buffer;
import java.nio.LongBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;

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
public final class Comm extends DenseCollectives implements AutoCloseable {
  Comm(Pointer handle) {
    super(new CommHandle(handle));
  }

  /** This rank, 0..size()-1. */
  public int rank() {
    return live.rank;
  }

  /** The number of ranks. */
  public int size() {
    return live.size;
  }

  /** Whether {@link #close()} was called. */
  public boolean isClosed() {
    return live.isClosed();
  }

  /** The raw {@code kylix_comm *} handle, for {@link KylixNative} calls. */
  public Pointer handle() {
    return live.ptr;
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
    live.close();
  }

  @Override
  public String toString() {
    return "Comm[rank " + live.rank + " of " + live.size + (live.isClosed() ? ", closed]" : "]");
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
    doConfigReduce(new Vals[] {Vals.of("outIdx", outIdx), Vals.of("inIdx", inIdx)},
        Vals.of("outVals", outVals, dtype), Vals.of("inVals", inVals, dtype), op, width, false);
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
    return doConfigReduce(new Vals[] {Vals.of("outIdx", outIdx), Vals.of("inIdx", inIdx)},
        Vals.of("outVals", outVals, dtype), Vals.of("inVals", inVals, dtype), op, width, true);
  }


  // ---- failures, observability ---------------------------------------------------------------

  /** The ranks of this comm known to have failed ({@code kylix_failed_ranks}). Local. */
  public int[] failedRanks() {
    live.checkOpen("Comm.failedRanks");
    return rankList(KylixNative::kylix_failed_ranks);
  }

  /** The kylix_failed_ranks / kylix_members shape: up to cap int32s and their count. */
  private interface RankListCall {
    int call(Pointer c, Pointer ranks, int cap, IntByReference n);
  }

  /** Calls f with room for every rank of the comm (neither list can be longer). */
  private int[] rankList(RankListCall f) {
    int cap = Math.max(live.size, 1);
    Memory m = new Memory(4L * cap);
    IntByReference n = new IntByReference();
    live.check(f.call(live.ptr, m, cap, n));
    return m.getIntArray(0, Math.min(n.getValue(), cap));
  }

  /**
   * A new comm of the surviving ranks, renumbered 0..k-1 ({@code kylix_shrink}). Collective over
   * the survivors. This comm stays broken and must still be closed.
   */
  public Comm shrink() {
    live.checkOpen("Comm.shrink");
    PointerByReference out = new PointerByReference();
    live.check(KylixNative.kylix_shrink(live.ptr, out));
    return new Comm(out.getValue());
  }

  // ---- elastic membership --------------------------------------------------------------------

  /**
   * The next comm of an elastic job ({@code kylix_resize}): the live members of this comm in
   * their order, then every process that was waiting to join ({@code join=host:port}), in arrival
   * order. Collective over the live members: call it every few iterations to admit joiners
   * (ramp-up), and after a {@link PeerException} to go on without the dead (failure-ignorance).
   * With {@code minSize > 0} it waits up to timeout_ms for joiners until the new comm would have
   * that many ranks ({@link TimeoutException} otherwise, and this comm goes on unchanged).
   * Afterwards this comm is spent and must still be closed; plans belong to one comm, so
   * configure again. {@link #members()} on the new comm tells who is new.
   */
  public Comm resize(int minSize) {
    live.checkOpen("Comm.resize");
    if (minSize < 0) {
      throw new ArgumentException("Comm.resize: minSize " + minSize + " must be >= 0", "minSize");
    }
    PointerByReference out = new PointerByReference();
    live.check(KylixNative.kylix_resize(live.ptr, minSize, out));
    return new Comm(out.getValue());
  }

  /** {@link #resize(int)} with no minimum: take whoever waits, maybe nobody. */
  public Comm resize() {
    return resize(0);
  }

  /**
   * For each rank of this comm, the rank it had in the comm this one was resized from, or -1 for
   * a process that joined ({@code kylix_members}); on a comm from {@link Kylix#init}, each rank's
   * own number. Local.
   */
  public int[] members() {
    live.checkOpen("Comm.members");
    return rankList(KylixNative::kylix_members);
  }

  /**
   * The {@code host:port} where processes join this comm's job ({@code kylix_join_address}):
   * {@code Kylix.init("join=" + address + ";secret=...")}, or {@code kylixrun --join F}. Local.
   *
   * @throws StateException when the job is not elastic
   */
  public String joinAddress() {
    live.checkOpen("Comm.joinAddress");
    return text(KylixNative::kylix_join_address);
  }

  /**
   * What this comm has done, as the library's JSON object ({@code kylix_stats_json}): traffic,
   * time per phase, calls and errors per collective, per-plan layer shapes. Local.
   */
  public String stats() {
    live.checkOpen("Comm.stats");
    return text(KylixNative::kylix_stats_json);
  }

  /** The kylix_stats_json / kylix_join_address shape: a string into buf[0..cap), *needed. */
  private interface TextCall {
    int call(Pointer c, Pointer buf, long cap, LongByReference needed);
  }

  /** Calls f with a buffer that grows to what it says it needs (stats can grow in between). */
  private String text(TextCall f) {
    LongByReference needed = new LongByReference();
    long cap = 0;
    Memory m = null;
    for (int attempt = 0; ; attempt++) {
      int st = f.call(live.ptr, m, cap, needed);
      if (st == 0 && m != null) {
        return m.getString(0, StandardCharsets.UTF_8.name());
      }
      if ((st != 0 && st != KylixNative.KYLIX_ERR_ARG) || needed.getValue() <= cap || attempt > 4) {
        live.check(st);
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

  /**
   * Starts a span of the caller's own work on the timeline ({@code kylix_mark}; option {@code
   * timeline=DIR}, {@code kylixrun --timeline DIR}): {@code try (var s = comm.span("forward"))
   * { ... }} shows the block in this rank's "user" lane beside the library's calls. Spans nest;
   * closing ends the span (also when the block throws). With the timeline off nothing is
   * recorded. Local.
   *
   * @throws ArgumentException for a null or empty name
   */
  public Span span(String name) {
    mark(name, KylixNative.KYLIX_MARK_BEGIN);
    return new Span(this, name);
  }

  /** Records an instant of the caller's on the timeline ({@code KYLIX_MARK_INSTANT}). */
  public void mark(String name) {
    mark(name, KylixNative.KYLIX_MARK_INSTANT);
  }

  void mark(String name, int kind) {
    final String call = "Comm.mark";
    live.checkOpen(call);
    if (name == null || name.isEmpty() || name.indexOf('\0') >= 0) {
      throw new ArgumentException(call + ": name must be a non-empty string without NUL", "name");
    }
    live.check(KylixNative.kylix_mark(live.ptr, name, kind));
  }

  /** Zeroes the counters and timers of {@link #stats()} ({@code kylix_stats_reset}). Local. */
  public void statsReset() {
    live.checkOpen("Comm.statsReset");
    live.check(KylixNative.kylix_stats_reset(live.ptr));
  }

  // ---- implementation ------------------------------------------------------------------------

  private static Vals[] idx(long[] outIdx, long[] inIdx) {
    return new Vals[] {Vals.of("outIdx", outIdx), Vals.of("inIdx", inIdx)};
  }

  private Plan doConfig(Vals outIdx, Vals inIdx) {
    final String call = "Comm.config";
    live.checkOpen(call);
    live.rejectIf(ArgChecks.first(ArgChecks.order(call, outIdx), ArgChecks.order(call, inIdx)));
    PointerByReference out = new PointerByReference();
    try (Stage s = live.stage()) {
      int a = s.add(outIdx, outIdx.count * 8, Stage.IN);
      int b = s.add(inIdx, inIdx.count * 8, Stage.IN);
      s.prepare();
      live.check(KylixNative.kylix_config(live.ptr, s.ptr(a), outIdx.count, s.ptr(b),
          inIdx.count, out));
      return live.adopt(new Plan(this, out.getValue(), outIdx.count, inIdx.count));
    }
  }

  private Plan doConfigReduce(Vals[] ix, Vals outVals, Vals inVals, Op op, int width,
      boolean keep) {
    final String call = "Comm.configReduce";
    live.checkOpen(call);
    Vals outIdx = ix[0], inIdx = ix[1];
    live.rejectIf(ArgChecks.first(ArgChecks.opGiven(call, op), ArgChecks.order(call, outIdx),
        ArgChecks.order(call, inIdx), ArgChecks.rows(call, outVals, outIdx.count,
            "outIdx.length", inVals, inIdx.count, "inIdx.length", width)));
    PointerByReference out = keep ? new PointerByReference() : null;
    try (Stage s = live.stage()) {
      int a = s.add(outIdx, outIdx.count * 8, Stage.IN);
      int b = s.add(outVals, ArgChecks.times(outIdx.count, width) * outVals.dtype.size(),
          Stage.IN);
      int c = s.add(inIdx, inIdx.count * 8, Stage.IN);
      int d = s.add(inVals, ArgChecks.times(inIdx.count, width) * inVals.dtype.size(),
          Stage.OUT);
      s.prepare();
      int st = KylixNative.kylix_config_reduce(live.ptr, s.ptr(a), outIdx.count, s.ptr(b),
          s.ptr(c), inIdx.count, s.ptr(d), outVals.dtype.code(), op.id(), width, out);
      // Owned before a user op's failure is raised: closing the comm frees it then.
      Plan plan = st == 0 && keep
          ? live.adopt(new Plan(this, out.getValue(), outIdx.count, inIdx.count)) : null;
      live.check(st, op, call);
      s.finish();
      return plan;
    }
  }
}
