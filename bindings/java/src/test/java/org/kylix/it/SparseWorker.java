package org.kylix.it;

import java.nio.Buffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.kylix.Comm;
import org.kylix.DType;
import org.kylix.InternalException;
import org.kylix.Kylix;
import org.kylix.Op;
import org.kylix.Plan;
import org.kylix.UserOp;
import org.kylix.it.Ref.Kind;

/**
 * Correctness of every collective against references regenerated from the seed: sparse reduce
 * over every dtype, op, width 1 and 3, arrays, direct and heap buffers; config_reduce with and
 * without a kept plan; several live plans; user ops; dense allreduce, bcast, barrier, mix; stats.
 * Run under kylixrun: {@code SparseWorker <seed>}.
 */
public final class SparseWorker {
  static final long NFEAT = 5000;

  public static void main(String[] args) throws Exception {
    long seed = args.length > 0 ? Long.parseLong(args[0]) : 1;
    Comm comm = Kylix.init("");
    Check ck = new Check(comm.rank(), 100);
    try {
      ck.info("rank " + comm.rank() + " of " + comm.size() + ", libkylix "
          + Kylix.versionString() + " from " + Kylix.libraryPath());
      int size = comm.size(), me = comm.rank();
      ck.step("sparse plan", () -> sparsePlan(comm, ck, seed));
      ck.step("config_reduce", () -> configReduce(comm, ck, seed));
      ck.step("user ops", () -> userOps(comm, ck, seed));
      ck.step("dense", () -> dense(comm, ck, seed));
      ck.step("bcast/barrier", () -> bcast(comm, ck));
      ck.step("mix", () -> mix(comm, ck));
      ck.step("stats", () -> {
        Map<String, Object> st = comm.statsMap();
        ck.equal((long) me, st.get("rank"), "stats rank");
        ck.equal((long) size, st.get("size"), "stats size");
        @SuppressWarnings("unchecked")
        Map<String, Object> coll = (Map<String, Object>) st.get("collectives");
        @SuppressWarnings("unchecked")
        Map<String, Object> red = (Map<String, Object>) coll.get("reduce");
        ck.expect(red != null && ((Long) red.get("calls")) >= 50,
            "stats counts the reduces: " + red);
        @SuppressWarnings("unchecked")
        List<Object> plans = (List<Object>) st.get("plans");
        boolean degOk = !plans.isEmpty();
        for (Object p : plans) {
          @SuppressWarnings("unchecked")
          List<Object> deg = (List<Object>) ((Map<String, Object>) p).get("degrees");
          long prod = 1;
          for (Object d : deg) {
            prod *= (Long) d;
          }
          degOk &= prod == size;
        }
        ck.expect(degOk, "every plan's degrees multiply to " + size + " ("
            + ((Map<?, ?>) plans.get(0)).get("degrees") + ")");
        int[] deg = Kylix.planDegrees(1_000_000, 0.05, size, 1.0, 1 << 20, 4);
        ck.expect(Arrays.stream(deg).reduce(1, (a, b) -> a * b) == size,
            "planDegrees multiplies to size: " + Arrays.toString(deg));
        ck.equal(new int[0], comm.failedRanks(), "no failed ranks");
        comm.barrier(); // nobody finalizes before everyone has looked: a finalized peer is gone
      });
    } finally {
      comm.close();
    }
    ck.done();
  }

  /** One plan, reduced with every dtype x op x width x kind. */
  static void sparsePlan(Comm comm, Check ck, long seed) {
    int size = comm.size(), me = comm.rank();
    long[][] out = new long[size][];
    for (int r = 0; r < size; r++) {
      out[r] = Ref.outIdx(seed, 0, r, NFEAT);
    }
    long[] in = Ref.inIdx(seed, 0, me, size, NFEAT);
    try (Plan plan = comm.config(out[me], in)) {
      ck.expect(plan.nOut() == out[me].length && plan.nIn() == in.length, "plan sizes");
      int n = 0, bad = 0;
      List<String> done = new ArrayList<>();
      for (DType d : DType.values()) {
        List<Op> ops = new ArrayList<>(List.of(Op.SUM, Op.PROD, Op.MIN, Op.MAX));
        if (d.isInteger()) {
          ops.addAll(List.of(Op.BAND, Op.BOR, Op.BXOR));
        } else {
          ops.add(Op.RSUM);
        }
        for (Op op : ops) {
          for (int width : new int[] {1, 3}) {
            Kind kind = Kind.values()[n % 3];
            n++;
            String what = "reduce " + d + " " + op + " width " + width + " " + kind;
            if (!reduceOne(ck, plan, seed, out, in, d, op, width, kind, what, n)) {
              bad++;
            }
          }
        }
        done.add(d.toString());
      }
      ck.expect(bad == 0, n + " sparse reduces (" + String.join(",", done)
          + " x every op x width 1,3 x array/direct/heap) match the reference");
    }
  }

