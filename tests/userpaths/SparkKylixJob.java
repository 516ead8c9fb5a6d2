import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.kylix.Comm;
import org.kylix.Op;
import org.kylix.Plan;
import org.kylix.examples.SparkBarrier;
import scala.Function1;
import scala.collection.Iterator;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * The SparkBarrier recipe of bindings/java/README.md inside a real Spark (local mode, through
 * spark-submit): a barrier stage of N tasks joins one Kylix job with SparkBarrier.join over
 * BarrierTaskContext.allGather; each task runs config + reduce and a dense allreduce on its
 * partition; the driver checks every task's results against a single-process answer computed
 * from every partition's regenerated data. Prints one PASS/FAIL line; exits 1 on FAIL.
 *
 * <p>Java reaches barrier mode through the RDD API (JavaRDD has no barrier()): rdd().barrier()
 * .mapPartitions takes a Scala function and a ClassTag.
 */
public final class SparkKylixJob {
  static final int FEATURES = 50_000;
  static final int DENSE = 10_000;

  /** Partition p's data: a small LCG, so the driver regenerates it exactly. */
  static final class Data {
    final long[] outIdx = new long[3000];
    final double[] outVals = new double[3000];
    final long[] inIdx = new long[2001];
    final double[] dense = new double[DENSE];

    Data(int p) {
      long s = 0x9E3779B97F4A7C15L * (p + 1);
      for (int i = 0; i < outIdx.length; i++) {
        s = s * 6364136223846793005L + 1442695040888963407L;
        outIdx[i] = i == 0 ? p : (s >>> 33) % FEATURES;   // repeats included; 0..size-1 each once
        outVals[i] = (int) ((s >>> 20) % 100) - 50;
      }
      for (int i = 0; i < inIdx.length; i++) {
        s = s * 6364136223846793005L + 1442695040888963407L;
        inIdx[i] = i == 0 ? 2L * FEATURES : (s >>> 33) % FEATURES; // one nobody contributes
      }
      for (int i = 0; i < DENSE; i++) {
        s = s * 6364136223846793005L + 1442695040888963407L;
        dense[i] = (int) ((s >>> 20) % 2000) - 1000;
      }
    }
  }

  /** What task p computes with Kylix: "p|reduce values|allreduce values". */
  static String work(Comm comm) {
    Data d = new Data(comm.rank());
    double[] res = new double[d.inIdx.length];
    try (Plan plan = comm.config(d.outIdx, d.inIdx)) {
      plan.reduce(d.outVals, res, Op.SUM);
    }
    double[] dense = d.dense.clone();
    comm.allreduce(dense, Op.SUM);
    return comm.rank() + "|" + comm.size() + "|" + Arrays.toString(res) + "|"
        + Arrays.toString(dense);
  }

  /** The single-process answer for partition p of n. */
  static String expected(int p, int n) {
    double[] total = new double[2 * FEATURES + 1];
    double[] dense = new double[DENSE];
    for (int r = 0; r < n; r++) {
      Data d = new Data(r);
      for (int i = 0; i < d.outIdx.length; i++) {
        total[(int) d.outIdx[i]] += d.outVals[i];
      }
      for (int i = 0; i < DENSE; i++) {
        dense[i] += d.dense[i];
      }
    }
    long[] in = new Data(p).inIdx;
    double[] want = new double[in.length];
    for (int i = 0; i < in.length; i++) {
      want[i] = total[(int) in[i]];
    }
    return p + "|" + n + "|" + Arrays.toString(want) + "|" + Arrays.toString(dense);
  }

  public static void main(String[] args) {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 4;
    SparkConf conf = new SparkConf().setAppName("kylix-barrier-java")
        .setIfMissing("spark.master", "local[" + n + "]").set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false");
    List<String> got;
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      String secret = SparkBarrier.newSecret();              // on the driver: in the closure
      List<Integer> parts = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        parts.add(i);
      }
      ClassTag<String> tag = ClassTag$.MODULE$.apply(String.class);
      Function1<Iterator<Integer>, Iterator<String>> task =
          (Function1<Iterator<Integer>, Iterator<String>> & Serializable) rows -> {
            BarrierTaskContext ctx = BarrierTaskContext.get();
            String host = ctx.getTaskInfos()[ctx.partitionId()].address().split(":")[0];
            try (Comm comm = SparkBarrier.join(new SparkBarrier.Context() {
                  public int partitionId() {
                    return ctx.partitionId();
                  }

                  public String[] allGather(String m) {
                    return ctx.allGather(m);
                  }
                }, host, secret, "timeout_ms=60000")) {
              return CollectionConverters.asScala(List.of(work(comm)).iterator());
            }
          };
      got = new JavaRDD<>(sc.parallelize(parts, n).rdd().barrier().mapPartitions(task, false, tag),
          tag).collect();
    }
    int fails = 0;
    for (int p = 0; p < n; p++) {
      String want = expected(p, n);
      long match = got.stream().filter(want::equals).count();
      if (match != 1) {
        System.out.println("FAIL task " + p + ": results differ from the single-process answer");
        fails++;
      }
    }
    System.out.println("spark-submit: " + (fails == 0 && got.size() == n ? "PASS" : "FAIL")
        + " barrier stage of " + n + " tasks, " + got.size() + " results");
    System.exit(fails == 0 && got.size() == n ? 0 : 1);
  }
}
