package org.kylix.it;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;
import java.util.Arrays;
import org.kylix.ArgumentException;
import org.kylix.Comm;
import org.kylix.DType;
import org.kylix.KylixException;
import org.kylix.Kylix;
import org.kylix.MismatchException;
import org.kylix.Op;
import org.kylix.PeerException;
import org.kylix.Plan;
import org.kylix.Request;
import org.kylix.StateException;
import org.kylix.Status;

/**
 * Error mapping, non-blocking calls and a dead peer, on 3 or more ranks under kylixrun (with a
 * short --timeout). Bad arguments raise ArgumentException naming the argument on the rank that
 * gave them and, on the others, MismatchException naming that rank and the reason (every call
 * that checks arguments in Java is tried); disagreements raise MismatchException on every rank;
 * after each, the comm still works. At the end the last rank dies and the others see a
 * PeerException and failedRanks(), and shrink() gives them a working comm.
 */
public final class ErrorWorker {
  public static void main(String[] args) throws Exception {
    Comm comm = Kylix.init("");
    int me = comm.rank(), size = comm.size();
    Check ck = new Check(me, 100);
    if (size < 3) {
      ck.fail("needs at least 3 ranks");
      ck.done();
    }
    long[] out = {me, 10, 20};
    long[] in = {10, 20, 0, 99};
    double[] vals = {1, 2, 3};
    double[] want = {2.0 * size, 3.0 * size, 1, 0}; // index 0 comes from rank 0 only
    Plan plan = comm.config(out, in);

    // ---- bad arguments -----------------------------------------------------------------------
    ArgumentException ae = ck.expectThrow(ArgumentException.class,
        "every rank: inVals too short (checked in Java)",
        () -> plan.reduce(vals, new double[2], Op.SUM), "inVals", "n_in");
    ck.expect(ae != null && "inVals".equals(ae.argument()) && ae.status() == Status.ERR_ARG,
        "ArgumentException.argument() names inVals, status ERR_ARG");
    reduceOk(ck, plan, vals, want, "after every rank's bad inVals");

    for (int bad = 0; bad < size; bad += size - 1) { // the first and the last rank
      oneRankRefused(comm, ck, bad, "short outVals", ArgumentException.class,
          () -> plan.reduce(new double[1], new double[4], Op.SUM),
          () -> plan.reduce(vals, new double[4], Op.SUM),
          "Plan.reduce: outVals has 1 elements but the plan's n_out*width = 3*1 needs 3");
      reduceOk(ck, plan, vals, want, "rank " + bad + "'s bad outVals");
    }
    oneRankCalls(comm, ck, plan, out, in, vals);

    oneRankRefused(comm, ck, 0, "negative index (checked by the library)",
        ArgumentException.class, () -> comm.config(new long[] {5, -3}, in).close(),
        () -> comm.config(out, in).close(), "out_idx");

    ck.expectThrow(ArgumentException.class, "every rank: width 0",
        () -> plan.reduce(vals, new double[4], Op.SUM, 0), "width");
    oneRankRefused(comm, ck, size - 1, "null op", ArgumentException.class,
        () -> plan.reduce(vals, new double[4], null),
        () -> plan.reduce(vals, new double[4], Op.SUM), "Plan.reduce: op is null");
    ck.expectThrow(ArgumentException.class, "every rank: null outVals with n_out > 0",
        () -> plan.reduce(null, new double[4], Op.SUM), "outVals", "null");
    DoubleBuffer bigEndian = ByteBuffer.allocateDirect(8 * 4).asDoubleBuffer();
    ck.expectThrow(ArgumentException.class, "every rank: a big-endian direct buffer",
        () -> plan.reduce(DoubleBuffer.wrap(vals), bigEndian, Op.SUM), "inVals", "byte order");
    DoubleBuffer ro = Ref.direct(8 * 4).asDoubleBuffer().asReadOnlyBuffer();
    ck.expectThrow(ArgumentException.class, "every rank: a read-only output",
        () -> plan.reduce(DoubleBuffer.wrap(vals), ro, Op.SUM), "inVals", "read-only");
    ck.expectThrow(ArgumentException.class, "every rank: an IntBuffer as F64",
        () -> plan.reduce(IntBuffer.wrap(new int[6]), IntBuffer.allocate(8), DType.F64, Op.SUM,
            1), "outVals", "F64");
    ck.expectThrow(ArgumentException.class, "every rank: MIN is fine but BXOR on floats is not",
        () -> plan.reduce(vals, new double[4], Op.BXOR), "op");
    reduceOk(ck, plan, vals, want, "argument errors");

    // ---- disagreements -----------------------------------------------------------------------
    ck.expectThrow(MismatchException.class, "rank 0 MAX, the others SUM",
        () -> plan.reduce(vals, new double[4], me == 0 ? Op.MAX : Op.SUM));
    ck.expectThrow(MismatchException.class, "last rank float, the others double",
        () -> {
          if (me == size - 1) {
            comm.allreduce(new float[4], new float[4], Op.SUM);
          } else {
            comm.allreduce(new double[4], new double[4], Op.SUM);
          }
        });
    ck.expectThrow(MismatchException.class, "last rank barrier, the others allreduce",
        () -> {
          if (me == size - 1) {
            comm.barrier();
          } else {
            comm.allreduce(new double[4], Op.SUM);
          }
        });
    ck.expectThrow(MismatchException.class, "rank 0 count 5, the others 4",
        () -> comm.allreduce(new long[me == 0 ? 5 : 4], Op.SUM));
    ck.expectThrow(MismatchException.class, "rank 0 width 2, the others width 1",
        () -> plan.reduce(new double[6], new double[8], Op.SUM, me == 0 ? 2 : 1));
    reduceOk(ck, plan, vals, want, "disagreements");

    // ---- a freed plan ------------------------------------------------------------------------
    Plan q = comm.config(out, in);
    q.close();
    q.close(); // twice is fine
    ck.expectThrow(StateException.class, "every rank: reduce on a closed plan",
        () -> q.reduce(vals, new double[4], Op.SUM), "plan");
    sane(comm, ck, "a closed plan");

    ck.expectThrow(ArgumentException.class, "init with an unknown option (local)",
        () -> Kylix.init("rank=0;size=1;bogus_key=1"), "bogus_key");

    // ---- non-blocking ------------------------------------------------------------------------
    ck.step("non-blocking", () -> nonBlocking(comm, ck, plan, vals, want));

    // ---- a dead peer -------------------------------------------------------------------------
    comm.barrier();
    if (me == size - 1) {
      ck.info("rank " + me + " exits without finalizing");
      System.out.println("r" + me + " DONE fails=" + ck.fails);
      System.out.flush();
      Runtime.getRuntime().halt(ck.fails == 0 ? 0 : 1);
    }
    KylixException dead = ck.expectThrow(KylixException.class, "allreduce with a dead peer",
        () -> comm.allreduce(new double[16], Op.SUM), "rank " + (size - 1));
    ck.expect(dead instanceof PeerException, "a dead peer is a PeerException: " + dead);
    // A rank told of the loss by another rank may not have seen the connection close itself
    // yet: failedRanks() lists only what this rank's transport observed, so poll briefly.
    int[] failed = comm.failedRanks();
    boolean emptyAtFirst = failed.length == 0;
    long t0 = System.nanoTime();
    while (failed.length == 0 && System.nanoTime() - t0 < 5_000_000_000L) {
      Thread.sleep(10);
      failed = comm.failedRanks();
    }
    ck.expect(Arrays.equals(failed, new int[] {size - 1}),
        "failedRanks() = " + Arrays.toString(failed));
    ck.info(String.format("failedRanks() listed the dead rank after %.0f ms (empty at first: %b)",
        (System.nanoTime() - t0) / 1e6, emptyAtFirst));
    ck.expectThrow(StateException.class, "the comm is broken afterwards", comm::barrier);
    try (Comm survivors = comm.shrink()) {
      ck.equal(size - 1, survivors.size(), "shrink: survivors' size");
      ck.equal(me, survivors.rank(), "shrink: the dead rank was the last, so ranks keep their"
          + " numbers");
      long[] x = {1};
      survivors.allreduce(x, Op.SUM);
      ck.equal((long) size - 1, x[0], "shrink: allreduce over the survivors");
      try (Plan p2 = survivors.config(new long[] {me}, new long[] {0, 1})) {
        double[] got = new double[2];
        p2.reduce(new double[] {5}, got, Op.SUM);
        ck.equal(new double[] {5, 5}, got, "shrink: config and reduce over the survivors");
      }
      ck.expectThrow(StateException.class, "the shrunk comm stays broken", comm::barrier);
    } catch (KylixException e) {
      ck.fail("shrink: " + e);
    }
    plan.close();
    comm.close();
    comm.close(); // twice is fine
    ck.expectThrow(StateException.class, "a call on a closed comm", comm::barrier, "closed");
    ck.done();
  }

