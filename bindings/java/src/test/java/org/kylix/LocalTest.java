package org.kylix;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The binding's own logic on a one-rank comm in this JVM (no peers needed): memory paths,
 * Java-side checks, exception mapping, requests, user ops, stats. Multi-rank behaviour is in
 * org.kylix.it.JobsTest.
 */
class LocalTest {
  private Comm comm;

  static ByteBuffer direct(int bytes) {
    return ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
  }

  @BeforeEach
  void open() {
    comm = Kylix.init("rank=0;size=1");
  }

  @AfterEach
  void close() {
    comm.close();
  }

  @Test
  void versionAndStatuses() {
    assertEquals(KylixNative.KYLIX_VERSION / 10000, Kylix.version() / 10000);
    assertTrue(Kylix.versionString().matches("\\d+\\.\\d+\\.\\d+"));
    assertTrue(Kylix.libraryPath().endsWith("libkylix.so"), Kylix.libraryPath());
    for (int s = 0; s <= 9; s++) {
      assertFalse(Kylix.strerror(s).isEmpty());
      KylixException e = KylixException.of(s == 0 ? 99 : s, "detail");
      assertEquals("detail", e.detail());
      if (s > 0) {
        assertEquals(Status.of(s), e.status());
        assertTrue(e.getMessage().startsWith(Status.of(s).name() + ": "), e.getMessage());
      }
    }
    assertEquals("unknown status", Kylix.strerror(99));
    assertInstanceOf(ArgumentException.class, KylixException.of(1, ""));
    assertInstanceOf(StateException.class, KylixException.of(2, ""));
    assertInstanceOf(TimeoutException.class, KylixException.of(3, ""));
    assertInstanceOf(PeerException.class, KylixException.of(4, ""));
    assertInstanceOf(MismatchException.class, KylixException.of(5, ""));
    assertInstanceOf(AuthException.class, KylixException.of(6, ""));
    assertInstanceOf(NetworkException.class, KylixException.of(7, ""));
    assertInstanceOf(NoMemoryException.class, KylixException.of(8, ""));
    assertInstanceOf(InternalException.class, KylixException.of(9, ""));
    assertEquals(Status.UNKNOWN, KylixException.of(42, "").status());
  }

  @Test
  void initErrorsNameTheKey() {
    ArgumentException e = assertThrows(ArgumentException.class,
        () -> Kylix.init("rank=0;size=1;no_such_key=3"));
    assertTrue(e.getMessage().contains("no_such_key"), e.getMessage());
    assertThrows(ArgumentException.class, () -> Kylix.init("rank=0;size=2")); // no peers
    try (Comm second = Kylix.init("rank=0;size=1")) { // several comms in one process
      assertEquals(1, second.size());
    }
  }

