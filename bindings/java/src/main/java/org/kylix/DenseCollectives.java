package org.kylix;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import java.lang.ref.Reference;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;

/**
 * The collectives of a {@link Comm} that need no plan: dense allreduce (blocking and not),
 * bcast, barrier and mix. Their public methods are Comm's API, documented there as Comm's own
 * (this class is not public, as AbstractStringBuilder is not beside StringBuilder); the sparse
 * collectives and the comm's lifecycle are in Comm.
 */
abstract class DenseCollectives {
  final CommHandle live;

  DenseCollectives(CommHandle live) {
    this.live = live;
  }

  /**
   * Dense allreduce ({@code kylix_allreduce}): recv[i] = op over every rank's send[i], for
   * send.length elements. Collective; every rank passes the same count. send == recv works in
   * place.
   *
   * @param send this rank's values
   * @param recv receives the result; at least send.length elements
   */
  public void allreduce(double[] send, double[] recv, Op op) {
    if (send != null && recv != null && op != null && send.length > 0
        && recv.length >= send.length) {
      leanAllreduce(send, recv, send.length, DType.F64, op);
    } else {
      doAllreduce(Vals.of("send", send), Vals.of("recv", recv), op);
    }
  }

  /** In-place {@link #allreduce(double[], double[], Op)}. */
  public void allreduce(double[] buf, Op op) {
    if (buf != null && op != null && buf.length > 0) {
      leanAllreduce(buf, buf, buf.length, DType.F64, op);
    } else {
      Vals v = Vals.of("buf", buf);
      doAllreduce(v, v, op);
    }
  }

  /** See {@link #allreduce(double[], double[], Op)}. */
  public void allreduce(float[] send, float[] recv, Op op) {
    if (send != null && recv != null && op != null && send.length > 0
        && recv.length >= send.length) {
      leanAllreduce(send, recv, send.length, DType.F32, op);
    } else {
      doAllreduce(Vals.of("send", send), Vals.of("recv", recv), op);
    }
  }

  /** In-place {@link #allreduce(float[], float[], Op)}. */
  public void allreduce(float[] buf, Op op) {
    if (buf != null && op != null && buf.length > 0) {
      leanAllreduce(buf, buf, buf.length, DType.F32, op);
    } else {
      Vals v = Vals.of("buf", buf);
      doAllreduce(v, v, op);
    }
  }

  /** See {@link #allreduce(double[], double[], Op)}. */
  public void allreduce(int[] send, int[] recv, Op op) {
    if (send != null && recv != null && op != null && send.length > 0
        && recv.length >= send.length) {
      leanAllreduce(send, recv, send.length, DType.I32, op);
    } else {
      doAllreduce(Vals.of("send", send), Vals.of("recv", recv), op);
    }
  }

  /** In-place {@link #allreduce(int[], int[], Op)}. */
  public void allreduce(int[] buf, Op op) {
    if (buf != null && op != null && buf.length > 0) {
      leanAllreduce(buf, buf, buf.length, DType.I32, op);
    } else {
      Vals v = Vals.of("buf", buf);
      doAllreduce(v, v, op);
    }
  }

  /** See {@link #allreduce(double[], double[], Op)}. */
  public void allreduce(long[] send, long[] recv, Op op) {
    if (send != null && recv != null && op != null && send.length > 0
        && recv.length >= send.length) {
      leanAllreduce(send, recv, send.length, DType.I64, op);
    } else {
      doAllreduce(Vals.of("send", send), Vals.of("recv", recv), op);
    }
  }

  /** In-place {@link #allreduce(long[], long[], Op)}. */
  public void allreduce(long[] buf, Op op) {
    if (buf != null && op != null && buf.length > 0) {
      leanAllreduce(buf, buf, buf.length, DType.I64, op);
    } else {
      Vals v = Vals.of("buf", buf);
      doAllreduce(v, v, op);
    }
  }

  /**
   * {@link #allreduce(double[], double[], Op)} over buffers: send.remaining() elements (for a
   * ByteBuffer, remaining bytes / dtype size); the same buffer for send and recv works in place.
   */
  public void allreduce(Buffer send, Buffer recv, DType dtype, Op op) {
    doAllreduce(Vals.of("send", send, dtype), Vals.of("recv", recv, dtype), op);
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
    return doIAllreduce(Vals.of("send", send, dtype), Vals.of("recv", recv, dtype), op);
  }

  /**
   * Broadcast ({@code kylix_bcast}): copies root's buf to every rank. Collective; the length and
   * root must agree on every rank.
   */
  public void bcast(byte[] buf, int root) {
    if (buf != null && buf.length > 0) {
      leanBcast(buf, buf.length, 1, root);
    } else {
      doBcast(Vals.bytes("buf", buf == null ? null : ByteBuffer.wrap(buf)), root);
    }
  }

  /** See {@link #bcast(byte[], int)}. */
  public void bcast(double[] buf, int root) {
    if (buf != null && buf.length > 0) {
      leanBcast(buf, buf.length, 8, root);
    } else {
      doBcast(Vals.bytes("buf", buf == null ? null : DoubleBuffer.wrap(buf)), root);
    }
  }

  /** See {@link #bcast(byte[], int)}. */
  public void bcast(float[] buf, int root) {
    if (buf != null && buf.length > 0) {
      leanBcast(buf, buf.length, 4, root);
    } else {
      doBcast(Vals.bytes("buf", buf == null ? null : FloatBuffer.wrap(buf)), root);
    }
  }

  /** See {@link #bcast(byte[], int)}. */
  public void bcast(int[] buf, int root) {
    if (buf != null && buf.length > 0) {
      leanBcast(buf, buf.length, 4, root);
    } else {
      doBcast(Vals.bytes("buf", buf == null ? null : IntBuffer.wrap(buf)), root);
    }
  }

