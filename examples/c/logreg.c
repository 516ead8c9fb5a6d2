/*
 * logreg.c — data-parallel mini-batch logistic regression with three ways to
 * keep the ranks' (dense) models in sync: a full average every step
 * (kylix_allreduce), butterfly mixing every step (kylix_mix, after
 * shared/seeds/003_c536ada4d4dddff2.txt), and a full average only every k
 * steps (periodic allreduce). Rank 0 prints the test loss against training
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

#include "kylix.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_rank = -1;

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "logreg[%d]: ", g_rank);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

#define CHECK(comm, call)                                                       \
  do {                                                                          \
    int st_ = (call);                                                           \
    if (st_ != KYLIX_OK) {                                                      \
      const char *msg_ = kylix_errmsg(comm);                                    \
      die("%s failed: %s (%d): %s", #call, kylix_strerror(st_), st_,            \
          msg_ ? msg_ : "(no detail)");                                         \
    }                                                                           \
  } while (0)

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die("out of memory (%zu bytes)", n);
  return p;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= UINT64_C(0xbf58476d1ce4e5b9);
  x ^= x >> 27;
  x *= UINT64_C(0x94d049bb133111eb);
  x ^= x >> 31;
  return x;
}

typedef struct { uint64_t s; } rng;
static rng rng_for(uint64_t seed, uint64_t stream) {
  rng r = {mix64(seed * UINT64_C(0x9e3779b97f4a7c15) + mix64(stream + 0x51))};
  return r;
}
static uint64_t rng_next(rng *r) { return mix64(r->s += UINT64_C(0x9e3779b97f4a7c15)); }
static double rng_unif(rng *r) { return (rng_next(r) >> 11) * 0x1.0p-53; }

static double true_weight(int64_t k) { /* hidden, fixed, in [-3, 3] */
  return ((mix64((uint64_t)k ^ UINT64_C(0x10ff)) >> 11) * 0x1.0p-53 - 0.5) * 6.0;
}

static double sigmoid(double z) { return 1.0 / (1.0 + exp(-z)); }

/* log-loss of predicting sigmoid(z) for label y, computed stably */
static double logloss(double z, int y) {
  double m = y ? -z : z; /* loss = log(1 + exp(m)) */
  return m > 0 ? m + log1p(exp(-m)) : log1p(exp(m));
}

typedef struct {
  long n;
  int64_t *ptr;  /* [n+1] */
  int32_t *feat; /* features of example e: feat[ptr[e] .. ptr[e+1]) */
  char *label;   /* [n] 0 or 1 */
} examples;

/* n examples from r; cum is the Zipf(1.1) prefix sum over F feature ranks */
static void make_examples(examples *x, long n, rng *r, const double *cum, int64_t F) {
  const double total = cum[F - 1];
  x->n = n;
  x->ptr = xmalloc((size_t)(n + 1) * sizeof(int64_t));
  x->feat = xmalloc((size_t)n * 30 * sizeof(int32_t));
  x->label = xmalloc((size_t)n);
  x->ptr[0] = 0;
  for (long e = 0; e < n; e++) {
    int nnz = 10 + (int)(rng_next(r) % 21);
    int64_t at = x->ptr[e];
    double z = 0;
    for (int j = 0; j < nnz; j++) {
      int32_t k;
      int dup;
      do { /* distinct features within an example */
        double u = rng_unif(r) * total;
        int64_t lo = 0, hi = F - 1;
        while (lo < hi) {
          int64_t mid = (lo + hi) / 2;
          if (cum[mid] < u) lo = mid + 1; else hi = mid;
        }
        /* spread the popular ranks over the id space */
        k = (int32_t)((uint64_t)(lo * 0x9E3779B1LL + 12345) % (uint64_t)F);
        dup = 0;
        for (int64_t q = x->ptr[e]; q < at; q++) dup |= x->feat[q] == k;
      } while (dup);
      x->feat[at++] = k;
      z += 0.5 * true_weight(k);
    }
    x->ptr[e + 1] = at;
    x->label[e] = rng_unif(r) < sigmoid(z);
  }
}

/* sum of log-losses of x under w */
static double eval_loss(const examples *x, const double *w) {
  double s = 0;
  for (long e = 0; e < x->n; e++) {
    double z = 0;
    for (int64_t q = x->ptr[e]; q < x->ptr[e + 1]; q++) z += w[x->feat[q]];
    s += logloss(z, x->label[e]);
  }
  return s;
}

static long parse_long(const char *name, const char *s, long lo, long hi) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == 0 || *end != 0 || v < lo || v > hi)
    die("%s: want an integer in %ld..%ld, got \"%s\"", name, lo, hi, s);
  return v;
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
    else if (!strcmp(a, "--lr")) {
      char *end;
      lr = strtod(v, &end);
      if (*end || !(lr > 0 && lr <= 100)) die("--lr: want a number in (0, 100]");
    } else die("unknown option %s", a);
  }

  kylix_comm *comm = NULL;
  CHECK(NULL, kylix_init("", &comm));
  const int rank = kylix_rank(comm), size = kylix_size(comm);
  if (rank < 0 || size < 1) die("kylix_rank/kylix_size returned %d/%d", rank, size);
  g_rank = rank;
  const int64_t F = nfeat;
  const char *degrees = getenv("KYLIX_DEGREES");
  const int L = mix_layers(degrees, size);
  if (period == 0) period = L;

  /* Zipf(1.1) over feature ranks 0..F-1 (prefix sums + binary search). */
  double *cum = xmalloc((size_t)F * sizeof(double));
  double acc = 0;
  for (int64_t k = 0; k < F; k++) cum[k] = acc += pow((double)(k + 1), -1.1);
  examples shard, test;
  rng r = rng_for((uint64_t)seed, 1000 + (uint64_t)rank);
  make_examples(&shard, pool, &r, cum, F);
  r = rng_for((uint64_t)seed, 7);
  make_examples(&test, ntest, &r, cum, F);
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
        double part[2] = {eval_loss(&test, w), 0}, tot[2], tmax = train;
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
