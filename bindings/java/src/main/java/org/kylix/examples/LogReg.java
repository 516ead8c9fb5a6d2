package org.kylix.examples;

import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import org.kylix.Comm;
import org.kylix.Kylix;
import org.kylix.Op;

/**
 * Mini-batch logistic regression on synthetic sparse data, one {@code configReduce} per step.
 *
 * <p>Every rank holds a shard of the data and a copy of the model. A step takes a mini-batch,
 * makes a local SGD step on the weights of the features the batch touches, and then averages
 * those weights with the other ranks that touched them: {@code configReduce} with out = in = the
 * batch's features and width 2, each row carrying (weight, 1), so that the SUM gives (sum of the
 * weights, number of ranks that sent one). The index sets change every step, which is what
 * config_reduce is for. After each epoch the loss over all shards is one dense allreduce.
 *
 * <pre>
 * build/kylixrun -n 2 -- java -cp kylix.jar:jna.jar org.kylix.examples.LogReg [--epochs 5]
 * </pre>
 *
 * Options: --epochs E, --features F, --samples S (per rank), --batch B, --nnz K, --lr R,
 * --seed N.
 */
public final class LogReg {
  private LogReg() {}

  public static void main(String[] args) {
    int epochs = 5, features = 20000, samples = 20000, batch = 500, nnz = 20;
    double lr = 50;
    long seed = 1;
    for (int i = 0; i + 1 < args.length; i += 2) {
      String v = args[i + 1];
      switch (args[i]) {
        case "--epochs": epochs = Integer.parseInt(v); break;
        case "--features": features = Integer.parseInt(v); break;
        case "--samples": samples = Integer.parseInt(v); break;
        case "--batch": batch = Integer.parseInt(v); break;
        case "--nnz": nnz = Integer.parseInt(v); break;
        case "--lr": lr = Double.parseDouble(v); break;
        case "--seed": seed = Long.parseLong(v); break;
        default: throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    try (Comm comm = Kylix.init("")) {
      int me = comm.rank();
      Data d = Data.generate(seed, me, features, samples, nnz);
      double[] w = new double[features];
      if (me == 0) {
        System.out.printf("LogReg: %d ranks, %d features, %d samples per rank, batch %d%n",
            comm.size(), features, samples, batch);
        System.out.printf("epoch 0 loss %.5f%n", globalLoss(comm, d, w));
      } else {
        globalLoss(comm, d, w);
      }
      int[] order = new int[samples];
      Arrays.setAll(order, i -> i);
      int[] slot = new int[features]; // feature -> position in this batch's index set, or -1
      Arrays.fill(slot, -1);
      long steps = 0;
      for (int epoch = 1; epoch <= epochs; epoch++) {
        long t0 = System.nanoTime();
        shuffle(order, new Random(seed * 31 + me * 7919L + epoch));
        for (int start = 0; start + batch <= samples; start += batch) { // same count on every rank
          // The batch's distinct features, and the gradient of the mean loss on them.
          long[] idx = new long[batch * nnz];
          double[] grad = new double[batch * nnz];
          int n = 0;
          for (int b = start; b < start + batch; b++) {
            int s = order[b];
            double err = sigmoid(d.margin(s, w)) - d.y[s];
            for (int k = d.off[s]; k < d.off[s + 1]; k++) {
              int f = d.feat[k];
              if (slot[f] < 0) {
                slot[f] = n;
                idx[n++] = f;
              }
              grad[slot[f]] += err * d.val[k] / batch;
            }
          }
          // Local step, then average the touched weights with the ranks that touched them.
          long[] batchIdx = Arrays.copyOf(idx, n);
          double[] rows = new double[2 * n];
          for (int j = 0; j < n; j++) {
            int f = (int) batchIdx[j];
            w[f] -= lr * grad[j];
            rows[2 * j] = w[f];
            rows[2 * j + 1] = 1;
            slot[f] = -1;
          }
          double[] sums = new double[2 * n];
          comm.configReduce(batchIdx, rows, batchIdx, sums, Op.SUM, 2);
          for (int j = 0; j < n; j++) {
            w[(int) batchIdx[j]] = sums[2 * j] / sums[2 * j + 1];
          }
          steps++;
        }
        double loss = globalLoss(comm, d, w);
        if (me == 0) {
          System.out.printf("epoch %d loss %.5f (%d configReduce steps, %.2f s)%n", epoch, loss,
              steps, (System.nanoTime() - t0) / 1e9);
        }
      }
      if (me == 0) {
        @SuppressWarnings("unchecked")
        Map<String, Object> totals = (Map<String, Object>) comm.statsMap().get("totals");
        System.out.println("rank 0 traffic: " + totals);
      }
    }
  }

  static double sigmoid(double z) {
    return 1 / (1 + Math.exp(-z));
  }

  /** Mean log-loss over every rank's shard, each with its own model copy. */
  static double globalLoss(Comm comm, Data d, double[] w) {
    double[] acc = new double[2];
    for (int s = 0; s < d.y.length; s++) {
      double p = sigmoid(d.margin(s, w));
      p = Math.min(Math.max(p, 1e-12), 1 - 1e-12);
      acc[0] -= d.y[s] == 1 ? Math.log(p) : Math.log(1 - p);
      acc[1] += 1;
    }
    comm.allreduce(acc, Op.SUM);
    return acc[0] / acc[1];
  }

  static void shuffle(int[] a, Random r) {
    for (int i = a.length - 1; i > 0; i--) {
      int j = r.nextInt(i + 1), t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
  }

  /** A rank's shard in CSR form: sample s has features feat[off[s]..off[s+1]). */
  static final class Data {
    int[] off;
    int[] feat;
    double[] val;
    double[] y;

    double margin(int s, double[] w) {
      double z = 0;
      for (int k = off[s]; k < off[s + 1]; k++) {
        z += w[feat[k]] * val[k];
      }
      return z;
    }

    /**
     * Power-law feature popularity; labels from a fixed true model (the same on every rank,
     * from the seed), so the shards are samples of one distribution.
     */
    static Data generate(long seed, int rank, int features, int samples, int nnz) {
      Random tr = new Random(seed);
      double[] truth = new double[features];
      for (int f = 0; f < features; f++) {
        truth[f] = tr.nextGaussian() * 3;
      }
      Random r = new Random(seed * 1000003L + rank + 1);
      Data d = new Data();
      d.off = new int[samples + 1];
      d.feat = new int[samples * nnz];
      d.val = new double[samples * nnz];
      d.y = new double[samples];
      double v = 1 / Math.sqrt(nnz);
      int k = 0;
      for (int s = 0; s < samples; s++) {
        double z = 0;
        for (int j = 0; j < nnz; j++) {
          int f = (int) (features * Math.pow(r.nextDouble(), 2.5));
          d.feat[k] = f;
          d.val[k] = v;
          z += truth[f] * v;
          k++;
        }
        d.off[s + 1] = k;
        d.y[s] = r.nextDouble() < sigmoid(z) ? 1 : 0;
      }
      return d;
    }
  }
}
