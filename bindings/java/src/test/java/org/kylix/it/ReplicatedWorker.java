package org.kylix.it;

import com.sun.jna.Library;
import com.sun.jna.Native;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeSet;
import org.kylix.Comm;
import org.kylix.Kylix;
import org.kylix.Op;
import org.kylix.Plan;

/**
 * A replicated job ({@code kylixrun --replication S}) that loses replicas to SIGKILL in the
 * middle of a call and goes on, through the JNA binding. Every survivor checks every result of
 * every iteration, bit for bit, against a brute force over the node data (each node counted
 * once), then failedRanks() and the "replication" section of the stats.
 *
 * <p>{@code ReplicatedWorker ENDDIR ITERS [RANK:CALL:ITER ...]}: rank r is replica r/(size/S) of
 * node r%(size/S) and its data depend on the node only (include/kylix.h, replication). Each
 * iteration: config + reduce (f64 SUM, width 8), allreduce (f64 SUM), configReduce (i64 MAX).
 * CALL is config, reduce, dense or cfgred: rank RANK sends itself SIGKILL from a thread 300 us
 * after that call of iteration ITER starts. ENDDIR is an empty directory where the survivors meet
 * before they close (see the end of main).
 */
public final class ReplicatedWorker {
  static final int NFEAT = 1 << 21;
  static final int NOUT = 60000;
  static final int NIN = 40000;
  static final int NDENSE = 1 << 17;
  /** Reduce width: enough bytes that a reduce lasts milliseconds, so the kill lands in it. */
  static final int WIDTH = 8;

  /** libc's kill(2): a real SIGKILL, which the JVM can neither catch nor delay. */
  interface LibC extends Library {
    int kill(int pid, int sig);
  }

  static final int SIGKILL = 9;

  /** Node data of one iteration: out indices (with repeats), values, in indices. */
  static final class NodeData {
    final long[] out = new long[NOUT];
    final double[] vals = new double[NOUT];
    final long[] in = new long[NIN];

    NodeData(int node, int it) {
      SplittableRandom g = new SplittableRandom(42L * 1_000_003L + it * 7919L + node);
      // A hot head shared by every node plus a uniform tail, like power-law features.
      for (int i = 0; i < NOUT; i++) {
        out[i] = g.nextInt(4) == 0 ? g.nextInt(500) : g.nextInt(NFEAT);
        vals[i] = g.nextInt(7) - 3; // small integers: sums are exact in any order
      }
      for (int i = 0; i < NIN; i++) {
        in[i] = g.nextInt(3) == 0 ? g.nextInt(500) : g.nextInt(NFEAT);
      }
    }
  }

  static double denseVal(int node, int it, int i) {
    return (node + 1) * ((i + it) % 5);
  }

