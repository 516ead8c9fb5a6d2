package org.kylix.examples;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import org.kylix.Comm;
import org.kylix.Kylix;
import org.kylix.Op;
import org.kylix.Plan;

/**
 * Running Kylix inside a Spark barrier stage, without kylixrun: each task is a rank, its rank is
 * {@code BarrierTaskContext.partitionId()}, and the peers table comes from one {@code
 * allGather} of every task's {@code host:port}. Inside a barrier task:
 *
 * <pre>{@code
 * BarrierTaskContext ctx = BarrierTaskContext.get();
 * String host = ctx.getTaskInfos()[ctx.partitionId()].address().split(":")[0];
 * try (Comm comm = SparkBarrier.join(new SparkBarrier.Context() {
 *       public int partitionId() { return ctx.partitionId(); }
 *       public String[] allGather(String m) { return ctx.allGather(m); }
 *     }, host, secret, "timeout_ms=60000")) {     // secret: newSecret() on the driver
 *   ... comm.config / plan.reduce / comm.allreduce over this partition's data ...
 * }
 * }</pre>
 *
 * <p>From Java the stage is {@code javaRdd.rdd().barrier().mapPartitions(f, false, classTag)}
 * with a serializable {@code scala.Function1}: bindings/java/README.md shows it, and
 * tests/userpaths/SparkKylixJob.java runs it through spark-submit in a real Spark.
 *
 * <p>{@link #main} checks the recipe without Spark, with the two ways barrier tasks really run:
 * {@code threads N} runs N tasks as threads of one JVM (Spark's local mode, and several tasks
 * per executor: one process may hold several comms, each used by its own thread), and {@code
 * process RANK SIZE DIR} is one task of a multi-process job whose allGather goes through files
 * in a shared directory (the JUnit test starts SIZE such JVMs with no KYLIX_* environment).
 */
public final class SparkBarrier {
  private SparkBarrier() {}

  /** The two calls of {@code org.apache.spark.BarrierTaskContext} the recipe needs. */
  public interface Context {
    /** This task's partition id: 0..numTasks-1. */
    int partitionId();

    /** Blocks until every task has called it; returns every task's message. */
    String[] allGather(String message);
  }

