/*
 * logreg.c — data-parallel mini-batch logistic regression with three ways to
 * keep the ranks' (dense) models in sync: a full average every step
 * (kylix_allreduce), butterfly mixing every step (kylix_mix, after Zhao and
 * Canny, "Butterfly Mixing: Accelerating Incremental-Update Algorithms on
 * Clusters"), and a full average only every k steps (periodic allreduce). Rank 0 prints the test loss against training
 * wall time for each.
 *
 *   kylixrun -n 4 --degrees binary ./logreg [--steps 300] [--batch 128]
 *            [--features 16384] [--pool 20000] [--test 2000] [--every 30]
 *            [--lr 0.5] [--period K] [--seed 1]
 *
 * Data (deterministic): every rank makes its own training shard of --pool
 * examples from (--seed, rank); each example has 10..30 distinct binary
 * features with power-law frequencies (Zipf(1.1) over F ids), and its label
 * is drawn from sigmoid(0.5 * sum of hidden true weights), the true weight of
 * feature k being a fixed hash of k in [-3, 3]. A test set of --test examples
 * from another stream is the same on every rank.
 *
 * Training: every rank keeps a dense model w[F] (F64), all zero at first.
 * Each step it takes the next --batch examples of its shard, computes the
 * mean log-loss gradient, updates w -= lr * g, and then syncs:
 *   allreduce  kylix_allreduce(w, SUM) and w /= ranks: the models are equal
 *              after every step (the classic synchronous data-parallel SGD).
 *   mix        kylix_mix(w, step): w is averaged with this rank's group at
 *              layer step mod L of the butterfly; after L steps the updates
 *              of every rank have reached every other. One round of
 *              messages per step instead of the allreduce's 2L.
 *   periodic   the allreduce average after every k-th step only (k = --period,
 *              by default L: the same number of communication rounds as mix).
 * Every method starts from w = 0 on the same data in the same order.
 *
 * Mixing uses the degrees option when fixed, else binary (kylix.h): with the
 * default, L = log2(ranks) layers of degree 2 as in the paper (--degrees
 * direct makes every mix step a full average). L is worked out here from
 * the degrees option in the environment (KYLIX_DEGREES, set by kylixrun) by
 * the rule kylix.h documents.
 *
 * Every --every steps each rank computes the mean log-loss of its own model
 * on the test set; rank 0 prints the mean over ranks, and the training time
 * so far (compute + sync, evaluation excluded) of the slowest rank:
 *
 *   logreg: ranks=4 features=16384 batch=128 steps=300 lr=0.5 degrees=binary mix-layers=2 period=2
 *    step |      allreduce       |         mix          |  periodic (every 2)
 *         |     loss        ms   |     loss        ms   |     loss        ms
 *       0 | 0.693147       0.0   | 0.693147       0.0   | 0.693147       0.0
 *      30 | 0.601234      12.3   | ...
 *   final allreduce: loss 0.693147 -> 0.512345 in 123.4 ms (sync 100.2 ms)
 *   final mix: ...
 *   final periodic: ...
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#define EXAMPLE_PROG "logreg" /* for die() */

#include "synthetic.h" /* and example.h */

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WEIGHT_SALT UINT64_C(0x10ff) /* true_weight's salt: this example's hidden model */

/* an rng for stream number stream of seed (each rank's shard and the test set
   are separate streams) */
static rng rng_for(uint64_t seed, uint64_t stream) {
  rng r = {mix64(seed * UINT64_C(0x9e3779b97f4a7c15) + mix64(stream + 0x51))};
  return r;
}

/* The number of mixing layers kylix.h documents for kylix_mix: the number of
   degrees above 1 of the mixing butterfly (fixed degrees, else binary); 1 for
   a one-rank job. */