  public static void main(String[] args) throws Exception {
    Path endDir = Path.of(args[0]);
    int iters = Integer.parseInt(args[1]);
    List<String> events = Arrays.asList(args).subList(2, args.length);
    TreeSet<Integer> dead = new TreeSet<>();
    for (String e : events) {
      dead.add(Integer.parseInt(e.split(":")[0]));
    }
    Comm comm = Kylix.init("");
    int rank = comm.rank();
    int size = comm.size();
    String sv = System.getenv("KYLIX_REPLICATION");
    int s = sv == null ? 1 : Integer.parseInt(sv);
    int m = size / s;
    int node = rank % m;
    Check ck = new Check(rank, 100);
    ck.info("rank " + rank + " of " + size + ": replica " + rank / m + " of node " + node);
    LibC libc = Native.load("c", LibC.class);
    int pid = (int) ProcessHandle.current().pid();

    for (int it = 0; it < iters; it++) {
      NodeData[] nodes = new NodeData[m];
      double[] acc = new double[NFEAT];
      long[] imax = new long[NFEAT];
      Arrays.fill(imax, Long.MIN_VALUE);
      for (int nd = 0; nd < m; nd++) {
        NodeData d = nodes[nd] = new NodeData(nd, it);
        for (int k = 0; k < NOUT; k++) {
          int ix = (int) d.out[k];
          acc[ix] += d.vals[k];
          imax[ix] = Math.max(imax[ix], (long) d.vals[k] * 1000 + nd);
        }
      }
      NodeData mine = nodes[node];
      // Column c of a row holds the node's value times c+1 (still exact).
      double[] vals = new double[NOUT * WIDTH];
      for (int k = 0; k < NOUT; k++) {
        for (int c = 0; c < WIDTH; c++) {
          vals[k * WIDTH + c] = mine.vals[k] * (c + 1);
        }
      }
      double[] want = new double[NIN * WIDTH];
      long[] iwant = new long[NIN];
      for (int k = 0; k < NIN; k++) {
        for (int c = 0; c < WIDTH; c++) {
          want[k * WIDTH + c] = acc[(int) mine.in[k]] * (c + 1);
        }
        iwant[k] = imax[(int) mine.in[k]];
      }

      double[] got = new double[NIN * WIDTH];
      dieDuring(events, rank, "config", it, libc, pid, ck);
      try (Plan p = comm.config(mine.out, mine.in)) {
        survived(events, rank, "config", it, ck);
        dieDuring(events, rank, "reduce", it, libc, pid, ck);
        p.reduce(vals, got, Op.SUM, WIDTH);
        survived(events, rank, "reduce", it, ck);
      }
      ck.equal(want, got, "reduce of iteration " + it);

      double[] send = new double[NDENSE];
      double[] dwant = new double[NDENSE];
      for (int i = 0; i < NDENSE; i++) {
        send[i] = denseVal(node, it, i);
        for (int nd = 0; nd < m; nd++) {
          dwant[i] += denseVal(nd, it, i);
        }
      }
      double[] drecv = new double[NDENSE];
      dieDuring(events, rank, "dense", it, libc, pid, ck);
      comm.allreduce(send, drecv, Op.SUM);
      survived(events, rank, "dense", it, ck);
      ck.equal(dwant, drecv, "allreduce of iteration " + it);

      long[] ivals = new long[NOUT];
      for (int k = 0; k < NOUT; k++) {
        ivals[k] = (long) mine.vals[k] * 1000 + node;
      }
      long[] igot = new long[NIN];
      dieDuring(events, rank, "cfgred", it, libc, pid, ck);
      comm.configReduce(mine.out, ivals, mine.in, igot, Op.MAX);
      survived(events, rank, "cfgred", it, ck);
      ck.equal(iwant, igot, "config_reduce of iteration " + it);
    }

    // The list only grows; every survivor's transport sees the victims' connections close.
    List<Integer> want = new ArrayList<>(dead);
    long deadline = System.nanoTime() + 10_000_000_000L;
    List<Integer> fr = asList(comm.failedRanks());
    while (!fr.equals(want) && System.nanoTime() < deadline) {
      Thread.sleep(50);
      fr = asList(comm.failedRanks());
    }
    ck.equal(want, fr, "failedRanks() " + fr);

    Map<String, Object> rep = asMap(comm.statsMap().get("replication"));
    ck.equal(List.of((long) s, (long) m, (long) node),
        List.of(rep.get("replicas"), rep.get("nodes"), rep.get("node")),
        "stats replication: replicas, nodes, node");
    ck.equal(want.stream().map(Integer::longValue).toList(), rep.get("failed_ranks"),
        "stats failed_ranks");

    // The survivors meet on files before anyone closes: see worker_replicated.py (Python) for
    // why a collective cannot be this barrier with replication.
    Files.createFile(endDir.resolve("done." + rank));
    deadline = System.nanoTime() + 60_000_000_000L;
    while (!allDone(endDir, size, dead) && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    ck.expect(allDone(endDir, size, dead), "every survivor reached the end");

    // Before the kills every message came twice, once from each replica of its node. A lagging
    // replica's copies may all come after this rank's calls: counted once every survivor is done.
    deadline = System.nanoTime() + 10_000_000_000L;
    while ((Long) rep.get("copies_lost") == 0 && System.nanoTime() < deadline) {
      Thread.sleep(50);
      rep = asMap(comm.statsMap().get("replication"));
    }
    long won = (Long) rep.get("copies_won");
    long lost = (Long) rep.get("copies_lost");
    long dup = (Long) rep.get("duplicate_bytes");
    ck.expect(won > 0 && lost > 0 && dup > 0,
        "copies won " + won + ", lost " + lost + ", duplicate bytes " + dup);
    comm.close();
    ck.done();
  }

  /** When an event names this rank, call and iteration: SIGKILL from a thread, mid-call. */
  static void dieDuring(List<String> events, int rank, String call, int it, LibC libc, int pid,
      Check ck) {
    if (!events.contains(rank + ":" + call + ":" + it)) {
      return;
    }
    ck.info("victim: dies 300 us into " + call + " of iteration " + it);
    Thread t = new Thread(() -> {
      try {
        Thread.sleep(0, 300_000);
      } catch (InterruptedException e) {
        // die all the same
      }
      libc.kill(pid, SIGKILL);
    }, "killer");
    t.setDaemon(true);
    t.start();
  }

  /** A victim whose call returned before the kill landed waits for it here. */
  static void survived(List<String> events, int rank, String call, int it, Check ck)
      throws InterruptedException {
    if (events.contains(rank + ":" + call + ":" + it)) {
      ck.info("victim: " + call + " returned before the kill landed");
      Thread.sleep(10_000);
      ck.fail("victim: still alive 10 s after its SIGKILL");
    }
  }

  static boolean allDone(Path dir, int size, TreeSet<Integer> dead) {
    for (int r = 0; r < size; r++) {
      if (!dead.contains(r) && !Files.exists(dir.resolve("done." + r))) {
        return false;
      }
    }
    return true;
  }

  static List<Integer> asList(int[] a) {
    List<Integer> l = new ArrayList<>();
    for (int x : a) {
      l.add(x);
    }
    return l;
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> asMap(Object o) {
    return (Map<String, Object>) o;
  }
}