  static boolean reduceOne(Check ck, Plan plan, long seed, long[][] out, long[] in, DType d,
      Op op, int width, Kind kind, String what, int salt) {
    int size = out.length, me = plan.comm().rank();
    long[][] vals = new long[size][];
    for (int r = 0; r < size; r++) {
      vals[r] = Ref.vals(seed, r, d, op, width, out[r].length, salt);
    }
    long[] want = Ref.expect(d, op, width, out, vals, in, false);
    Object o = Ref.make(d, vals[me], vals[me].length, kind);
    Object i = Ref.make(d, null, in.length * width, kind);
    reduce(plan, o, i, d, op, width);
    long[] got = Ref.read(d, i, in.length * width);
    int at = Ref.diff(want, got);
    if (at >= 0) {
      ck.fail(what + ": in[" + at + "] (index " + in[at / width] + ") want "
          + Ref.show(d, want[at]) + " got " + Ref.show(d, got[at]));
      return false;
    }
    return true;
  }

  /** Calls the overload that matches the vector types (width 1 uses the short form). */
  static void reduce(Plan p, Object o, Object i, DType d, Op op, int w) {
    if (o instanceof float[]) {
      if (w == 1) {
        p.reduce((float[]) o, (float[]) i, op);
      } else {
        p.reduce((float[]) o, (float[]) i, op, w);
      }
    } else if (o instanceof double[]) {
      if (w == 1) {
        p.reduce((double[]) o, (double[]) i, op);
      } else {
        p.reduce((double[]) o, (double[]) i, op, w);
      }
    } else if (o instanceof int[]) {
      p.reduce((int[]) o, (int[]) i, op, w);
    } else if (o instanceof long[]) {
      p.reduce((long[]) o, (long[]) i, op, w);
    } else if (d == DType.U64 || w == 3) {
      p.reduce((Buffer) o, (Buffer) i, d, op, w);
    } else if (o instanceof FloatBuffer) {
      p.reduce((FloatBuffer) o, (FloatBuffer) i, op);
    } else if (o instanceof DoubleBuffer) {
      p.reduce((DoubleBuffer) o, (DoubleBuffer) i, op);
    } else if (o instanceof IntBuffer) {
      p.reduce((IntBuffer) o, (IntBuffer) i, op);
    } else {
      p.reduce((LongBuffer) o, (LongBuffer) i, op);
    }
  }

  /** configReduce without a plan (mini-batches), with a kept plan, and two live plans. */
  static void configReduce(Comm comm, Check ck, long seed) {
    int size = comm.size(), me = comm.rank();
    for (int step = 0; step < 4; step++) {
      int c = 10 + step;
      long[][] out = new long[size][];
      long[][] vals = new long[size][];
      DType d = step % 2 == 0 ? DType.F64 : DType.F32;
      Op op = step < 2 ? Op.SUM : Op.MAX;
      for (int r = 0; r < size; r++) {
        out[r] = Ref.outIdx(seed, c, r, NFEAT);
        vals[r] = Ref.vals(seed, r, d, op, 2, out[r].length, c);
      }
      long[] in = Ref.inIdx(seed, c, me, size, NFEAT);
      long[] want = Ref.expect(d, op, 2, out, vals, in, false);
      Object o = Ref.make(d, vals[me], vals[me].length, step < 2 ? Kind.ARRAY : Kind.DIRECT);
      Object i = Ref.make(d, null, in.length * 2, step < 2 ? Kind.ARRAY : Kind.DIRECT);
      if (o instanceof double[]) {
        comm.configReduce(out[me], (double[]) o, in, (double[]) i, op, 2);
      } else if (o instanceof float[]) {
        comm.configReduce(out[me], (float[]) o, in, (float[]) i, op, 2);
      } else {
        comm.configReduce(LongBuffer.wrap(out[me]), (Buffer) o, directLongs(in), (Buffer) i, d,
            op, 2);
      }
      ck.equal(want, Ref.read(d, i, in.length * 2), "configReduce step " + step + " " + d + " "
          + op + " width 2");
    }
    // A kept plan, reduced again with new values while the first plan of case 20 is also live.
    long[][] outA = new long[size][], outB = new long[size][];
    for (int r = 0; r < size; r++) {
      outA[r] = Ref.outIdx(seed, 20, r, NFEAT);
      outB[r] = Ref.outIdx(seed, 21, r, NFEAT);
    }
    long[] inA = Ref.inIdx(seed, 20, me, size, NFEAT), inB = Ref.inIdx(seed, 21, me, size, NFEAT);
    long[][] v0 = new long[size][];
    for (int r = 0; r < size; r++) {
      v0[r] = Ref.vals(seed, r, DType.I64, Op.SUM, 1, outB[r].length, 0);
    }
    long[] resB = new long[inB.length];
    try (Plan a = comm.config(outA[me], inA);
        Plan b = comm.configReduceKeepPlan(outB[me], v0[me], inB, resB, Op.SUM, 1)) {
      ck.equal(Ref.expect(DType.I64, Op.SUM, 1, outB, v0, inB, false), resB,
          "configReduceKeepPlan I64 SUM result");
      for (int round = 1; round <= 2; round++) {
        for (Plan p : new Plan[] {a, b}) {
          long[][] o = p == a ? outA : outB;
          long[] in = p == a ? inA : inB;
          long[][] v = new long[size][];
          for (int r = 0; r < size; r++) {
            v[r] = Ref.vals(seed, r, DType.I32, Op.SUM, 1, o[r].length, 100 + round);
          }
          int[] res = new int[in.length];
          p.reduce((int[]) Ref.make(DType.I32, v[me], v[me].length, Kind.ARRAY), res, Op.SUM);
          ck.equal(Ref.expect(DType.I32, Op.SUM, 1, o, v, in, false),
              Ref.read(DType.I32, res, res.length),
              "two live plans, round " + round + ", plan " + (p == a ? "config" : "kept"));
        }
      }
    }
  }

