import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.Arrays;
import org.kylix.Comm;
import org.kylix.Kylix;
import org.kylix.KylixNative;
import org.kylix.Op;
import org.kylix.Plan;

/**
 * The Java side of the reduce benchmark (see reduce_bench.c for the C baseline, same plan and
 * timing): per-call time of a reduce of N f32 values through
 *   array    Plan.reduce(float[], float[])      arrays staged through the comm's scratch memory
 *   direct   Plan.reduce(FloatBuffer direct...)   zero copy
 *   raw      KylixNative.kylix_reduce(Pointer...) layer 1 with direct buffers (no checks)
 *   jna-array  a direct-mapped kylix_reduce(float[], float[]): JNA's own array passing
 * and of a 1-index reduce (the fixed cost of a call). Rank 0 prints
 *   Java <case> median_us <m> min_us <m> calls <k>
 * and the same on a one-rank comm (no network).
 *
 *   kylixrun -n 2 -- java -cp <kylix classes>:<jna jar>:. ReduceBench [N] [calls]
 */
public final class ReduceBench {
  /** A direct-mapped binding that passes Java arrays as JNA does by itself. */
  static final class JnaArrays {
    static native int kylix_reduce(Pointer p, float[] out, float[] in, int dtype, int op, int w);

    static void register() {
      Native.register(JnaArrays.class, NativeLibrary.getInstance(Kylix.libraryPath()));
    }
  }

  interface Call {
    void run();
  }

  /**
   * Times the variants round-robin (one call, or one batch of calls, of each in turn), so that
   * they all see the same machine state; batch 1 puts a barrier before each timed call, as
   * reduce_bench.c does. Reports per-call median and minimum per variant.
   */
  static void time(Comm c, String size, int calls, int batch, String[] names, Call... variants) {
    for (int w = 0; w < Math.max(3, calls / 5) * batch; w++) { // warm up JIT and scratch memory
      for (Call v : variants) {
        v.run();
      }
    }
    double[][] t = new double[variants.length][calls];
    for (int k = 0; k < calls; k++) {
      for (int v = 0; v < variants.length; v++) {
        if (batch == 1) {
          c.barrier();
        }
        long t0 = System.nanoTime();
        for (int b = 0; b < batch; b++) {
          variants[v].run();
        }
        t[v][k] = (System.nanoTime() - t0) / 1e3 / batch;
      }
    }
    for (int v = 0; v < variants.length; v++) {
      Arrays.sort(t[v]);
      if (c.rank() == 0) {
        System.out.printf("Java %-28s median_us %.2f min_us %.2f calls %d%n",
            size + " " + names[v], t[v][calls / 2], t[v][0], calls * batch);
      }
    }
  }

  static void check(int st) {
    if (st != 0) {
      throw new IllegalStateException("status " + st);
    }
  }

  static long[] shuffled(int n) {
    long[] idx = new long[n];
    for (int i = 0; i < n; i++) {
      idx[i] = i;
    }
    long s = 12345;
    for (int i = n - 1; i > 0; i--) { // the same shuffle as reduce_bench.c
      s = s * 6364136223846793005L + 1442695040888963407L;
      int j = (int) Long.remainderUnsigned(s >>> 33, i + 1);
      long t = idx[i];
      idx[i] = idx[j];
      idx[j] = t;
    }
    return idx;
  }

  static void bench(Comm c, String size, int n, int calls, int batch) {
    long[] idx = shuffled(n);
    float[] out = new float[n];
    for (int i = 0; i < n; i++) {
      out[i] = i % 100;
    }
    float[] in = new float[n];
    FloatBuffer dOut = ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder())
        .asFloatBuffer().put(out).flip();
    FloatBuffer dIn = ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder())
        .asFloatBuffer();
    Pointer pOut = Native.getDirectBufferPointer(dOut), pIn = Native.getDirectBufferPointer(dIn);
    try (Plan p = c.config(idx, idx)) {
      time(c, size, calls, batch, new String[] {"array", "direct", "raw", "jna-array"},
          () -> p.reduce(out, in, Op.SUM),
          () -> p.reduce(dOut, dIn, Op.SUM),
          () -> check(KylixNative.kylix_reduce(p.handle(), pOut, pIn, 1, 1, 1)),
          () -> check(JnaArrays.kylix_reduce(p.handle(), out, in, 1, 1, 1)));
      if (in[0] != dIn.get(0) || in[n - 1] != dIn.get(n - 1)) {
        throw new IllegalStateException("array and direct results differ");
      }
    }
  }

  public static void main(String[] args) {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 1 << 20;
    int calls = args.length > 1 ? Integer.parseInt(args[1]) : 30;
    JnaArrays.register();
    try (Comm c = Kylix.init(""); Comm one = Kylix.init("rank=0;size=1")) {
      bench(c, "f32-1M", n, calls, 1);
      bench(c, "f32-1", 1, calls * 20, 1);
      if (c.rank() == 0) { // no network: the cost of the call and of the memory
        bench(one, "local-f32-1M", n, calls, 1);
        bench(one, "local-f32-1", 1, 200, 1000);
      }
    }
  }
}