  /**
   * Rank bad alone makes a call with an argument that is refused (by the binding, which then
   * gives up the rank's turn with kylix_reject, or by the library): it gets want, whose message
   * has every word of reason; each peer, making the good call, gets a MismatchException naming
   * rank bad and the same reason; then the comm works.
   */
  static void oneRankRefused(Comm comm, Check ck, int bad, String what,
      Class<? extends RuntimeException> want, Check.ThrowingRunnable badCall,
      Check.ThrowingRunnable goodCall, String... reason) {
    if (comm.rank() == bad) {
      ck.expectThrow(want, "rank " + bad + " alone: " + what, badCall, reason);
    } else {
      String[] words = Arrays.copyOf(reason, reason.length + 1);
      words[reason.length] = "rank " + bad;
      ck.expectThrow(MismatchException.class, "peers of rank " + bad + "'s " + what, goodCall,
          words);
    }
    sane(comm, ck, "rank " + bad + "'s " + what);
  }

  /** Every other call that checks arguments in Java, refused on rank 1 alone. */
  static void oneRankCalls(Comm comm, Check ck, Plan plan, long[] out, long[] in,
      double[] vals) {
    LongBuffer bigEndian = ByteBuffer.allocateDirect(8 * out.length).asLongBuffer().put(out)
        .flip();
    oneRankRefused(comm, ck, 1, "big-endian indices", ArgumentException.class,
        () -> comm.config(bigEndian, LongBuffer.wrap(in)).close(),
        () -> comm.config(out, in).close(), "Comm.config: outIdx is a direct buffer in BIG_ENDIAN");
    oneRankRefused(comm, ck, 1, "short inVals", ArgumentException.class,
        () -> comm.configReduce(out, vals, in, new double[3], Op.SUM),
        () -> comm.configReduce(out, vals, in, new double[4], Op.SUM),
        "Comm.configReduce: inVals has 3 elements but inIdx.length*width = 4*1 needs 4");
    oneRankRefused(comm, ck, 1, "short recv", ArgumentException.class,
        () -> comm.allreduce(new double[4], new double[3], Op.SUM),
        () -> comm.allreduce(new double[4], new double[4], Op.SUM),
        "Comm.allreduce: recv has 3 elements but send's length 4 needs 4");
    oneRankRefused(comm, ck, 1, "ShortBuffer as the root of a bcast", ArgumentException.class,
        () -> comm.bcast(ShortBuffer.allocate(4), 1), () -> comm.bcast(new byte[8], 1),
        "Comm.bcast: buf: unsupported buffer type java.nio.HeapShortBuffer");
    oneRankRefused(comm, ck, 1, "read-only mix buffer", ArgumentException.class,
        () -> comm.mix(DoubleBuffer.wrap(new double[4]).asReadOnlyBuffer(), 0),
        () -> comm.mix(new double[4], 0), "Comm.mix: buf is a read-only buffer but is written");
    DoubleBuffer send = directDoubles(1, 2), recv = Ref.direct(16).asDoubleBuffer();
    oneRankRefused(comm, ck, 1, "heap buffer for iallreduce", IllegalArgumentException.class,
        () -> comm.iallreduce(send, DoubleBuffer.allocate(2), Op.SUM),
        () -> comm.iallreduce(send, recv, Op.SUM).waitFor(),
        "Comm.iallreduce: recv is a heap buffer");
    oneRankRefused(comm, ck, 1, "short inVals for ireduce", ArgumentException.class,
        () -> plan.ireduce(directDoubles(vals), Ref.direct(24).asDoubleBuffer(), Op.SUM),
        () -> plan.ireduce(directDoubles(vals), Ref.direct(32).asDoubleBuffer(), Op.SUM)
            .waitFor(),
        "Plan.ireduce: inVals has 3 elements but the plan's n_in*width = 4*1 needs 4");
  }

