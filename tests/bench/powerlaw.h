/* powerlaw.h — Poisson power-law index sets for the sparse benchmarks (mpi_direct.c,
 * kylix_sparse.c), header-only so both programs draw identical data.
 *
 * "Kylix: A Sparse Allreduce for Commodity Clusters" (§IV eq. 3, §VI Table I) models a rank's
 * feature set as Poisson with rate λ r^-α for the feature of popularity rank r, so feature r is
 * present with probability 1 - exp(-λ r^-α); λ is solved for the requested density. Feature
 * ranks are scattered over ids [0, n) by a bijection, as real feature ids are not sorted by
 * frequency. The Go version is cmd/kylix/simulate.go (powerLawSample, newPermutation) and
 * core.SolveLambda; this one draws from its own RNG, so the sets differ from the Go ones but
 * depend only on (seed, rank, stream).
 *
 * Values are small integers stored as f32 (1..8), so every sum over <= 2^21 ranks is exact
 * and results compare with ==.
 */
#ifndef KYLIX_BENCH_POWERLAW_H
#define KYLIX_BENCH_POWERLAW_H
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#endif

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* splitmix64: the generator's step and, below, its finaliser as a 64-bit mixer. */
static inline uint64_t pl_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

typedef struct { uint64_t s; } pl_rng;

static inline pl_rng pl_rng_new(uint64_t seed, uint64_t stream) {
  pl_rng r = {pl_mix64(seed ^ pl_mix64(stream + 0x632BE59BD9B4E019ULL))};
  return r;
}

static inline uint64_t pl_next(pl_rng *r) { return pl_mix64(r->s += 0x9E3779B97F4A7C15ULL); }

/* uniform in [0, 1) with 53 random bits */
static inline double pl_unif(pl_rng *r) { return (pl_next(r) >> 11) * 0x1.0p-53; }

/* ---- λ for a density (Proposition 4.1's f(λ) = density) ---- */

static double pl_g(double r, double lambda, double alpha) {
  return -expm1(-lambda * pow(r, -alpha));
}

/* f(λ): ranks 1..2000 summed exactly, the rest by Euler–Maclaurin with the integral taken in
 * t = ln r by composite 8-point Gauss–Legendre (as core.Density does). */
static double pl_density(int64_t n, double lambda, double alpha) {
  static const double x8[8] = {-0.9602898564975363, -0.7966664774136267, -0.5255324099163290,
                               -0.1834346424956498, 0.1834346424956498,  0.5255324099163290,
                               0.7966664774136267,  0.9602898564975363};
  static const double w8[8] = {0.1012285362903763, 0.2223810344533745, 0.3137066458778873,
                               0.3626837833783620, 0.3626837833783620, 0.3137066458778873,
                               0.2223810344533745, 0.1012285362903763};
  int64_t cut = n < 2000 ? n : 2000;
  double s = 0;
  for (int64_t r = 1; r <= cut; r++) s += pl_g((double)r, lambda, alpha);
  if (cut < n) {
    double a = (double)(cut + 1), b = (double)n;
    double ta = log(a), tb = log(b);
    int panels = (int)ceil((tb - ta) * (alpha > 1 ? alpha : 1) * 8);
    if (panels < 1) panels = 1;
    double h = (tb - ta) / panels, integral = 0;
    for (int p = 0; p < panels; p++) {
      double mid = ta + (p + 0.5) * h, ps = 0;
      for (int k = 0; k < 8; k++) {
        double r = exp(mid + 0.5 * h * x8[k]);
        ps += w8[k] * pl_g(r, lambda, alpha) * r;
      }
      integral += 0.5 * h * ps;
    }
    double ua = lambda * pow(a, -alpha), ub = lambda * pow(b, -alpha);
    double dga = -alpha * ua * exp(-ua) / a, dgb = -alpha * ub * exp(-ub) / b;
    s += integral + (pl_g(a, lambda, alpha) + pl_g(b, lambda, alpha)) / 2 + (dgb - dga) / 12;
  }
  double d = s / (double)n;
  return d < 1 ? d : 1;
}

/* λ with f(λ) = density, by bisection on ln λ inside [density, -ln(1-density) n^α]. */
static double pl_solve_lambda(int64_t n, double density, double alpha) {
  if (density >= 1) return INFINITY;
  double lo = log(density), hi = log(-log1p(-density) * pow((double)n, alpha));
  for (int i = 0; i < 200 && hi - lo > 1e-13; i++) {
    double mid = 0.5 * (lo + hi);
    if (pl_density(n, exp(mid), alpha) < density) lo = mid; else hi = mid;
  }
  return exp(0.5 * (lo + hi));
}

/* ---- a bijection of [0, n) (cycle walking over k-bit mixes, k bits enough for n) ---- */

typedef struct { uint64_t n, mask; unsigned shift; } pl_perm;

