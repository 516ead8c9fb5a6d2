/*
 * elastic_logreg.c — batch gradient descent (logistic regression) with elastic
 * membership, after Zhang and Qiu, "Efficient, Fault-tolerant and Elastic
 * Allreduce Framework For Iterative Algorithms" §5-6: the job runs on the
 * ranks it has, admits joiners every few iterations (ramp-up mode) and goes
 * on without ranks that die (failure-ignorance mode); a relaunched rank
 * joins back.
 *
 *   kylixrun -n 2 --elastic --job-file job.json ./elastic_logreg [--iters 40]
 *   kylixrun --join job.json -n 2 ./elastic_logreg        (ramp-up: 2 more)
 *   kylixrun -n 3 --elastic --restarts 1 ./elastic_logreg --die-at 5:1 --ramp 12:3
 *   elastic_logreg --check membership.log                  (the reference)
 *
 * options: --iters N (40)  --features F (16)  --parts Q (partitions per rank,
 *   2)  --examples E (per partition, 200)  --lr X (0.5)  --seed S (1)
 *   --resize-every K (admit whoever waits every K iterations, 5; 0: never)
 *   --ramp I:N,...  (at iteration I resize with min_size N: wait for joiners)
 *   --die-at I:R    (rank R of the first comm SIGKILLs itself at iteration I)
 *   --log FILE      (the membership log, written by the current rank 0)
 *   --sleep-ms T    (per iteration, to leave time for joiners in a demo)
 *
 * Data: partition p holds E examples of F dense features x in [-1, 1), a
 * function of (seed, p) only; labels come from sigmoid(w_true . x). Each
 * rank owns the partitions named by its rank in the current comm: rank r of
 * a comm of k ranks owns partitions r*Q .. r*Q+Q-1, so the data grows with
 * the job (ramp-up) and a dead rank's data is left out (failure-ignorance).
 *
 * Each iteration every rank sums the log-loss gradient over its partitions,
 * one kylix_allreduce (KYLIX_RSUM: the same bits whatever the membership)
 * adds them up, and every rank takes the same step w -= lr * grad / count.
 * A collective that fails with KYLIX_ERR_PEER is followed by kylix_resize
 * (the dead are dropped) and the iteration is done again on the new comm.
 * After a resize that admitted joiners, rank 0 sends them the state (the
 * iteration and w) with kylix_bcast: kylix_members says who is new.
 *
 * The log (--log) has one line per membership and per iteration:
 *   H features=16 parts=2 examples=200 seed=1 lr=0.5
 *   M <iter> <size> <prev rank of each rank, -1 for a joiner>
 *   I <iter> <size> <train loss> <loss on the first 8*Q partitions> <grad...>
 * --check FILE recomputes every iteration in one process from the sizes in
 * the log and compares the gradients (and losses): it prints "check: ok".
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep under -std=c11 */
#define EXAMPLE_PROG "elastic_logreg"

#include "synthetic.h" /* and example.h: sigmoid, logloss, rng, CHECK */

#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WEIGHT_SALT UINT64_C(0xe1a5) /* true_weight's salt: this example's hidden model */
#define EVAL_RANKS 8                 /* the eval loss is over the partitions of 8 ranks */
#define MAX_RAMP 16

typedef struct {
  long iters, features, parts, examples, seed, resize_every, sleep_ms;
  double lr;
  long ramp_at[MAX_RAMP], ramp_min[MAX_RAMP];
  int nramp;
  long die_iter, die_rank;
  const char *log, *check;
} opts;

/* sums over partitions: F gradient entries, then the loss and the count */
static void partition_sums(const opts *o, long p, const double *w, double *acc) {
  const long F = o->features;
  rng r = {mix64((uint64_t)o->seed * UINT64_C(0x9e3779b97f4a7c15) + mix64((uint64_t)p + 77))};
  double *x = xmalloc(sizeof(double) * (size_t)F);
  for (long e = 0; e < o->examples; e++) {
    double zt = 0, z = 0;
    for (long j = 0; j < F; j++) {
      x[j] = 2 * rng_unif(&r) - 1;
      zt += true_weight(j, WEIGHT_SALT) * x[j];
      z += w[j] * x[j];
    }
    int y = rng_unif(&r) < sigmoid(zt);
    double g = sigmoid(z) - y;
    for (long j = 0; j < F; j++) acc[j] += g * x[j];
    acc[F] += logloss(z, y);
    acc[F + 1] += 1;
  }
  free(x);
}

