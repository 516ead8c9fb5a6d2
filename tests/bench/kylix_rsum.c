/* kylix_rsum.c — KYLIX_RSUM against KYLIX_SUM on one plan: what the reproducible sum costs.
 *
 *   build/kylixrun -n 4 ./kylix_rsum [keys=1000000] [space=4000000] [reps=10] [dtype=f64]
 *
 * Every rank draws `keys` distinct indices from [0, space) (hashed: the ranks' sets overlap
 * as independent samples do), in = out, width 1; values spread over exponents +-60. One
 * kylix_config, then reps rounds of one SUM and one RSUM reduce on that plan, alternated so
 * that both see the same machine; each call timed between barriers as the slowest rank's
 * time. Bytes on the wire per reduce come from kylix_stats_json ("collectives" -> "reduce"
 * -> traffic bytes_sent, summed over ranks), reset before each call. Rank 0 prints the
 * medians, the bytes and the ratios. Needs nothing but the library; not run by `make test`.
 */
#define _POSIX_C_SOURCE 200809L
#include "powerlaw.h" /* for kylix_timing.h's types */
#include "kylix.h"
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kylix_comm *comm;
#include "kylix_timing.h"

static uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static double opt(int argc, char **argv, const char *key, double dflt) {
  size_t k = strlen(key);
  for (int i = 1; i < argc; i++)
    if (!strncmp(argv[i], key, k) && argv[i][k] == '=') return atof(argv[i] + k + 1);
  return dflt;
}

/* reduce bytes sent by this rank since the last reset */
static double reduce_bytes(void) {
  int64_t need = 0;
  kylix_stats_json(comm, NULL, 0, &need);
  char *js = malloc((size_t)need + 1);
  must(js ? kylix_stats_json(comm, js, need + 1, &need) : KYLIX_ERR_NOMEM, "stats_json");
  double b = -1;
  const char *p = strstr(js, "\"collectives\"");
  p = p ? strstr(p, "\"reduce\":") : NULL;
  p = p ? strstr(p, "\"bytes_sent\":") : NULL;
  if (p) b = atof(p + strlen("\"bytes_sent\":"));
  free(js);
  return b;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (kylix_init("", &comm) != KYLIX_OK) {
    fprintf(stderr, "kylix_init: %s\n", kylix_errmsg(NULL));
    return 1;
  }
  int rank = kylix_rank(comm), m = kylix_size(comm);
  int64_t keys = (int64_t)opt(argc, argv, "keys", 1e6), space = (int64_t)opt(argc, argv, "space", 4e6);
  int reps = (int)opt(argc, argv, "reps", 10);
  int f32 = 0;
  for (int i = 1; i < argc; i++) f32 |= !strcmp(argv[i], "dtype=f32");
  int dt = f32 ? KYLIX_F32 : KYLIX_F64;
  size_t es = f32 ? 4 : 8;

  /* distinct keys: hash draws, sorted, duplicates dropped (a few short of keys) */
  int64_t *idx = malloc((size_t)keys * sizeof *idx);
  for (int64_t i = 0; i < keys; i++) idx[i] = (int64_t)(mix((uint64_t)rank << 40 | (uint64_t)i) % (uint64_t)space);
  qsort(idx, (size_t)keys, sizeof *idx, cmp_i64);
  int64_t n = 0;
  for (int64_t i = 0; i < keys; i++)
    if (n == 0 || idx[i] != idx[n - 1]) idx[n++] = idx[i];
  for (int64_t i = n - 1; i > 0; i--) { /* caller order: shuffled, as real data comes */
    int64_t j = (int64_t)(mix((uint64_t)i * 31 + (uint64_t)rank) % (uint64_t)(i + 1)), t = idx[i];
    idx[i] = idx[j], idx[j] = t;
  }
  void *ov = malloc((size_t)n * es), *iv = malloc((size_t)n * es);
  for (int64_t i = 0; i < n; i++) {
    uint64_t h = mix((uint64_t)idx[i] * 7 + (uint64_t)rank);
    double v = ldexp((double)(h >> 11) * 0x1p-53, (int)(h % 121) - 60) * (h & 1 ? -1 : 1);
    if (f32) ((float *)ov)[i] = (float)v;
    else ((double *)ov)[i] = v;
  }
  kylix_plan *plan = NULL;
  must(kylix_config(comm, idx, n, idx, n, &plan), "config");
  const int ops[2] = {KYLIX_SUM, KYLIX_RSUM};
  double *t[2] = {malloc((size_t)reps * sizeof(double)), malloc((size_t)reps * sizeof(double))}, bytes[2] = {0, 0};
  for (int r = -1; r < reps; r++) { /* r = -1: warm-up (the plan's buffers, the connections) */
    for (int k = 0; k < 2; k++) {
      must(kylix_stats_reset(comm), "stats_reset");
      double t0 = t_start();
      must(kylix_reduce(plan, ov, iv, dt, ops[k], 1), "reduce");
      double dtm = t_stop(t0);
      if (r < 0) continue;
      t[k][r] = dtm;
      double b = reduce_bytes();
      must(kylix_allreduce(comm, &b, &b, 1, KYLIX_F64, KYLIX_SUM), "allreduce bytes");
      bytes[k] = b;
    }
  }
  qsort(t[0], (size_t)reps, sizeof(double), cmp_d);
  qsort(t[1], (size_t)reps, sizeof(double), cmp_d);
  if (rank == 0) {
    double s = t[0][reps / 2], q = t[1][reps / 2];
    printf("kylix_rsum: ranks=%d keys/rank=%" PRId64 " space=%" PRId64 " %s width 1, median of %d\n", m, n, space,
           f32 ? "f32" : "f64", reps);
    printf("  SUM   reduce %8.2f ms  %12.0f bytes sent (all ranks)\n", s, bytes[0]);
    printf("  RSUM  reduce %8.2f ms  %12.0f bytes sent (all ranks)\n", q, bytes[1]);
    printf("  RSUM/SUM: time %.2fx, bytes %.2fx\n", q / s, bytes[1] / bytes[0]);
  }
  must(kylix_plan_free(plan), "plan_free");
  must(kylix_finalize(comm), "finalize");
  return 0;
}