static inline pl_perm pl_perm_new(int64_t n) {
  unsigned k = 1;
  while (k < 64 && (1ULL << k) < (uint64_t)n) k++;
  pl_perm p = {(uint64_t)n, k == 64 ? ~0ULL : (1ULL << k) - 1, (k + 1) / 2};
  return p;
}

static inline uint64_t pl_perm_step(const pl_perm *p, uint64_t x) {
  x ^= x >> p->shift;
  x = x * 0x9E3779B97F4A7C15ULL & p->mask;
  x ^= x >> p->shift;
  x = x * 0xBF58476D1CE4E5B9ULL & p->mask;
  x ^= x >> p->shift;
  return x;
}

static inline int64_t pl_perm_at(const pl_perm *p, uint64_t x) {
  uint64_t y = pl_perm_step(p, x);
  while (y >= p->n) y = pl_perm_step(p, y);
  return (int64_t)y;
}

/* ---- one rank's set ---- */

typedef struct { int64_t *ids; int64_t len, cap; } pl_set;

static inline void pl_push(pl_set *s, int64_t v) {
  if (s->len == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 1024;
    s->ids = (int64_t *)realloc(s->ids, (size_t)s->cap * sizeof(int64_t));
    if (!s->ids) { fprintf(stderr, "powerlaw: out of memory\n"); exit(1); }
  }
  s->ids[s->len++] = v;
}

/* pl_sample draws the set of (seed, stream): feature r in 1..n is present independently with
 * probability p(r) = 1 - exp(-λ r^-α). The head (p >= 1/4) is tested feature by feature; the
 * tail goes by blocks [a, 2a) whose candidates come by geometric skips at the block's largest
 * probability p(a), each kept with probability p(r)/p(a): cost in proportion to the set, not
 * to n. Ids are perm(r-1), in the order drawn (neither sorted nor repeated). The caller frees
 * ids. Use stream 2*rank for a rank's out set and 2*rank+1 for a separate in set. */
static pl_set pl_sample(int64_t n, double lambda, double alpha, uint64_t seed, uint64_t stream) {
  pl_set s = {0, 0, 0};
  pl_rng rng = pl_rng_new(seed, stream);
  pl_perm perm = pl_perm_new(n);
  int64_t r = 1;
  for (; r <= n; r++) {
    double p = pl_g((double)r, lambda, alpha);
    if (p < 0.25) break;
    if (pl_unif(&rng) < p) pl_push(&s, pl_perm_at(&perm, (uint64_t)(r - 1)));
  }
  for (int64_t a = r; a <= n;) {
    int64_t b = 2 * a < n + 1 ? 2 * a : n + 1; /* block [a, b) */
    double pmax = pl_g((double)a, lambda, alpha);
    if (pmax <= 0) break;
    double lq = log1p(-pmax), x = (double)(a - 1);
    for (;;) {
      x += 1 + floor(log1p(-pl_unif(&rng)) / lq); /* next candidate */
      if (x >= (double)b) break;
      int64_t c = (int64_t)x;
      if (pl_unif(&rng) * pmax < pl_g((double)c, lambda, alpha))
        pl_push(&s, pl_perm_at(&perm, (uint64_t)(c - 1)));
    }
    a = b;
  }
  return s;
}

/* The value a rank contributes for an id: a small integer, exact in f32 sums. */
static inline float pl_value(int rank, int64_t id) {
  return (float)(1 + (pl_mix64((uint64_t)id * 31 + (uint64_t)rank) & 7));
}

/* ---- shared by both programs: options, data and the brute-force check ---- */

typedef struct {
  int64_t n;
  double density, alpha;
  uint64_t seed;
  int separate_in; /* in set drawn apart from the out set (else in = out, same array) */
  int check;       /* brute-force check of the first result of each operation */
  int lat;         /* > 0: the latency benchmark (run_latency.sh): lat back-to-back calls */
  int64_t keys;    /* > 0: density = keys / n, about keys indices a rank */
} pl_opts;

/* pl_opts_parse reads "n=... density=... alpha=... seed=... separate_in=0|1 check=0|1 lat=...
 * keys=..." from argv[1..], each defaulting from BENCH_<KEY> in the environment, then from the
 * defaults. keys= overrides density. */
static pl_opts pl_opts_parse(int argc, char **argv) {
  pl_opts o = {10000000, 0.2, 1.0, 1, 0, 1, 0, 0};
  const char *keys[] = {"n", "density", "alpha", "seed", "separate_in", "check", "lat", "keys"};
  const char *envs[] = {"BENCH_N", "BENCH_DENSITY", "BENCH_ALPHA", "BENCH_SEED",
                        "BENCH_SEPARATE_IN", "BENCH_CHECK", "BENCH_LAT", "BENCH_KEYS"};
  for (int k = 0; k < 8; k++) {
    const char *v = getenv(envs[k]);
    for (int i = 1; i < argc; i++) {
      size_t l = 0;
      while (keys[k][l] && argv[i][l] == keys[k][l]) l++;
      if (!keys[k][l] && argv[i][l] == '=') v = argv[i] + l + 1;
    }
    if (!v || !*v) continue;
    switch (k) {
    case 0: o.n = (int64_t)atof(v); break; /* accepts 1e7 */
    case 1: o.density = atof(v); break;
    case 2: o.alpha = atof(v); break;
    case 3: o.seed = strtoull(v, NULL, 0); break;
    case 4: o.separate_in = atoi(v); break;
    case 5: o.check = atoi(v); break;
    case 6: o.lat = atoi(v); break;
    case 7: o.keys = (int64_t)atof(v); break;
    }
  }
  if (o.keys > 0) o.density = (double)o.keys / (double)o.n;
  return o;
}

