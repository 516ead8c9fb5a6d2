// The 8-float allreduce from Java (JNA), one rank's loop: the counterpart of small_py.py.
//
//   kylixrun -n 2 -- java -cp bindings/java/target/kylix-0.1.0.jar:bindings/java/target/lib/jna-5.17.0.jar:<dir of this class> SmallAllreduce [iters]
//
// Times `iters` back-to-back allreduces of 8 floats (kept arrays) after a warm-up and prints
// the slowest rank's mean per call in microseconds.
import org.kylix.Comm;
import org.kylix.Kylix;
import org.kylix.Op;

public final class SmallAllreduce {
  public static void main(String[] args) {
    int iters = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
    float[] x = new float[8];
    float[] out = new float[8];
    for (int i = 0; i < 8; i++) x[i] = i;
    try (Comm c = Kylix.init()) {
      for (int i = 0; i < 2000; i++) c.allreduce(x, out, Op.SUM); // warm-up, JIT included
      long t0 = System.nanoTime();
      for (int i = 0; i < iters; i++) c.allreduce(x, out, Op.SUM);
      double[] mean = {(System.nanoTime() - t0) / 1e3 / iters};
      c.allreduce(mean, Op.MAX);
      if (c.rank() == 0) System.out.printf("JLAT impl=kylix-java op=dense8 iters=%d mean_us=%.2f%n", iters, mean[0]);
    }
  }
}
