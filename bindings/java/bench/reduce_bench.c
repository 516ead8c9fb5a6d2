/*
 * reduce_bench.c - the C baseline of ReduceBench.java: per-call time of kylix_reduce on a plan
 * of N indices (the same 0..N-1 on every rank, in a shuffled order), f32 SUM, width 1, and of a
 * 1-index plan (the fixed cost of a collective). Run under kylixrun; rank 0 prints
 *   C <case> median_us <m> min_us <m> calls <k>
 * and then the same on a one-rank comm (no network: the cost of the call and of the memory).
 *
 *   kylixrun -n 2 ./reduce_bench [N] [calls]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kylix.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void die(kylix_comm *c, int st, const char *what) {
  fprintf(stderr, "%s: %s: %s\n", what, kylix_strerror(st), kylix_errmsg(c));
  exit(1);
}

/* Times `calls` reduces of an n-index plan on c; batch > 1 times batches of that many calls
   (for calls too short to time one by one) and reports the per-call median of the batches. */
static void bench(kylix_comm *c, const char *name, int64_t n, int calls, int batch) {
  int64_t *idx = malloc(n * sizeof *idx);
  float *out = malloc(n * sizeof *out), *in = malloc(n * sizeof *in);
  uint64_t s = 12345;
  for (int64_t i = 0; i < n; i++) idx[i] = i;
  for (int64_t i = n - 1; i > 0; i--) { /* the same shuffle on every rank */
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    int64_t j = (int64_t)((s >> 33) % (uint64_t)(i + 1)), t = idx[i];
    idx[i] = idx[j];
    idx[j] = t;
  }
  for (int64_t i = 0; i < n; i++) out[i] = (float)(i % 100);
  kylix_plan *p;
  int st = kylix_config(c, idx, n, idx, n, &p);
  if (st) die(c, st, "config");
  double *t = malloc(calls * sizeof *t);
  for (int w = 0; w < 3; w++)
    if ((st = kylix_reduce(p, out, in, KYLIX_F32, KYLIX_SUM, 1))) die(c, st, "reduce");
  for (int k = 0; k < calls; k++) {
    if (batch == 1 && (st = kylix_barrier(c))) die(c, st, "barrier");
    double t0 = now_ms();
    for (int b = 0; b < batch; b++)
      if ((st = kylix_reduce(p, out, in, KYLIX_F32, KYLIX_SUM, 1))) die(c, st, "reduce");
    t[k] = (now_ms() - t0) / batch;
  }
  qsort(t, calls, sizeof *t, cmp);
  if (kylix_rank(c) == 0)
    printf("C %-28s median_us %.2f min_us %.2f calls %d\n", name, 1e3 * t[calls / 2], 1e3 * t[0],
           calls * batch);
  kylix_plan_free(p);
  free(t);
  free(idx);
  free(out);
  free(in);
}

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? atoll(argv[1]) : 1 << 20;
  int calls = argc > 2 ? atoi(argv[2]) : 30;
  kylix_comm *c;
  int st = kylix_init("", &c);
  if (st) die(NULL, st, "init");
  bench(c, "f32-1M", n, calls, 1);
  bench(c, "f32-1", 1, calls * 20, 1);
  /* The same on a one-rank comm of this process: no network, only the call and the memory. */
  kylix_comm *one;
  if ((st = kylix_init("rank=0;size=1", &one))) die(NULL, st, "init size=1");
  if (kylix_rank(c) == 0) {
    bench(one, "local-f32-1M", n, calls, 1);
    bench(one, "local-f32-1", 1, 200, 1000);
  }
  kylix_finalize(one);
  kylix_finalize(c);
  return 0;
}