  /** See {@link #bcast(byte[], int)}. */
  public void bcast(long[] buf, int root) {
    if (buf != null && buf.length > 0) {
      leanBcast(buf, buf.length, 8, root);
    } else {
      doBcast(Vals.bytes("buf", buf == null ? null : LongBuffer.wrap(buf)), root);
    }
  }

  /** See {@link #bcast(byte[], int)}: the buffer's remaining elements, any buffer type. */
  public void bcast(Buffer buf, int root) {
    doBcast(Vals.bytes("buf", buf), root);
  }

  /** Returns once every rank has entered the barrier ({@code kylix_barrier}). Collective. */
  public void barrier() {
    live.checkOpen("Comm.barrier");
    live.check(KylixNative.kylix_barrier(live.ptr));
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


  // ---- implementation ------------------------------------------------------------------------

  /** The checks shared by allreduce and iallreduce. */
  private static RuntimeException sendRecv(String call, Op op, Vals send, Vals recv) {
    return ArgChecks.first(ArgChecks.opGiven(call, op), ArgChecks.order(call, send),
        ArgChecks.writable(call, recv),
        ArgChecks.need(call, recv, send.count, "send's length " + send.count));
  }

  /**
   * The lean path of allreduce on Java arrays (see Stage's lean path): send and recv are
   * non-null primitive arrays of dtype's type, recv at least n = send.length long, n &gt; 0, op
   * non-null: every check the general path would make on them passes. Stages send (once when
   * send == recv, as the general path does) through the comm's scratch memory and copies n
   * elements back into recv after a successful call.
   */
  private void leanAllreduce(Object send, Object recv, int n, DType dtype, Op op) {
    final String call = "Comm.allreduce";
    live.checkOpen(call);
    long bytes = (long) n * dtype.size();
    Stage.Scratch scratch = live.scratch();
    Pointer ps;
    Pointer pr;
    if (send == recv) {
      ps = pr = scratch.get(bytes);
    } else {
      ps = scratch.get(Stage.aligned(bytes) + bytes);
      pr = scratch.at(Stage.aligned(bytes));
    }
    Stage.put(ps, send, n);
    live.check(KylixNative.kylix_allreduce(live.ptr, ps, pr, n, dtype.code(), op.id()), op,
        call);
    Stage.get(pr, recv, n);
  }

  private void doAllreduce(Vals send, Vals recv, Op op) {
    final String call = "Comm.allreduce";
    live.checkOpen(call);
    live.rejectIf(sendRecv(call, op, send, recv));
    long bytes = send.count * send.dtype.size();
    try (Stage s = live.stage()) {
      int a = s.add(send, bytes, Stage.IN);
      int b = s.add(recv, bytes, Stage.OUT);
      s.prepare();
      live.check(KylixNative.kylix_allreduce(live.ptr, s.ptr(a), s.ptr(b), send.count,
          send.dtype.code(), op.id()), op, call);
      s.finish();
    }
  }

  private Request doIAllreduce(Vals send, Vals recv, Op op) {
    final String call = "Comm.iallreduce";
    live.checkOpen(call);
    live.rejectIf(ArgChecks.first(ArgChecks.direct(call, send, recv),
        sendRecv(call, op, send, recv)));
    PointerByReference req = new PointerByReference();
    Pointer ps = send.owner == null ? null : send.address();
    Pointer pr = recv.owner == null ? null : recv.address();
    try {
      live.check(KylixNative.kylix_iallreduce(live.ptr, ps, pr, send.count, send.dtype.code(),
          op.id(), req));
      return live.track(new Request(live, req.getValue(), call, op, send.owner, recv.owner));
    } finally {
      Reference.reachabilityFence(send.owner);
      Reference.reachabilityFence(recv.owner);
    }
  }

  /**
   * The lean path of bcast on a non-empty Java array (see Stage's lean path): nothing to check
   * that the general path would find (an array is never read-only nor in a foreign byte order).
   * Root's array is staged in, the others' copied out after a successful call.
   */
  private void leanBcast(Object buf, int n, int elementSize, int root) {
    final String call = "Comm.bcast";
    live.checkOpen(call);
    long bytes = (long) n * elementSize;
    Pointer p = live.scratch().get(bytes);
    boolean isRoot = root == live.rank;
    if (isRoot) {
      Stage.put(p, buf, n);
    }
    live.check(KylixNative.kylix_bcast(live.ptr, p, bytes, root));
    if (!isRoot) {
      Stage.get(p, buf, n);
    }
  }

  private void doBcast(Vals buf, int root) {
    final String call = "Comm.bcast";
    live.checkOpen(call);
    live.rejectIf(buf.problem != null ? ArgChecks.order(call, buf)
        : buf.isReadOnly() && root != live.rank
        ? ArgChecks.argErr(call, "buf", "is a read-only buffer but is written on this rank")
        : null);
    long bytes = buf.byteCount();
    try (Stage s = live.stage()) {
      int a = s.add(buf, bytes, root == live.rank ? Stage.IN : Stage.OUT);
      s.prepare();
      live.check(KylixNative.kylix_bcast(live.ptr, s.ptr(a), bytes, root));
      s.finish();
    }
  }

  private void doMix(Vals buf, long step) {
    final String call = "Comm.mix";
    live.checkOpen(call);
    live.rejectIf(ArgChecks.writable(call, buf));
    try (Stage s = live.stage()) {
      int a = s.add(buf, buf.count * buf.dtype.size(), Stage.INOUT);
      s.prepare();
      live.check(KylixNative.kylix_mix(live.ptr, s.ptr(a), buf.count, buf.dtype.code(), step));
      s.finish();
    }
  }
}
