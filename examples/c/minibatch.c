/*
 * minibatch.c — mini-batch SGD with Kylix config_reduce (paper §I-A, §III):
 * the indices change every step, so configuration and reduction are done in
 * one pass with kylix_config_reduce.
 *
 *   kylixrun -n 4 ./minibatch [--steps 300] [--batch 256] [--features 1048576]
 *                             [--pool 20000] [--every 25] [--lr 0.2] [--seed 1]
 *
 * Model: sparse logistic regression over F binary features. Every rank makes
 * its own synthetic training pool (seeded by --seed and its rank): each
 * example has 10..30 distinct features drawn from a Zipf(1.1) distribution
 * (power-law feature frequencies), and a label drawn from
 * sigmoid(0.5 * sum of true weights), the true weights being a fixed hash of
 * the feature id in [-3, 3]. Feature k is sent to Kylix as the id
 * (k * 0x9E3779B1 + 12345) mod F, so popular features are not small numbers.
 *
 * Every step, each rank
 *   1. draws a mini-batch of B examples from its pool,
 *   2. computes, for every feature it touched, the gradient sum
 *      g_f = sum over its examples containing f of (p - y) and the count c_f,
 *   3. calls kylix_config_reduce(SUM, F64, width 2) with out = in = the
 *      features it touched and values (g_f, c_f): it gets back G_f and C_f,
 *      the sums over every rank's batch,
 *   4. updates its copy of the model: w_f -= lr * G_f / C_f (a per-feature
 *      average gradient step) for every feature it touched.
 * Features a rank did not touch keep their old value in that rank's copy
 * (each rank only ever reads the features of its own data), as in the paper's
 * mini-batch setting.
 *
 * Every --every steps rank 0 prints the mean log-loss of the batches of that
 * window over all ranks (computed with the weights before each step's update,
 * combined with kylix_allreduce) and the mean config_reduce time; at the end
 * it prints the loss on the whole pool and on a held-out set (pool/4 more
 * examples per rank from the same distribution) before and after training:
 *
 *   step  25 loss 0.661234 config_reduce 1.234 ms/step features/step 3100
 *   ...
 *   final: window loss 0.58 -> 0.10; pool loss 0.693147 -> 0.09; held-out loss 0.693147 -> 0.55
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#define EXAMPLE_PROG "minibatch" /* for die() */

#include "synthetic.h" /* and example.h */

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WEIGHT_SALT UINT64_C(0x5eed) /* true_weight's salt: this example's hidden model */