/* acc = sums over partitions [from, to) */
static void range_sums(const opts *o, long from, long to, const double *w, double *acc) {
  memset(acc, 0, sizeof(double) * (size_t)(o->features + 2));
  for (long p = from; p < to; p++) partition_sums(o, p, w, acc);
}

static void usage(const char *at) {
  die("usage: elastic_logreg [--iters N] [--features F] [--parts Q] [--examples E] [--lr X] "
      "[--seed S] [--resize-every K] [--ramp I:N,...] [--die-at I:R] [--log FILE] "
      "[--sleep-ms T] | --check FILE (at \"%s\")", at);
}

static void parse_ramp(opts *o, const char *v) {
  for (const char *p = v; *p;) {
    long at, n;
    int used;
    if (o->nramp == MAX_RAMP || sscanf(p, "%ld:%ld%n", &at, &n, &used) != 2 || at < 0 || n < 1)
      die("--ramp: want I:N[,I:N...] (at most %d), got \"%s\"", MAX_RAMP, v);
    o->ramp_at[o->nramp] = at, o->ramp_min[o->nramp++] = n;
    p += used;
    if (*p == ',') p++;
    else if (*p) die("--ramp: want I:N[,I:N...], got \"%s\"", v);
  }
}

static opts parse_opts(int argc, char **argv) {
  opts o = {.iters = 40, .features = 16, .parts = 2, .examples = 200, .seed = 1,
            .resize_every = 5, .lr = 0.5, .die_iter = -1, .die_rank = -1};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc) usage(a);
    const char *v = argv[++i];
    if (!strcmp(a, "--iters")) o.iters = parse_long(a, v, 1, 1000000);
    else if (!strcmp(a, "--features")) o.features = parse_long(a, v, 1, 1 << 20);
    else if (!strcmp(a, "--parts")) o.parts = parse_long(a, v, 1, 1000);
    else if (!strcmp(a, "--examples")) o.examples = parse_long(a, v, 1, 10000000);
    else if (!strcmp(a, "--seed")) o.seed = parse_long(a, v, 0, INT32_MAX);
    else if (!strcmp(a, "--resize-every")) o.resize_every = parse_long(a, v, 0, 1000000);
    else if (!strcmp(a, "--sleep-ms")) o.sleep_ms = parse_long(a, v, 0, 60000);
    else if (!strcmp(a, "--lr")) o.lr = parse_double(a, v, 0, 100);
    else if (!strcmp(a, "--ramp")) parse_ramp(&o, v);
    else if (!strcmp(a, "--die-at")) {
      if (sscanf(v, "%ld:%ld", &o.die_iter, &o.die_rank) != 2) die("--die-at: want I:R, got \"%s\"", v);
    } else if (!strcmp(a, "--log")) o.log = v;
    else if (!strcmp(a, "--check")) o.check = v;
    else usage(a);
  }
  return o;
}

/* ---- the reference: one process, the sizes from the log ------------------------------------ */

/* Reads the next "I" line (skipping the others) into iter, size, loss, eval, grad[F]. */
static int read_iteration(FILE *f, long F, long *iter, long *size, double *loss, double *eval,
                          double *grad) {
  char tag[2];
  while (fscanf(f, "%1s", tag) == 1) {
    if (tag[0] != 'I') {
      int ch;
      while ((ch = fgetc(f)) != '\n' && ch != EOF) {}
      continue;
    }
    if (fscanf(f, "%ld %ld %lf %lf", iter, size, loss, eval) != 4) return -1;
    for (long j = 0; j < F; j++)
      if (fscanf(f, "%lf", &grad[j]) != 1) return -1;
    return 1;
  }
  return 0;
}

