/* kylix_timing.h — the timed sequence of the Kylix sparse benchmark programs (kylix_sparse.c,
 * kylix_net.c): every timed call runs between kylix_barrier calls and counts as the slowest
 * rank's time. The program includes powerlaw.h and kylix.h and defines
 * `static kylix_comm *comm;` before including this. */
#ifndef KYLIX_BENCH_TIMING_H
#define KYLIX_BENCH_TIMING_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void must(int st, const char *what) {
  if (st == KYLIX_OK) return;
  fprintf(stderr, "%s: %s: %s\n", what, kylix_strerror(st), kylix_errmsg(comm));
  exit(1);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double t_start(void) { must(kylix_barrier(comm), "barrier"); return now(); }
static double t_stop(double t0) { /* max over ranks, in ms */
  double dt = now() - t0;
  must(kylix_allreduce(comm, &dt, &dt, 1, KYLIX_F64, KYLIX_MAX), "allreduce max");
  return dt * 1e3;
}

/* sparse_job is one rank's part of the sparse benchmark: its sets, out values, a buffer for
 * the in values and the brute-force result to check against (NULL: no check). */
typedef struct {
  const int64_t *out, *in;
  int64_t n_out, n_in;
  const float *ov;
  float *iv;
  const float *expect;
} sparse_job;

/* time_sparse runs a warm-up config (the one that measures the links), then after_warmup,
 * PL_CONFIGS timed configs, after_configs, a checked warm-up reduce, PL_REDUCES timed reduces
 * on the last plan and PL_ONESHOTS timed one-shot config_reduce (the first checked). It fills
 * t's config, reduce and oneshot times and returns the count of wrong values. */
static int64_t time_sparse(sparse_job j, pl_times *t, void (*after_warmup)(void), void (*after_configs)(void)) {
  kylix_plan *p;
  int64_t bad = 0;
  must(kylix_config(comm, j.out, j.n_out, j.in, j.n_in, &p), "config");
  must(kylix_plan_free(p), "plan_free");
  if (after_warmup) after_warmup();
  for (int i = 0; i < PL_CONFIGS; i++) {
    double t0 = t_start();
    must(kylix_config(comm, j.out, j.n_out, j.in, j.n_in, &p), "config");
    t->config[i] = t_stop(t0);
    if (i < PL_CONFIGS - 1) must(kylix_plan_free(p), "plan_free");
  }
  if (after_configs) after_configs();
  must(kylix_reduce(p, j.ov, j.iv, KYLIX_F32, KYLIX_SUM, 1), "reduce");
  if (j.expect) bad += pl_mismatches(j.expect, j.in, j.n_in, j.iv);
  for (int i = 0; i < PL_REDUCES; i++) {
    double t0 = t_start();
    must(kylix_reduce(p, j.ov, j.iv, KYLIX_F32, KYLIX_SUM, 1), "reduce");
    t->reduce[i] = t_stop(t0);
  }
  must(kylix_plan_free(p), "plan_free");
  for (int i = 0; i < PL_ONESHOTS; i++) {
    memset(j.iv, 0, (size_t)j.n_in * sizeof(float));
    double t0 = t_start();
    must(kylix_config_reduce(comm, j.out, j.n_out, j.ov, j.in, j.n_in, j.iv, KYLIX_F32, KYLIX_SUM, 1, NULL),
         "config_reduce");
    t->oneshot[i] = t_stop(t0);
    if (j.expect && i == 0) bad += pl_mismatches(j.expect, j.in, j.n_in, j.iv);
  }
  return bad;
}

#endif