  /** A fresh job secret (128 bits, hex): make it once on the driver and ship it to the tasks. */
  public static String newSecret() {
    byte[] b = new byte[16];
    new SecureRandom().nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  /**
   * Joins the Kylix job of a barrier stage: picks a free port on {@code host}, allGathers every
   * task's {@code id=host:port}, and calls {@code Kylix.init("rank=..;size=..;peers=..;
   * secret=..")}. The messages carry the partition id, so the table is in rank order whatever
   * order allGather returns them in.
   *
   * <p>The port is found by binding port 0 and closing it; another process could take it before
   * Kylix listens on it (rare). Kylix.init then throws a NetworkException on that task, the
   * others time out, and Spark retries the barrier stage as a whole, which is what barrier mode
   * is for.
   *
   * @param host the address the other tasks reach this one at
   * @param secret the same on every task (see {@link #newSecret()})
   * @param options more Kylix options ("timeout_ms=60000;degrees=auto"), or "" or null
   */
  public static Comm join(Context ctx, String host, String secret, String options) {
    int port = freePort(host);
    String[] all = ctx.allGather(ctx.partitionId() + "=" + host + ":" + port);
    String[] peers = new String[all.length];
    for (String m : all) {
      int eq = m.indexOf('=');
      peers[Integer.parseInt(m.substring(0, eq))] = m.substring(eq + 1);
    }
    String opts = "rank=" + ctx.partitionId() + ";size=" + peers.length + ";peers="
        + String.join(",", peers) + ";secret=" + secret;
    if (options != null && !options.isEmpty()) {
      opts += ";" + options;
    }
    return Kylix.init(opts);
  }

  /**
   * A port for this rank's listener, free a moment ago, announced before the library binds it:
   * chosen at random below the kernel's ephemeral range, where no port-0 listen or outgoing
   * connection of another process (the executor's own, say) can be handed it in between.
   */
  static int freePort(String host) {
    int low = 32768;
    try {
      // readLine, not Files.readAllBytes: /proc files report size 0 and come back cut short
      try (java.io.BufferedReader r = java.nio.file.Files.newBufferedReader(
          java.nio.file.Paths.get("/proc/sys/net/ipv4/ip_local_port_range"))) {
        low = Integer.parseInt(r.readLine().trim().split("\\s+")[0]);
      }
    } catch (IOException | RuntimeException e) {
      // not Linux, or unreadable: the usual default
    }
    int lo = Math.max(low - 12000, 1024), hi = Math.max(low, lo + 1000);
    try {
      InetAddress addr = InetAddress.getByName(host);
      java.util.Random rnd = new java.security.SecureRandom();
      for (int i = 0; i < 200; i++) {
        int p = lo + rnd.nextInt(hi - lo);
        try (ServerSocket s = new ServerSocket()) {
          s.bind(new InetSocketAddress(addr, p));
          return p;
        } catch (IOException taken) {
          // someone has it: another
        }
      }
      try (ServerSocket s = new ServerSocket()) {
        s.bind(new InetSocketAddress(addr, 0));
        return s.getLocalPort();
      }
    } catch (IOException e) {
      throw new UncheckedIOException("no free port on " + host, e);
    }
  }

  /**
   * What each simulated task does once joined: a sparse reduce and an allreduce whose results
   * it can check by itself. Prints {@code r<rank> PASS|FAIL ...} lines; returns the failures.
   */
  static int work(Comm comm, String how) {
    int me = comm.rank(), n = comm.size(), fails = 0;
    long[] out = {me, 1000 + me, 7};
    double[] vals = {1, me, 2};
    long[] in = new long[n + 2];
    for (int r = 0; r < n; r++) {
      in[r] = 1000 + r;
    }
    in[n] = 7;
    in[n + 1] = 5000; // nobody contributes
    double[] res = new double[in.length];
    try (Plan p = comm.config(out, in)) {
      p.reduce(vals, res, Op.SUM);
    }
    double[] want = new double[in.length];
    for (int r = 0; r < n; r++) {
      want[r] = r;
    }
    want[n] = 2.0 * n;
    long[] sum = {me + 1};
    comm.allreduce(sum, Op.SUM);
    boolean ok = Arrays.equals(want, res) && sum[0] == (long) n * (n + 1) / 2;
    System.out.println("r" + me + (ok ? " PASS " : " FAIL ") + how + ": rank " + me + " of " + n
        + ", reduce " + Arrays.toString(res) + ", allreduce " + sum[0]);
    return ok ? 0 : 1;
  }

  /** {@code threads N} or {@code process RANK SIZE DIR} (see the class comment). */
  public static void main(String[] args) throws Exception {
    if (args.length == 2 && args[0].equals("threads")) {
      System.exit(runThreads(Integer.parseInt(args[1])) == 0 ? 0 : 1);
    } else if (args.length == 4 && args[0].equals("process")) {
      int rank = Integer.parseInt(args[1]), size = Integer.parseInt(args[2]);
      Path dir = Path.of(args[3]);
      String secret = Files.readString(dir.resolve("secret")).trim(); // "shipped by the driver"
      int fails;
      try (Comm comm = join(new FileContext(rank, size, dir), "127.0.0.1", secret,
          "timeout_ms=30000")) {
        System.out.println("r" + rank + " INFO libkylix loaded from " + Kylix.libraryPath());
        fails = work(comm, "process task");
      }
      System.out.println("r" + rank + " DONE fails=" + fails);
      System.exit(fails == 0 ? 0 : 1);
    } else {
      System.err.println("usage: SparkBarrier threads N | process RANK SIZE DIR");
      System.exit(2);
    }
  }

  /** N tasks as threads of this JVM; returns the number of failures. */
  public static int runThreads(int n) throws InterruptedException {
    String secret = newSecret();
    ThreadGather gather = new ThreadGather(n);
    int[] fails = new int[n];
    List<Thread> ts = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      final int id = i;
      Thread t = new Thread(() -> {
        Context ctx = new Context() {
          @Override
          public int partitionId() {
            return id;
          }

          @Override
          public String[] allGather(String m) {
            return gather.allGather(id, m);
          }
        };
        try (Comm comm = join(ctx, "127.0.0.1", secret, "timeout_ms=30000")) {
          fails[id] = work(comm, "thread task");
        } catch (RuntimeException e) {
          System.out.println("r" + id + " FAIL thread task: " + e);
          fails[id] = 1;
        }
      }, "barrier-task-" + i);
      ts.add(t);
      t.start();
    }
    int total = 0;
    for (int i = 0; i < n; i++) {
      ts.get(i).join(120_000);
      total += ts.get(i).isAlive() ? 1 : fails[i];
    }
    return total;
  }

  /** allGather among the threads of one JVM. */
  static final class ThreadGather {
    private final String[] slots;
    private final CyclicBarrier barrier;

    ThreadGather(int n) {
      slots = new String[n];
      barrier = new CyclicBarrier(n);
    }

    String[] allGather(int id, String m) {
      try {
        slots[id] = m;
        barrier.await();
        String[] r = slots.clone();
        barrier.await(); // nobody overwrites a slot before everyone has read
        return r;
      } catch (InterruptedException | BrokenBarrierException e) {
        throw new IllegalStateException("allGather interrupted", e);
      }
    }
  }

  /** allGather among processes through files in a shared directory (one round). */
  static final class FileContext implements Context {
    private final int rank;
    private final int size;
    private final Path dir;

    FileContext(int rank, int size, Path dir) {
      this.rank = rank;
      this.size = size;
      this.dir = dir;
    }

    @Override
    public int partitionId() {
      return rank;
    }

    @Override
    public String[] allGather(String m) {
      try {
        Path tmp = dir.resolve("addr." + rank + ".tmp");
        Files.writeString(tmp, m, StandardCharsets.UTF_8);
        Files.move(tmp, dir.resolve("addr." + rank), StandardCopyOption.ATOMIC_MOVE);
        String[] r = new String[size];
        long deadline = System.nanoTime() + 60_000_000_000L;
        for (int i = 0; i < size; i++) {
          Path p = dir.resolve("addr." + i);
          while (!Files.exists(p)) {
            if (System.nanoTime() > deadline) {
              throw new IllegalStateException("allGather: task " + i + " never wrote " + p);
            }
            Thread.sleep(20);
          }
          r[i] = Files.readString(p, StandardCharsets.UTF_8);
        }
        return r;
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("allGather interrupted", e);
      }
    }
  }
}