static int check_log(opts o) {
  FILE *f = fopen(o.check, "r");
  if (!f) die("--check: cannot open %s", o.check);
  if (fscanf(f, "H features=%ld parts=%ld examples=%ld seed=%ld lr=%lf", &o.features, &o.parts,
             &o.examples, &o.seed, &o.lr) != 5)
    die("--check: %s does not start with the H line", o.check);
  const long F = o.features;
  double *w = xcalloc((size_t)F, sizeof(double)), *g = xmalloc(sizeof(double) * (size_t)F);
  double *acc = xmalloc(sizeof(double) * (size_t)(F + 2));
  long iter, size, n = 0, prev = -1;
  double loss, eval, worst = 0;
  int st;
  while ((st = read_iteration(f, F, &iter, &size, &loss, &eval, g)) == 1) {
    if (iter != n) die("--check: iteration %ld where %ld was due", iter, n);
    range_sums(&o, 0, size * o.parts, w, acc);
    double scale = 1;
    for (long j = 0; j < F; j++) scale = fmax(scale, fabs(acc[j] / acc[F + 1]));
    for (long j = 0; j < F; j++) {
      double ref = acc[j] / acc[F + 1], err = fabs(ref - g[j]) / scale;
      worst = fmax(worst, err);
      if (err > 1e-9) die("--check: iteration %ld (size %ld): gradient[%ld] %.17g, reference %.17g",
                          iter, size, j, g[j], ref);
      w[j] -= o.lr * ref;
    }
    if (fabs(acc[F] / acc[F + 1] - loss) > 1e-9 * fmax(1, loss))
      die("--check: iteration %ld: loss %.17g, reference %.17g", iter, loss, acc[F] / acc[F + 1]);
    if (size != prev) printf("check: from iteration %ld on %ld ranks\n", iter, size);
    prev = size;
    n++;
  }
  if (st < 0) die("--check: malformed I line after iteration %ld", n - 1);
  fclose(f);
  printf("check: ok: %ld iterations, gradients within %.3g of the reference\n", n, worst);
  free(w), free(g), free(acc);
  return n > 0 ? 0 : 1;
}

/* ---- the elastic job ------------------------------------------------------------------------- */

typedef struct {
  kylix_comm *comm;
  int rank, size;
  int gen;         /* comms so far: 1 for the one from kylix_init */
  long changed_at; /* the iteration of the last change of comm: no second resize there */
  FILE *log;
} member;

static void log_membership(member *m, const opts *o, long iter) {
  int32_t prev[1024], n = 0;
  CHECK(m->comm, kylix_members(m->comm, prev, 1024, &n));
  if (m->rank != 0 || !o->log) return;
  if (!m->log) {
    if (!(m->log = fopen(o->log, "a"))) die("cannot open the log %s", o->log);
    if (ftell(m->log) == 0)
      fprintf(m->log, "H features=%ld parts=%ld examples=%ld seed=%ld lr=%.17g\n", o->features,
              o->parts, o->examples, o->seed, o->lr);
  }
  fprintf(m->log, "M %ld %d", iter, m->size);
  for (int i = 0; i < n && i < 1024; i++) fprintf(m->log, " %d", (int)prev[i]);
  fprintf(m->log, "\n");
  fflush(m->log);
}

/* After a change of comm: the joiners (kylix_members says -1) get the iteration and w from
   rank 0, which is always a survivor. */
static void adopt(member *m, const opts *o, kylix_comm *next, long *iter, double *w) {
  m->comm = next;
  m->rank = kylix_rank(next), m->size = kylix_size(next);
  g_rank = m->rank;
  int32_t prev[1024], n = 0, joiners = 0;
  CHECK(next, kylix_members(next, prev, 1024, &n));
  for (int i = 0; i < n && i < 1024; i++) joiners += prev[i] < 0;
  if (joiners) {
    double it = (double)*iter;
    CHECK(next, kylix_bcast(next, &it, sizeof it, 0));
    CHECK(next, kylix_bcast(next, w, (int64_t)sizeof(double) * o->features, 0));
    *iter = (long)it;
  }
  m->changed_at = *iter;
  m->gen++;
  log_membership(m, o, *iter);
}

/* kylix_resize until it succeeds: a failed resize leaves the comm broken, and every live
   member may try again (kylix.h). min_size > 0 waits for joiners. */