/* Expected[id] for every id in [0, n): the sum over all ranks' out sets, computed by
 * regenerating them here (independent of any exchange). The caller frees it. */
static float *pl_brute_force(const pl_opts *o, double lambda, int ranks) {
  float *sum = (float *)calloc((size_t)o->n, sizeof(float));
  if (!sum) { fprintf(stderr, "powerlaw: out of memory\n"); exit(1); }
  for (int q = 0; q < ranks; q++) {
    pl_set s = pl_sample(o->n, lambda, o->alpha, o->seed, 2 * (uint64_t)q);
    for (int64_t j = 0; j < s.len; j++) sum[s.ids[j]] += pl_value(q, s.ids[j]);
    free(s.ids);
  }
  return sum;
}

/* Count of in rows that differ from the brute force. */
static int64_t pl_mismatches(const float *expect, const int64_t *in, int64_t n_in,
                             const float *got) {
  int64_t bad = 0;
  for (int64_t j = 0; j < n_in; j++) bad += got[j] != expect[in[j]];
  return bad;
}

static int pl_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double pl_median(double *v, int k) {
  qsort(v, (size_t)k, sizeof(double), pl_cmp_double);
  return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

/* Timed calls per program run (after one untimed warm-up of each, except the one-shot). */
enum { PL_CONFIGS = 3, PL_REDUCES = 10, PL_ONESHOTS = 3, PL_DENSES = 5 };

typedef struct { /* milliseconds, max over ranks, per timed call */
  double config[PL_CONFIGS], reduce[PL_REDUCES], oneshot[PL_ONESHOTS], dense[PL_DENSES];
} pl_times;

/* The line run_sparse.sh parses; printed by rank 0. expect: NULL when unchecked. */
static void pl_report(const char *impl, int ranks, const pl_opts *o, int64_t keys_total,
                      pl_times *t, const float *expect, int64_t bad) {
  printf("RESULT impl=%s ranks=%d n=%lld density=%g keys_per_rank=%lld config_ms=%.2f "
         "reduce_ms=%.2f config_reduce_ms=%.2f dense_ms=%.2f check=%s\n",
         impl, ranks, (long long)o->n, o->density, (long long)(keys_total / ranks),
         pl_median(t->config, PL_CONFIGS), pl_median(t->reduce, PL_REDUCES),
         pl_median(t->oneshot, PL_ONESHOTS), pl_median(t->dense, PL_DENSES),
         !expect ? "skipped" : bad ? "FAIL" : "OK");
}

/* ---- the latency benchmark (run_latency.sh: back-to-back small steps) ----
 * pl_lat_loop makes `iters` back-to-back calls of call(arg), each timed on its own clock
 * (no barrier between them), and returns this rank's mean and median per call in µs, or
 * -1 in *mean_us when a call failed. The program then takes the max of both over ranks (the
 * slowest rank's figure) and rank 0 prints it with pl_lat_report. */
#include <time.h>

static double pl_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void pl_lat_loop(int iters, int (*call)(void *), void *arg, double *mean_us, double *med_us) {
  double *t = (double *)malloc((size_t)iters * sizeof(double));
  if (!t) { fprintf(stderr, "powerlaw: out of memory\n"); exit(1); }
  double t0 = pl_now(), prev = t0;
  int bad = 0;
  for (int i = 0; i < iters && !bad; i++) {
    bad = call(arg) != 0;
    double now = pl_now();
    t[i] = now - prev, prev = now;
  }
  *mean_us = bad ? -1 : (prev - t0) / iters * 1e6;
  *med_us = pl_median(t, iters) * 1e6;
  free(t);
}

/* The line run_latency.sh parses: what = "sparse" (keys_per_rank: the mean over ranks of
 * the out set) or "dense8" (an 8-float allreduce). */
static void pl_lat_report(const char *impl, int ranks, const char *what, int64_t keys_per_rank,
                          int iters, double mean_us, double med_us, const char *check) {
  printf("LAT impl=%s ranks=%d op=%s keys_per_rank=%lld iters=%d mean_us=%.2f median_us=%.2f check=%s\n",
         impl, ranks, what, (long long)keys_per_rank, iters, mean_us, med_us, check);
  fflush(stdout);
}

#endif /* KYLIX_BENCH_POWERLAW_H */