int main(int argc, char **argv) {
  long steps = 300, batch = 256, nfeat = 1 << 20, pool = 20000, every = 25, seed = 1;
  double lr = 0.2;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc) die("usage: minibatch [--steps N] [--batch B] [--features F] "
                           "[--pool P] [--every K] [--lr X] [--seed S] (at \"%s\")", a);
    const char *v = argv[++i];
    if (!strcmp(a, "--steps")) steps = parse_long(a, v, 1, 100000000);
    else if (!strcmp(a, "--batch")) batch = parse_long(a, v, 1, 10000000);
    else if (!strcmp(a, "--features")) nfeat = parse_long(a, v, 64, INT32_MAX);
    else if (!strcmp(a, "--pool")) pool = parse_long(a, v, 1, 100000000);
    else if (!strcmp(a, "--every")) every = parse_long(a, v, 1, 100000000);
    else if (!strcmp(a, "--seed")) seed = parse_long(a, v, 0, INT32_MAX);
    else if (!strcmp(a, "--lr")) lr = parse_double(a, v, 0, 100);
    else die("unknown option %s", a);
  }

  int rank, size;
  kylix_comm *comm = example_init(&rank, &size);
  const int64_t F = nfeat;

  /* Zipf(1.1) sampler over feature ranks 0..F-1 (prefix sums + binary search). */
  double *cum = zipf_cum(F);

  /* This rank's training pool and a held-out set of pool/4 examples from the
     same distribution, in CSR form. */
  rng r = {mix64((uint64_t)seed * 1000003u + (uint64_t)rank)};
  examples train, test;
  /* The pools hold the Zipf ranks (w is indexed by rank); only the ids sent to
     Kylix are spread with feature_id. */
  make_examples(&train, pool, &r, cum, F, WEIGHT_SALT, 0);
  make_examples(&test, pool / 4 + 1, &r, cum, F, WEIGHT_SALT, 0);
  free(cum);
  const int64_t *ex_ptr = train.ptr;
  const int32_t *ex_feat = train.feat;
  const char *label = train.label;

  double *w = calloc(F, sizeof(double));    /* this rank's copy of the model */
  int32_t *slot = xmalloc(F * sizeof(int32_t)); /* feature -> position this step */
  for (int64_t k = 0; k < F; k++) slot[k] = -1;
  if (!w) die("out of memory");
  const int64_t maxt = batch * 30;
  int32_t *touched = xmalloc(maxt * sizeof(int32_t));
  int64_t *idx = xmalloc(maxt * sizeof(int64_t));
  double *vals = xmalloc(2 * maxt * sizeof(double));
  double *sums = xmalloc(2 * maxt * sizeof(double));
  long *picked = xmalloc(batch * sizeof(long));
  double *zb = xmalloc(batch * sizeof(double));

  if (rank == 0)
    printf("minibatch: ranks=%d steps=%ld batch=%ld/rank features=%" PRId64
           " pool=%ld/rank lr=%g\n", size, steps, batch, F, pool, lr);

  double win_loss = 0, win_n = 0, win_ms = 0, win_touched = 0, first = -1, last = -1;
  for (long step = 1; step <= steps; step++) {
    /* 1-2: batch, predictions with the current weights, gradient and counts */
    int64_t nt = 0;
    for (long b = 0; b < batch; b++) {
      long e = (long)(rng_next(&r) % (uint64_t)pool);
      picked[b] = e;
      double z = 0;
      for (int64_t q = ex_ptr[e]; q < ex_ptr[e + 1]; q++) z += w[ex_feat[q]];
      zb[b] = z;
      win_loss += logloss(z, label[e]);
    }
    win_n += batch;
    for (long b = 0; b < batch; b++) {
      long e = picked[b];
      double err = sigmoid(zb[b]) - label[e];
      for (int64_t q = ex_ptr[e]; q < ex_ptr[e + 1]; q++) {
        int32_t k = ex_feat[q];
        if (slot[k] < 0) {
          slot[k] = (int32_t)nt;
          touched[nt] = k;
          idx[nt] = feature_id(k, F);
          vals[2 * nt] = vals[2 * nt + 1] = 0;
          nt++;
        }
        vals[2 * slot[k]] += err;
        vals[2 * slot[k] + 1] += 1;
      }
    }
    /* 3: sum (g, c) over all ranks for the features this rank touched */
    double t0 = now_ms();
    CHECK(comm, kylix_config_reduce(comm, idx, nt, vals, idx, nt, sums, KYLIX_F64,
                                    KYLIX_SUM, 2, NULL));
    win_ms += now_ms() - t0;
    win_touched += nt;
    /* 4: update; the global count can only be >= ours and is a whole number */
    for (int64_t t = 0; t < nt; t++) {
      double G = sums[2 * t], C = sums[2 * t + 1];
      if (!(C >= vals[2 * t + 1]) || C != floor(C))
        die("step %ld: feature %" PRId64 ": reduced count %g < local count %g",
            step, idx[t], C, vals[2 * t + 1]);
      w[touched[t]] -= lr * G / C;
      slot[touched[t]] = -1;
    }
    if (step % every == 0 || step == steps) {
      double loc[4] = {win_loss, win_n, win_ms, win_touched}, tot[4];
      CHECK(comm, kylix_allreduce(comm, loc, tot, 4, KYLIX_F64, KYLIX_SUM));
      long nsteps = step % every ? step % every : every;
      double loss = tot[0] / tot[1];
      if (first < 0) first = loss;
      last = loss;
      if (rank == 0)
        printf("step %4ld loss %.6f config_reduce %.3f ms/step features/step %.0f\n", step,
               loss, tot[2] / size / nsteps, tot[3] / size / nsteps);
      fflush(stdout);
      win_loss = win_n = win_ms = win_touched = 0;
    }
  }

  /* Loss over the whole pool and over the held-out set, before (w = 0: every
     loss is log 2) and after training. */
  double loc[4] = {loss_sum(&train, w), (double)train.n, loss_sum(&test, w), (double)test.n},
         tot[4]; /* {sum, count} for the pool, then for the held-out set */
  CHECK(comm, kylix_allreduce(comm, loc, tot, 4, KYLIX_F64, KYLIX_SUM));
  if (rank == 0) {
    printf("final: window loss %.6f -> %.6f; pool loss %.6f -> %.6f; held-out loss %.6f -> %.6f\n",
           first, last, log(2.0), tot[0] / tot[1], log(2.0), tot[2] / tot[3]);
    fflush(stdout);
  }

  CHECK(comm, kylix_finalize(comm));
  free(train.ptr);
  free(train.feat);
  free(train.label);
  free(test.ptr);
  free(test.feat);
  free(test.label);
  free(w);
  free(slot);
  free(touched);
  free(idx);
  free(vals);
  free(sums);
  free(picked);
  free(zb);
  return 0;
}