static void resize(member *m, const opts *o, int32_t min_size, long *iter, double *w) {
  kylix_comm *next = NULL;
  int st = KYLIX_ERR_INTERNAL;
  for (int attempt = 0; attempt < 5 && st != KYLIX_OK; attempt++) {
    st = kylix_resize(m->comm, min_size, &next);
    if (st != KYLIX_OK)
      fprintf(stderr, "elastic_logreg[%d]: kylix_resize: %s: %s\n", m->rank, kylix_strerror(st),
              kylix_errmsg(m->comm));
  }
  CHECK(m->comm, st);
  kylix_comm *old = m->comm;
  adopt(m, o, next, iter, w);
  CHECK(NULL, kylix_finalize(old));
}

/* the min_size of the resize due before iteration iter, -1 for none */
static int32_t resize_due(const opts *o, long iter) {
  for (int i = 0; i < o->nramp; i++)
    if (o->ramp_at[i] == iter) return (int32_t)o->ramp_min[i];
  return o->resize_every > 0 && iter > 0 && iter % o->resize_every == 0 ? 0 : -1;
}

static void log_iteration(member *m, const opts *o, long iter, const double *sums, const double *w) {
  if (m->rank != 0 || !m->log) return;
  const long F = o->features;
  double *acc = xmalloc(sizeof(double) * (size_t)(F + 2));
  range_sums(o, 0, EVAL_RANKS * o->parts, w, acc);
  fprintf(m->log, "I %ld %d %.17g %.17g", iter, m->size, sums[F] / sums[F + 1], acc[F] / acc[F + 1]);
  for (long j = 0; j < F; j++) fprintf(m->log, " %.17g", sums[j] / sums[F + 1]);
  fprintf(m->log, "\n");
  fflush(m->log);
  free(acc);
}

int main(int argc, char **argv) {
  opts o = parse_opts(argc, argv);
  if (o.check) return check_log(o);
  const long F = o.features;
  int joined = getenv("KYLIX_JOIN") != NULL;
  member m = {0};
  double *w = xcalloc((size_t)F, sizeof(double)), *sums = xmalloc(sizeof(double) * (size_t)(F + 2));
  long iter = 0;
  kylix_comm *first = NULL;
  CHECK(NULL, kylix_init("", &first)); /* a joiner's returns once a resize admitted it */
  adopt(&m, &o, first, &iter, w);
  if (m.rank == 0) printf("elastic_logreg: %s at iteration %ld on %d ranks\n",
                          joined ? "joined" : "started", iter, m.size);
  while (iter < o.iters) {
    int32_t min_size = resize_due(&o, iter);
    if (min_size >= 0 && m.changed_at != iter) resize(&m, &o, min_size, &iter, w);
    if (!joined && m.gen == 1 && m.rank == o.die_rank && iter == o.die_iter) raise(SIGKILL);
    range_sums(&o, (long)m.rank * o.parts, (long)(m.rank + 1) * o.parts, w, sums);
    int st = kylix_allreduce(m.comm, sums, sums, F + 2, KYLIX_F64, KYLIX_RSUM);
    if (st == KYLIX_ERR_PEER || st == KYLIX_ERR_TIMEOUT) {
      fprintf(stderr, "elastic_logreg[%d]: iteration %ld: %s: %s; resizing\n", m.rank, iter,
              kylix_strerror(st), kylix_errmsg(m.comm));
      resize(&m, &o, 0, &iter, w);
      continue; /* the same iteration again, on the survivors' data */
    }
    CHECK(m.comm, st);
    log_iteration(&m, &o, iter, sums, w);
    for (long j = 0; j < F; j++) w[j] -= o.lr * sums[j] / sums[F + 1];
    if (m.rank == 0 && (iter % 10 == 0 || iter + 1 == o.iters))
      printf("iteration %ld: %d ranks, loss %.6f\n", iter, m.size, sums[F] / sums[F + 1]);
    fflush(stdout);
    iter++;
    if (o.sleep_ms) nanosleep(&(struct timespec){o.sleep_ms / 1000, (o.sleep_ms % 1000) * 1000000}, NULL);
  }
  if (m.log) fclose(m.log);
  CHECK(m.comm, kylix_finalize(m.comm));
  free(w), free(sums);
  return 0;
}