  static LongBuffer directLongs(long[] a) {
    return Ref.direct(a.length * 8).asLongBuffer().put(a).flip();
  }

  /** User ops: "first contribution" (associative, not commutative), a Java SUM, one that throws. */
  static void userOps(Comm comm, Check ck, long seed) {
    int size = comm.size(), me = comm.rank();
    Op first = Kylix.opCreate((inout, in, count, dtype) -> { /* keep inout: the first wins */ });
    Op jsum = Kylix.opCreate(UserOp.elementwise((x, y) -> x + y, (x, y) -> x + y));
    Op boom = Kylix.opCreate((inout, in, count, dtype) -> {
      throw new IllegalStateException("boom from a user op");
    });
    ck.expect(first.isUserOp() && first.id() >= 64 && jsum.id() == first.id() + 1,
        "user op ids from 64, in order: " + first.id() + "," + jsum.id());
    long[][] out = new long[size][];
    for (int r = 0; r < size; r++) {
      out[r] = Ref.outIdx(seed, 30, r, NFEAT);
    }
    long[] in = Ref.inIdx(seed, 30, me, size, NFEAT);
    try (Plan plan = comm.config(out[me], in)) {
      long[][] v = new long[size][];
      for (int r = 0; r < size; r++) {
        v[r] = Ref.vals(seed, r, DType.F64, Op.SUM, 2, out[r].length, 30);
      }
      double[] res = new double[in.length * 2];
      plan.reduce((double[]) Ref.make(DType.F64, v[me], v[me].length, Kind.ARRAY), res, first, 2);
      ck.equal(Ref.expect(DType.F64, Op.SUM, 2, out, v, in, true),
          Ref.read(DType.F64, res, res.length),
          "user op 'first': the first contribution in (rank, position) order, zeros if none");
      for (DType d : new DType[] {DType.I64, DType.F32}) {
        long[][] w = new long[size][];
        for (int r = 0; r < size; r++) {
          w[r] = Ref.vals(seed, r, d, Op.SUM, 1, out[r].length, 31);
        }
        Object o = Ref.make(d, w[me], w[me].length, Kind.DIRECT);
        Object i = Ref.make(d, null, in.length, Kind.DIRECT);
        reduce(plan, o, i, d, jsum, 1);
        long[] want = Ref.expect(d, Op.SUM, 1, out, w, in, false);
        long[] got = Ref.read(d, i, in.length);
        ck.equal(want, got, "Java elementwise sum op on " + d + " direct buffers equals SUM");
      }
    }
    double[] x = new double[100];
    Arrays.fill(x, me + 1);
    InternalException e = ck.expectThrow(InternalException.class, "a user op that throws",
        () -> comm.allreduce(x, boom), "boom from a user op");
    ck.expect(e != null && e.getCause() instanceof IllegalStateException,
        "the op's exception is the cause");
    ck.step("comm usable after the op threw", comm::barrier);
  }