static int mix_layers(const char *spec, int size) {
  if (!spec || !*spec || !strcmp(spec, "auto")) spec = "binary";
  int L = 0;
  if (!strcmp(spec, "direct")) {
    L = size > 1;
  } else if (!strcmp(spec, "binary")) {
    int r = size;
    while (r % 2 == 0 && r > 1) L++, r /= 2;
    L += r > 1;
  } else {
    for (const char *p = spec; *p;) {
      char *end;
      long d = strtol(p, &end, 10);
      if (end == p) break;
      L += d > 1;
      p = *end == 'x' ? end + 1 : end;
      if (*end && *end != 'x') break;
    }
  }
  return L > 0 ? L : 1;
}

enum { M_ALLREDUCE, M_MIX, M_PERIODIC, NMETHODS };
static const char *method_names[NMETHODS] = {"allreduce", "mix", "periodic"};

int main(int argc, char **argv) {
  long steps = 300, batch = 128, nfeat = 1 << 14, pool = 20000, ntest = 2000, every = 30, seed = 1,
       period = 0;
  double lr = 0.5;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc) die("usage: logreg [--steps N] [--batch B] [--features F] [--pool P] "
                           "[--test T] [--every K] [--lr X] [--period K] [--seed S] (at \"%s\")", a);
    const char *v = argv[++i];
    if (!strcmp(a, "--steps")) steps = parse_long(a, v, 1, 100000000);
    else if (!strcmp(a, "--batch")) batch = parse_long(a, v, 1, 10000000);
    else if (!strcmp(a, "--features")) nfeat = parse_long(a, v, 64, INT32_MAX);
    else if (!strcmp(a, "--pool")) pool = parse_long(a, v, 1, 100000000);
    else if (!strcmp(a, "--test")) ntest = parse_long(a, v, 1, 100000000);
    else if (!strcmp(a, "--every")) every = parse_long(a, v, 1, 100000000);
    else if (!strcmp(a, "--period")) period = parse_long(a, v, 1, 100000000);
    else if (!strcmp(a, "--seed")) seed = parse_long(a, v, 0, INT32_MAX);
    else if (!strcmp(a, "--lr")) lr = parse_double(a, v, 0, 100);
    else die("unknown option %s", a);
  }

  int rank, size;
  kylix_comm *comm = example_init(&rank, &size);
  const int64_t F = nfeat;
  const char *degrees = getenv("KYLIX_DEGREES");
  const int L = mix_layers(degrees, size);
  if (period == 0) period = L;

  /* Zipf(1.1) over feature ranks 0..F-1 (prefix sums + binary search); the
     stored features are the ranks spread over the id space (feature_id). */
  double *cum = zipf_cum(F);
  examples shard, test;
  rng r = rng_for((uint64_t)seed, 1000 + (uint64_t)rank);
  make_examples(&shard, pool, &r, cum, F, WEIGHT_SALT, 1);
  r = rng_for((uint64_t)seed, 7);
  make_examples(&test, ntest, &r, cum, F, WEIGHT_SALT, 1);
  free(cum);

  double *w = xmalloc((size_t)F * sizeof(double));
  double *grad = xmalloc((size_t)F * sizeof(double));
  int32_t *touched = xmalloc((size_t)batch * 30 * sizeof(int32_t));
  const long rows = steps / every + 1 + (steps % every != 0);
  long *row_step = xmalloc(sizeof(long) * (size_t)rows);
  double *loss = xmalloc(sizeof(double) * NMETHODS * (size_t)rows);
  double *ms = xmalloc(sizeof(double) * NMETHODS * (size_t)rows);
  double sync_ms[NMETHODS];
  const double inv_size = 1.0 / size;

  for (int m = 0; m < NMETHODS; m++) {
    memset(w, 0, (size_t)F * sizeof(double));
    memset(grad, 0, (size_t)F * sizeof(double));
    long cursor = 0, row = 0;
    double train = 0, sync = 0; /* this rank's ms so far */
    CHECK(comm, kylix_barrier(comm));
    for (long step = 0; step <= steps; step++) {
      if (step % every == 0 || step == steps) { /* evaluation, not timed */
        double part[2] = {loss_sum(&test, w), 0}, tot[2], tmax = train;
        CHECK(comm, kylix_allreduce(comm, part, tot, 1, KYLIX_F64, KYLIX_SUM));
        CHECK(comm, kylix_allreduce(comm, &train, &tmax, 1, KYLIX_F64, KYLIX_MAX));
        loss[m * rows + row] = tot[0] / ((double)test.n * size);
        ms[m * rows + row] = tmax;
        row_step[row] = step;
        row++;
        CHECK(comm, kylix_barrier(comm)); /* everybody starts the next stretch together */
      }
      if (step == steps) break;
      double t0 = now_ms();
      /* the caller's own work on the timeline (kylixrun --timeline DIR); a no-op otherwise */
      CHECK(comm, kylix_mark(comm, "gradient", KYLIX_MARK_BEGIN));
      /* mean log-loss gradient over the next batch of the shard */
      long nt = 0;
      for (long b = 0; b < batch; b++, cursor = (cursor + 1) % shard.n) {
        double z = 0;
        for (int64_t q = shard.ptr[cursor]; q < shard.ptr[cursor + 1]; q++) z += w[shard.feat[q]];
        double g = (sigmoid(z) - shard.label[cursor]) / batch;
        for (int64_t q = shard.ptr[cursor]; q < shard.ptr[cursor + 1]; q++) {
          int32_t k = shard.feat[q];
          if (grad[k] == 0) touched[nt++] = k;
          grad[k] += g;
        }
      }
      for (long j = 0; j < nt; j++) {
        w[touched[j]] -= lr * grad[touched[j]];
        grad[touched[j]] = 0;
      }
      CHECK(comm, kylix_mark(comm, "gradient", KYLIX_MARK_END));
      double t1 = now_ms();
      int full = m == M_ALLREDUCE || (m == M_PERIODIC && (step + 1) % period == 0);
      if (full) {
        CHECK(comm, kylix_allreduce(comm, w, w, F, KYLIX_F64, KYLIX_SUM));
        for (int64_t k = 0; k < F; k++) w[k] *= inv_size;
      } else if (m == M_MIX) {
        CHECK(comm, kylix_mix(comm, w, F, KYLIX_F64, step));
      }
      double t2 = now_ms();
      train += t2 - t0;
      sync += t2 - t1;
    }
    double smax = sync;
    CHECK(comm, kylix_allreduce(comm, &sync, &smax, 1, KYLIX_F64, KYLIX_MAX));
    sync_ms[m] = smax;
  }

  if (rank == 0) {
    printf("logreg: ranks=%d features=%" PRId64 " batch=%ld steps=%ld lr=%g degrees=%s "
           "mix-layers=%d period=%ld\n",
           size, F, batch, steps, lr, degrees && *degrees ? degrees : "auto", L, period);
    printf("test loss (mean over ranks of each rank's own model) vs training time "
           "(ms, slowest rank, evaluation excluded)\n");
    char ph[32];
    snprintf(ph, sizeof ph, "periodic (every %ld)", period);
    printf("  step | %20s | %20s | %20s\n", "allreduce", "mix", ph);
    printf("       | %9s %10s | %9s %10s | %9s %10s\n", "loss", "ms", "loss", "ms", "loss", "ms");
    for (long i = 0; i < rows; i++) {
      printf("%6ld |", row_step[i]);
      for (int m = 0; m < NMETHODS; m++)
        printf(" %9.6f %10.1f%s", loss[m * rows + i], ms[m * rows + i], m + 1 < NMETHODS ? " |" : "");
      printf("\n");
    }
    for (int m = 0; m < NMETHODS; m++)
      printf("final %s: loss %.6f -> %.6f in %.1f ms (sync %.1f ms)\n", method_names[m],
             loss[m * rows], loss[m * rows + rows - 1], ms[m * rows + rows - 1], sync_ms[m]);
    fflush(stdout);
  }
  CHECK(comm, kylix_finalize(comm));
  return 0;
}