  static void reduceOk(Check ck, Plan plan, double[] vals, double[] want, String after) {
    double[] res = new double[4];
    try {
      plan.reduce(vals, res, Op.SUM);
      ck.equal(want, res, "reduce correct after " + after);
    } catch (KylixException e) {
      ck.fail("reduce after " + after + ": " + e);
    }
  }

  static void sane(Comm c, Check ck, String after) {
    long[] x = {c.rank() + 1};
    try {
      c.allreduce(x, Op.SUM);
      ck.equal((long) c.size() * (c.size() + 1) / 2, x[0], "comm usable after " + after);
    } catch (KylixException e) {
      ck.fail("allreduce after " + after + ": " + e);
    }
  }

  static DoubleBuffer directDoubles(double... v) {
    return Ref.direct(8 * v.length).asDoubleBuffer().put(v).flip();
  }

  static void nonBlocking(Comm comm, Check ck, Plan plan, double[] vals, double[] want)
      throws Exception {
    int me = comm.rank(), size = comm.size();
    // Several in flight: two allreduces, two reduces (width 1 and 2), one in place.
    DoubleBuffer s1 = directDoubles(me, 1, 2), r1 = Ref.direct(24).asDoubleBuffer();
    DoubleBuffer o2 = directDoubles(vals), i2 = Ref.direct(32).asDoubleBuffer();
    FloatBuffer s3 = Ref.direct(4 * 50000).asFloatBuffer();
    for (int i = 0; i < 50000; i++) {
      s3.put(i, me + i);
    }
    DoubleBuffer o4 = directDoubles(1, 10, 2, 20, 3, 30), i4 = Ref.direct(64).asDoubleBuffer();
    Request a = comm.iallreduce(s1, r1, Op.SUM);
    Request b = plan.ireduce(o2, i2, Op.SUM);
    Request c = comm.iallreduce(s3, s3, Op.MAX);
    Request d = plan.ireduce(o4, i4, Op.SUM, 2);
    ck.expect(!a.isDone() && !d.isDone(), "four requests in flight");
    int polls = 0;
    while (!d.test()) { // the last started: polled
      polls++;
      Thread.sleep(1);
    }
    c.waitFor();
    b.waitFor();
    a.waitFor();
    a.waitFor(); // again: returns at once
    double sumRanks = size * (size - 1) / 2.0;
    ck.expect(r1.get(0) == sumRanks && r1.get(1) == size && r1.get(2) == 2.0 * size,
        "iallreduce result");
    double[] got2 = new double[4];
    i2.get(0, got2);
    ck.equal(want, got2, "ireduce result");
    ck.expect(s3.get(0) == size - 1 && s3.get(49999) == size - 1 + 49999,
        "iallreduce in place (50000 floats, MAX)");
    double[] got4 = new double[8];
    i4.get(0, got4);
    ck.equal(new double[] {2.0 * size, 20.0 * size, 3.0 * size, 30.0 * size, 1, 10, 0, 0}, got4,
        "ireduce width 2 (polled " + polls + " times), completed out of start order");

    // A blocking call while requests are in flight runs after them.
    DoubleBuffer s5 = directDoubles(1, 1), r5 = Ref.direct(16).asDoubleBuffer();
    Request e = comm.iallreduce(s5, r5, Op.SUM);
    comm.barrier();
    e.waitFor();
    ck.expect(r5.get(1) == size, "a barrier while a request is in flight");

    // Heap memory is refused, with a message saying why; the ranks stay in step.
    ck.expectThrow(IllegalArgumentException.class, "every rank: ireduce with a wrapped array",
        () -> plan.ireduce(DoubleBuffer.wrap(vals), i2, Op.SUM), "outVals", "direct");
    ck.expectThrow(IllegalArgumentException.class, "every rank: iallreduce with a heap buffer",
        () -> comm.iallreduce(s1, DoubleBuffer.allocate(3), Op.SUM), "recv", "direct");
    sane(comm, ck, "heap buffers refused");
    FloatBuffer fo = Ref.direct(12).asFloatBuffer(), fi = Ref.direct(16).asFloatBuffer();
    Request[] r = new Request[1];
    oneRankRefused(comm, ck, 0, "heap buffer for ireduce", IllegalArgumentException.class,
        () -> plan.ireduce(FloatBuffer.wrap(new float[3]), FloatBuffer.allocate(4), Op.SUM),
        () -> (r[0] = plan.ireduce(fo, fi, Op.SUM)).waitFor(),
        "Plan.ireduce: outVals is a heap buffer", "direct buffers");
    ck.expect(me == 0 || r[0].isDone(), "a failed request is done");
    ck.expectThrow(ArgumentException.class, "every rank: ireduce with too short an inVals",
        () -> plan.ireduce(o2, Ref.direct(8).asDoubleBuffer(), Op.SUM), "inVals");
    ck.expectThrow(ArgumentException.class, "every rank: a big-endian direct buffer",
        () -> comm.iallreduce(ByteBuffer.allocateDirect(8).order(ByteOrder.BIG_ENDIAN),
            Ref.direct(8), DType.F64, Op.SUM), "byte order");
    sane(comm, ck, "non-blocking argument errors");
  }
}