  @Test
  void sparseArraysAndBuffers() {
    long[] out = {5, 3, 5, 1L << 40};
    long[] in = {3, 5, 9, 1L << 40, 5};
    try (Plan p = comm.config(out, in)) {
      double[] r = new double[6]; // longer than needed: the tail stays untouched
      r[5] = 42;
      p.reduce(new double[] {1, 2, 4, 8}, r, Op.SUM);
      assertArrayEquals(new double[] {2, 5, 0, 8, 5, 42}, r);

      float[] rf = new float[5];
      p.reduce(new float[] {1, 2, 4, 8}, rf, Op.MAX);
      assertArrayEquals(new float[] {2, 4, Float.NEGATIVE_INFINITY, 8, 4}, rf);

      int[] ri = new int[10];
      p.reduce(new int[] {1, 10, 2, 20, 4, 40, 8, 80}, ri, Op.PROD, 2);
      assertArrayEquals(new int[] {2, 20, 4, 400, 1, 1, 8, 80, 4, 400}, ri);

      // Direct buffers with a position: the elements from the position are used, and the
      // position and limit are left alone.
      DoubleBuffer o = direct(8 * 6).asDoubleBuffer();
      o.put(new double[] {-1, -1, 1, 2, 4, 8}).position(2);
      DoubleBuffer i = direct(8 * 7).asDoubleBuffer();
      i.position(2);
      p.reduce(o, i, Op.MIN);
      assertEquals(2, o.position());
      assertEquals(2, i.position());
      assertEquals(7, i.limit());
      assertEquals(0.0, i.get(0));
      assertEquals(2.0, i.get(2));
      assertEquals(1.0, i.get(3));
      assertEquals(Double.POSITIVE_INFINITY, i.get(4));

      // Heap buffers with an offset.
      LongBuffer lo = LongBuffer.wrap(new long[] {0, 1, 2, 4, 8}, 1, 4).slice();
      long[] backing = new long[6];
      LongBuffer li = LongBuffer.wrap(backing, 1, 5).slice();
      p.reduce(lo, li, Op.BOR);
      assertArrayEquals(new long[] {0, 2, 5, 0, 8, 5}, backing);

      // U64 through the generic form: unsigned MAX.
      long big = Long.MIN_VALUE + 1; // 2^63 + 1
      LongBuffer uo = direct(32).asLongBuffer().put(new long[] {big, 7, 5, 1}).flip();
      LongBuffer ui = direct(40).asLongBuffer();
      p.reduce(uo, ui, DType.U64, Op.MAX, 1);
      assertEquals(big, ui.get(1));
      assertEquals(0, ui.get(2)); // U64 MAX identity
      // I64 would see a negative number instead
      p.reduce(uo, ui, DType.I64, Op.MAX, 1);
      assertEquals(5, ui.get(1));

      // A ByteBuffer holding F32.
      ByteBuffer bo = direct(16);
      bo.asFloatBuffer().put(new float[] {1, 2, 4, 8});
      ByteBuffer bi = direct(20);
      p.reduce(bo, bi, DType.F32, Op.SUM, 1);
      assertEquals(5f, bi.asFloatBuffer().get(1));
    }
  }

  @Test
  void configReduceKeepsAPlanWhenAsked() {
    long[] out = {1, 2, 2};
    long[] in = {2, 1, 7};
    double[] res = new double[3];
    comm.configReduce(out, new double[] {1, 2, 3}, in, res, Op.SUM);
    assertArrayEquals(new double[] {5, 1, 0}, res);
    long[] lr = new long[6];
    try (Plan p = comm.configReduceKeepPlan(out, new long[] {1, 1, 2, 2, 3, 3}, in, lr, Op.SUM,
        2)) {
      assertArrayEquals(new long[] {5, 5, 1, 1, 0, 0}, lr);
      assertEquals(3, p.nOut());
      long[] again = new long[3];
      p.reduce(new long[] {10, 20, 30}, again, Op.MAX);
      assertArrayEquals(new long[] {30, 10, Long.MIN_VALUE}, again);
    }
    // Direct index buffers.
    LongBuffer oi = direct(24).asLongBuffer().put(out).flip();
    LongBuffer ii = direct(24).asLongBuffer().put(in).flip();
    FloatBuffer ov = direct(12).asFloatBuffer().put(new float[] {1, 2, 3}).flip();
    FloatBuffer iv = direct(12).asFloatBuffer();
    comm.configReduce(oi, ov, ii, iv, DType.F32, Op.SUM, 1);
    assertEquals(5f, iv.get(0));
  }

  @Test
  void denseCollectivesOnOneRank() {
    double[] a = {1, 2, 3};
    double[] b = new double[3];
    comm.allreduce(a, b, Op.SUM);
    assertArrayEquals(a, b);
    comm.allreduce(a, Op.PROD); // in place
    assertArrayEquals(new double[] {1, 2, 3}, a);
    int[] x = {1, 2, 3};
    IntBuffer same = IntBuffer.wrap(x); // the same heap memory as send and recv
    comm.allreduce(same, IntBuffer.wrap(x), Op.SUM);
    assertArrayEquals(new int[] {1, 2, 3}, x);
    comm.allreduce(new float[0], new float[0], Op.SUM);
    byte[] bytes = {1, 2, 3};
    comm.bcast(bytes, 0);
    assertArrayEquals(new byte[] {1, 2, 3}, bytes);
    comm.barrier();
    double[] m = {1, 2};
    comm.mix(m, 0);
    assertArrayEquals(new double[] {1, 2}, m);
    assertThrows(ArgumentException.class, () -> comm.bcast(new byte[1], 1));
    assertThrows(ArgumentException.class, () -> comm.mix(new double[1], -1));
  }