  /** Dense allreduce over sizes around the direct/butterfly switch, every memory kind. */
  static void dense(Comm comm, Check ck, long seed) {
    int size = comm.size(), me = comm.rank();
    Object[][] cases = {{DType.F64, Op.SUM}, {DType.F32, Op.MAX}, {DType.I32, Op.SUM},
        {DType.I64, Op.BXOR}, {DType.U64, Op.MIN}};
    int k = 0, bad = 0, n = 0;
    for (int count : new int[] {0, 1, 1000, 40000}) {
      for (Object[] c : cases) {
        DType d = (DType) c[0];
        Op op = (Op) c[1];
        long[][] v = new long[size][];
        for (int r = 0; r < size; r++) {
          v[r] = Ref.vals(seed, r, d, op, 1, count, 40 + count);
        }
        long[] want = Ref.expectDense(d, op, v);
        Kind kind = Kind.values()[k++ % 3];
        boolean inPlace = k % 2 == 0;
        Object s = Ref.make(d, v[me], count, kind);
        Object r = inPlace ? s : Ref.make(d, null, count, kind);
        allreduce(comm, s, r, d, op);
        long[] got = Ref.read(d, r, count);
        n++;
        int at = Ref.diff(want, got);
        if (at >= 0) {
          bad++;
          ck.fail("allreduce " + d + " " + op + " count " + count + " " + kind
              + (inPlace ? " in place" : "") + ": [" + at + "] want " + Ref.show(d, want[at])
              + " got " + Ref.show(d, got[at]));
        }
      }
    }
    ck.expect(bad == 0, n + " dense allreduces (counts 0..40000, 5 dtypes, in place or not) match");
  }

  static void allreduce(Comm c, Object s, Object r, DType d, Op op) {
    if (s instanceof float[]) {
      c.allreduce((float[]) s, (float[]) r, op);
    } else if (s instanceof double[]) {
      if (s == r) {
        c.allreduce((double[]) s, op);
      } else {
        c.allreduce((double[]) s, (double[]) r, op);
      }
    } else if (s instanceof int[]) {
      c.allreduce((int[]) s, (int[]) r, op);
    } else if (s instanceof long[]) {
      c.allreduce((long[]) s, (long[]) r, op);
    } else if (s instanceof FloatBuffer && d == DType.F32) {
      c.allreduce((FloatBuffer) s, (FloatBuffer) r, op);
    } else {
      c.allreduce((Buffer) s, (Buffer) r, d, op);
    }
  }

  static void bcast(Comm comm, Check ck) {
    int size = comm.size(), me = comm.rank();
    boolean ok = true;
    for (int root = 0; root < size; root++) {
      byte[] b = new byte[100_000];
      if (me == root) {
        for (int i = 0; i < b.length; i++) {
          b[i] = (byte) (i * 31 + root);
        }
      }
      comm.bcast(b, root);
      for (int i = 0; i < b.length && ok; i++) {
        ok = b[i] == (byte) (i * 31 + root);
      }
      DoubleBuffer db = Ref.direct(8 * 1000).asDoubleBuffer();
      if (me == root) {
        for (int i = 0; i < 1000; i++) {
          db.put(i, root * 1000.0 + i);
        }
      }
      comm.bcast(db, root);
      for (int i = 0; i < 1000 && ok; i++) {
        ok = db.get(i) == root * 1000.0 + i;
      }
    }
    ck.expect(ok, "bcast of byte[] and a direct DoubleBuffer from every root");
    comm.barrier();
    ck.pass("barrier");
  }

  static void mix(Comm comm, Check ck) {
    int size = comm.size(), me = comm.rank();
    double[] x = new double[1000];
    double[] mean = new double[1000];
    for (int i = 0; i < x.length; i++) {
      x[i] = (me + 1) * (i % 7) + me;
      for (int r = 0; r < size; r++) {
        mean[i] += ((r + 1) * (i % 7) + r) / (double) size;
      }
    }
    for (int step = 0; step < 8; step++) { // at least the number of layers: the global mean
      comm.mix(x, step);
    }
    double err = 0;
    for (int i = 0; i < x.length; i++) {
      err = Math.max(err, Math.abs(x[i] - mean[i]));
    }
    ck.expect(err < 1e-9, "mix: 8 steps reach the global mean (max error " + err + ")");
    double[] hi = x.clone(), lo = x.clone();
    comm.allreduce(hi, Op.MAX);
    comm.allreduce(lo, Op.MIN);
    ck.expect(Arrays.equals(hi, lo) && Arrays.equals(hi, x), "mix: the same bits on every rank");
    FloatBuffer f = Ref.direct(4 * 10).asFloatBuffer();
    for (int i = 0; i < 10; i++) {
      f.put(i, me);
    }
    for (int step = 0; step < 8; step++) {
      comm.mix(f, step);
    }
    ck.expect(Math.abs(f.get(3) - (size - 1) / 2.0) < 1e-5, "mix on a direct FloatBuffer");
  }

}