  @Test
  void javaSideChecksNameTheArgument() {
    try (Plan p = comm.config(new long[] {1, 2}, new long[] {1, 2, 3})) {
      ArgumentException e = assertThrows(ArgumentException.class,
          () -> p.reduce(new double[2], new double[2], Op.SUM));
      assertEquals("inVals", e.argument());
      assertTrue(e.getMessage().contains("n_in*width = 3*1 needs 3"), e.getMessage());
      e = assertThrows(ArgumentException.class,
          () -> p.reduce(new double[3], new double[6], Op.SUM, 2));
      assertEquals("outVals", e.argument());
      e = assertThrows(ArgumentException.class, () -> p.reduce(null, new double[3], Op.SUM));
      assertTrue(e.getMessage().contains("outVals is null"), e.getMessage());
      e = assertThrows(ArgumentException.class,
          () -> p.reduce(new double[2], new double[3], null));
      assertEquals("op", e.argument());
      e = assertThrows(ArgumentException.class,
          () -> p.reduce(new double[2], new double[3], Op.SUM, 0));
      assertNull(e.argument()); // found by the library
      assertTrue(e.getMessage().contains("width"), e.getMessage());
      e = assertThrows(ArgumentException.class, () -> p.reduce(DoubleBuffer.wrap(new double[2]),
          ByteBuffer.allocateDirect(24).asDoubleBuffer(), Op.SUM));
      assertTrue(e.getMessage().contains("byte order"), e.getMessage());
      e = assertThrows(ArgumentException.class, () -> p.reduce(DoubleBuffer.wrap(new double[2]),
          DoubleBuffer.allocate(3).asReadOnlyBuffer(), Op.SUM));
      assertTrue(e.getMessage().contains("read-only"), e.getMessage());
      e = assertThrows(ArgumentException.class, () -> p.reduce(IntBuffer.allocate(2),
          IntBuffer.allocate(3), DType.I64, Op.SUM, 1));
      assertEquals("outVals", e.argument());
      e = assertThrows(ArgumentException.class,
          () -> p.reduce(new float[2], new float[3], Op.BAND));
      assertTrue(e.getMessage().contains("op"), e.getMessage());
      // Still usable after every rejected call.
      double[] r = new double[3];
      p.reduce(new double[] {1, 2}, r, Op.SUM);
      assertArrayEquals(new double[] {1, 2, 0}, r);
    }
    ArgumentException e = assertThrows(ArgumentException.class,
        () -> comm.config(new long[] {-1}, null));
    assertTrue(e.getMessage().contains("out_idx"), e.getMessage());
    e = assertThrows(ArgumentException.class,
        () -> comm.allreduce(new double[3], new double[2], Op.SUM));
    assertEquals("recv", e.argument());
  }

  private static void assertNull(Object o) {
    assertEquals(null, o);
  }

  @Test
  void closedHandles() {
    Plan p = comm.config(new long[] {1}, new long[] {1});
    p.close();
    p.close();
    assertTrue(p.isClosed());
    StateException e = assertThrows(StateException.class,
        () -> p.reduce(new double[1], new double[1], Op.SUM));
    assertTrue(e.getMessage().contains("kylix_reduce"), e.getMessage());
    Plan q = comm.config(new long[] {1}, new long[] {1});
    comm.close();
    assertTrue(q.isClosed());
    q.close(); // after its comm: nothing to do
    comm.close();
    assertThrows(StateException.class, () -> comm.barrier());
    assertThrows(StateException.class, () -> q.reduce(new double[1], new double[1], Op.SUM));
  }

  @Test
  void nonBlockingNeedsDirectBuffersAndHoldsThem() throws Exception {
    try (Plan p = comm.config(new long[] {1, 2}, new long[] {2, 1})) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> p.ireduce(DoubleBuffer.wrap(new double[2]), direct(16).asDoubleBuffer(),
              Op.SUM));
      assertTrue(e.getMessage().contains("outVals") && e.getMessage().contains("direct"),
          e.getMessage());
      assertThrows(IllegalArgumentException.class,
          () -> comm.iallreduce(direct(8), ByteBuffer.allocate(8), DType.F64, Op.SUM));
      DoubleBuffer o = direct(16).asDoubleBuffer().put(new double[] {1, 2}).flip();
      DoubleBuffer i = direct(16).asDoubleBuffer();
      Request r = p.ireduce(o, i, Op.SUM);
      assertTrue(Request.INFLIGHT.contains(r) || r.isDone());
      while (!r.test()) {
        Thread.sleep(1);
      }
      assertTrue(r.isDone());
      assertFalse(Request.INFLIGHT.contains(r));
      assertTrue(r.test());
      r.waitFor(); // after test: returns at once
      assertEquals(2.0, i.get(0));
      assertEquals(1.0, i.get(1));
      Request a = comm.iallreduce(o, i, Op.MAX);
      Request b = p.ireduce(o, i, Op.SUM, 1);
      b.waitFor();
      a.waitFor();
      // Closing the comm finishes requests nobody waited for; their status is lost.
      Request c = comm.iallreduce(o, i, Op.SUM);
      comm.close();
      StateException s = assertThrows(StateException.class, c::waitFor);
      assertTrue(s.getMessage().contains("closed"), s.getMessage());
      assertTrue(Request.INFLIGHT.isEmpty());
    }
  }

  @Test
  void userOps() {
    Op concat = Kylix.opCreate(UserOp.elementwise((x, y) -> 10 * x + y, (x, y) -> 10 * x + y));
    assertTrue(concat.isUserOp() && concat.id() >= 64);
    try (Plan p = comm.config(new long[] {1, 1, 1, 2}, new long[] {1, 2, 3})) {
      long[] r = new long[3];
      p.reduce(new long[] {1, 2, 3, 4}, r, concat); // folded in the caller's order
      assertArrayEquals(new long[] {123, 4, 0}, r);
      double[] d = new double[3];
      p.reduce(new double[] {1, 2, 3, 4}, d, concat);
      assertArrayEquals(new double[] {123, 4, 0}, d);
      Op boom = Kylix.opCreate((a, b, n, t) -> {
        throw new ArithmeticException("boom");
      });
      InternalException e = assertThrows(InternalException.class,
          () -> p.reduce(new double[4], new double[3], boom));
      assertInstanceOf(ArithmeticException.class, e.getCause());
      p.reduce(new double[] {1, 2, 3, 4}, d, Op.SUM); // nothing left over
      assertArrayEquals(new double[] {6, 4, 0}, d);
    }
    assertThrows(ArgumentException.class, () -> Kylix.opCreate(null));
  }

  @Test
  void statsAndPlanning() {
    try (Plan p = comm.config(new long[] {1, 2}, new long[] {2})) {
      p.reduce(new double[2], new double[1], Op.SUM);
    }
    String js = comm.stats();
    assertTrue(js.startsWith("{") && js.contains("\"collectives\""), js);
    Map<String, Object> st = comm.statsMap();
    assertEquals(1L, st.get("version"));
    assertEquals(0L, st.get("rank"));
    assertInstanceOf(List.class, st.get("plans"));
    @SuppressWarnings("unchecked")
    Map<String, Object> red = (Map<String, Object>) ((Map<String, Object>) st.get("collectives"))
        .get("reduce");
    assertEquals(1L, red.get("calls"));
    comm.statsReset();
    @SuppressWarnings("unchecked")
    Map<String, Object> red2 = (Map<String, Object>) ((Map<String, Object>) comm.statsMap()
        .get("collectives")).getOrDefault("reduce", Map.of("calls", 0L));
    assertEquals(0L, red2.get("calls"));
    assertArrayEquals(new int[0], comm.failedRanks());

    int[] deg = Kylix.planDegrees(60_000_000L, 0.21, 64, 1.0, 5_000_000, 4);
    int prod = 1;
    for (int x : deg) {
      prod *= x;
    }
    assertEquals(64, prod);
    ArgumentException e = assertThrows(ArgumentException.class,
        () -> Kylix.planDegrees(100, 0.5, 0, 1, 1 << 20, 4));
    assertTrue(e.getMessage().contains("ranks"), e.getMessage());
  }

  @Test
  void shrinkOfAHealthyComm() {
    try (Comm s = comm.shrink()) {
      assertEquals(0, s.rank());
      assertEquals(1, s.size());
      long[] x = {7};
      s.allreduce(x, Op.SUM);
      assertEquals(7, x[0]);
      StateException e = assertThrows(StateException.class, comm::barrier);
      assertTrue(e.getMessage().contains("shrunk"), e.getMessage());
      e = assertThrows(StateException.class, comm::shrink);
      assertTrue(e.getMessage().contains("already shrunk"), e.getMessage()); // once per comm
    }
  }

  @Test
  void jsonReader() {
    Object v = Json.parse(" {\"a\": [1, -2.5e3, true, false, null, {}], \"b\\\"\": \"x\\u0041\\n\","
        + " \"c\": 123456789012345678901234567890, \"d\": []} ");
    @SuppressWarnings("unchecked")
    Map<String, Object> m = (Map<String, Object>) v;
    assertEquals(List.of(1L, -2500.0, true, false, Map.of()).toString(),
        ((List<?>) m.get("a")).stream().filter(x -> x != null).toList().toString());
    assertEquals("xA\n", m.get("b\""));
    assertInstanceOf(Double.class, m.get("c"));
    assertThrows(IllegalArgumentException.class, () -> Json.parse("{\"a\":}"));
    assertThrows(IllegalArgumentException.class, () -> Json.parse("[1,2"));
  }

  /**
   * RSUM folds one rank's repeated indices exactly and in no particular order: 1e16 + 1 - 1e16
   * in any order is 1 (a plain left-to-right sum gives 0), and integers are refused.
   */
  @Test
  void rsumIsOrderFree() {
    double[][] orders = {{1e16, 1, -1e16}, {1, 1e16, -1e16}, {-1e16, 1e16, 1}};
    try (Plan plan = comm.config(new long[] {7, 7, 7}, new long[] {7, 8})) {
      for (double[] vals : orders) {
        double[] got = new double[2];
        plan.reduce(vals, got, Op.RSUM);
        assertArrayEquals(new double[] {1, 0}, got, 0.0);
        float[] gotF = new float[2];
        // f32 keeps a 64-bit window (32 bits surely): 1e8 + 1 - 1e8, where a float sum gives 0
        float[] f = new float[3];
        for (int k = 0; k < 3; k++) {
          f[k] = (float) (vals[k] == 1 ? 1 : Math.signum(vals[k]) * 1e8);
        }
        plan.reduce(f, gotF, Op.RSUM);
        assertArrayEquals(new float[] {1, 0}, gotF, 0.0f);
      }
      double[] sum = new double[2];
      plan.reduce(orders[0], sum, Op.SUM);
      assertEquals(0.0, sum[0], "SUM folds 1e16 + 1 in floating point first");
      ArgumentException e = assertThrows(ArgumentException.class,
          () -> plan.reduce(new long[3], new long[2], Op.RSUM));
      assertTrue(e.getMessage().contains("rsum") && e.getMessage().contains("i64"), e.getMessage());
    }
  }

  /**
   * Blocking calls on Java arrays take a lean path (no Vals, no Stage) when the arguments are as
   * expected, the general path otherwise: both give the same results, the general path still
   * names what is wrong, and the comm's scratch memory stays right when sizes change between
   * calls of either path.
   */
  @Test
  void leanArrayPathsAndTheirFallbacks() {
    float[] f = {1, 2, 3, 4, 5, 6, 7, 8};
    float[] fr = new float[10]; // longer: the tail is left alone
    fr[9] = 42;
    comm.allreduce(f, fr, Op.SUM);
    assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6, 7, 8, 0, 42}, fr);
    double[] d = {1.5, -2};
    double[] dr = new double[2];
    comm.allreduce(d, dr, Op.MAX);
    assertArrayEquals(d, dr);
    int[] i = {3, 4, 5};
    comm.allreduce(i, i, Op.BOR); // the same array twice: staged once, in place
    assertArrayEquals(new int[] {3, 4, 5}, i);
    long[] l = {Long.MIN_VALUE, 7};
    comm.allreduce(l, Op.MIN);
    assertArrayEquals(new long[] {Long.MIN_VALUE, 7}, l);

    // Sizes change: the scratch memory grows and the second argument's pointer moves with it.
    double[] big = new double[100_000];
    for (int k = 0; k < big.length; k++) {
      big[k] = k;
    }
    double[] bigr = new double[big.length];
    comm.allreduce(big, bigr, Op.SUM);
    assertArrayEquals(big, bigr);
    float[] fr2 = new float[8];
    comm.allreduce(f, fr2, Op.SUM);
    assertArrayEquals(f, fr2);
    comm.allreduce(FloatBuffer.wrap(f), FloatBuffer.wrap(fr2), Op.SUM); // general, same scratch
    assertArrayEquals(f, fr2);

    // Not for the lean path: the general path, with its messages.
    ArgumentException e = assertThrows(ArgumentException.class,
        () -> comm.allreduce(new float[2], null, Op.SUM));
    assertEquals("recv", e.argument());
    e = assertThrows(ArgumentException.class,
        () -> comm.allreduce(new long[3], new long[2], Op.SUM));
    assertEquals("recv", e.argument());
    assertTrue(e.getMessage().contains("send's length 3"), e.getMessage());
    e = assertThrows(ArgumentException.class, () -> comm.allreduce(new int[2], (Op) null));
    assertEquals("op", e.argument());
    e = assertThrows(ArgumentException.class,
        () -> comm.allreduce(new float[2], new float[2], Op.BXOR)); // the library refuses
    assertTrue(e.getMessage().contains("op"), e.getMessage());
    comm.allreduce(new double[0], new double[0], Op.SUM);
    comm.allreduce(new long[0], Op.SUM);

    // bcast of arrays (lean on the root here; SparseWorker covers the other ranks).
    float[] bf = {1, 2, 3};
    comm.bcast(bf, 0);
    assertArrayEquals(new float[] {1, 2, 3}, bf);
    long[] bl = {Long.MAX_VALUE, -1};
    comm.bcast(bl, 0);
    assertArrayEquals(new long[] {Long.MAX_VALUE, -1}, bl);
    comm.bcast(new int[0], 0);
    e = assertThrows(ArgumentException.class, () -> comm.bcast(new double[2], 3));
    assertTrue(e.getMessage().contains("root"), e.getMessage());

    try (Plan p = comm.config(new long[] {1, 2}, new long[] {2, 1, 9})) {
      double[] r = new double[7];
      r[6] = 42;
      p.reduce(new double[] {1, 10, 2, 20}, r, Op.SUM, 2);
      assertArrayEquals(new double[] {2, 20, 1, 10, 0, 0, 42}, r);
      int[] ri = new int[3];
      p.reduce(new int[] {5, 6}, ri, Op.MAX);
      assertArrayEquals(new int[] {6, 5, Integer.MIN_VALUE}, ri);
      e = assertThrows(ArgumentException.class, () -> p.reduce(new float[1], new float[3], Op.SUM));
      assertEquals("outVals", e.argument());
      e = assertThrows(ArgumentException.class, () -> p.reduce(new long[2], new long[2], Op.SUM));
      assertEquals("inVals", e.argument());
      e = assertThrows(ArgumentException.class,
          () -> p.reduce(new double[2], new double[3], null));
      assertEquals("op", e.argument());
      e = assertThrows(ArgumentException.class,
          () -> p.reduce(new double[2], new double[3], Op.SUM, -1));
      assertTrue(e.getMessage().contains("width"), e.getMessage());
    }
    try (Plan empty = comm.config(new long[] {1}, new long[0])) { // nothing to write: general
      empty.reduce(new float[] {1}, new float[0], Op.SUM);
    }
    Plan closedPlan = comm.config(new long[] {1}, new long[] {1});
    closedPlan.close();
    assertThrows(StateException.class,
        () -> closedPlan.reduce(new float[1], new float[1], Op.SUM));
    comm.close();
    StateException s = assertThrows(StateException.class,
        () -> comm.allreduce(new float[1], new float[1], Op.SUM));
    assertTrue(s.getMessage().contains("closed"), s.getMessage());
    assertThrows(StateException.class, () -> comm.allreduce(new float[1], Op.SUM));
  }
}
