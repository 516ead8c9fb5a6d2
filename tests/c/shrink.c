/*
 * shrink.c - ranks die (SIGKILL), the survivors shrink the comm and go on.
 *
 * usage: shrink VICTIMS [VICTIMS2] [TIMEOUT_MS]       (run with --keep-going)
 *   VICTIMS   comma-separated ranks that raise(SIGKILL) after a working
 *             reduce and barrier ("-": none, then the shrink keeps everyone)
 *   VICTIMS2  comma-separated ranks, numbered as in the ORIGINAL comm, that
 *             die after the first shrink: the survivors shrink again ("-" or
 *             absent: no second round)
 *
 * Survivors check, for each round of deaths:
 *   - the next collective fails with KYLIX_ERR_PEER or KYLIX_ERR_TIMEOUT
 *     within TIMEOUT_MS + 3 s, and kylix_errmsg names a dead rank; later
 *     calls on the comm fail with KYLIX_ERR_STATE;
 *   - kylix_failed_ranks lists only dead ranks (numbered as in that comm);
 *   - kylix_shrink gives a comm of exactly the live ranks, renumbered
 *     0..k-1 in their old order; the old comm answers KYLIX_ERR_STATE to
 *     collectives and to a second kylix_shrink, KYLIX_ERR_ARG to a NULL out;
 *   - on the new comm: a sparse config + reduce, config_reduce, a small and a
 *     large dense allreduce, bcast from the last rank, barrier and mix give
 *     the brute-force results for k ranks; kylix_failed_ranks is empty;
 *   - finalizing the old comm does not disturb the new one (half the
 *     survivors finalize it before the others' last collectives on the new).
 */
#include "check.h"

#define MARGIN_S 3.0
#define K 96           /* sparse feature indices 0..K-1 */
#define NOBODY 5000000 /* an index nobody contributes */
#define MAXR 64

static int parse_list(const char *s, int *out) {
  int n = 0;
  if (!s || !strcmp(s, "-")) return 0;
  while (*s && n < MAXR) {
    out[n++] = (int)strtol(s, (char **)&s, 10);
    if (*s == ',') s++;
  }
  return n;
}

static int in_list(const int *l, int n, int r) {
  for (int i = 0; i < n; i++)
    if (l[i] == r) return 1;
  return 0;
}

/* ---- sparse data of rank r of a k-rank comm */

static int contributes(int r, int k) { return (k * 7 + r) % 4 != 0; }

static int64_t make_out(int r, int64_t *idx) {
  int64_t n = 0;
  for (int k = K - 1; k >= 0; k--)
    if (contributes(r, k)) {
      idx[n++] = k;
      if (k % 6 == 0) idx[n++] = k; /* repeated: combined with the op */
    }
  return n;
}

static double val(int r, int64_t pos) { return (double)(r * 1000 + pos + 1); }

static double want_sum(int size, int k) {
  double s = 0;
  for (int r = 0; r < size; r++) {
    int64_t idx[2 * K], n = make_out(r, idx);
    for (int64_t p = 0; p < n; p++)
      if (idx[p] == k) s += val(r, p);
  }
  return s;
}

/* Every collective on comm s (this rank is `rank` of `size`), checked. */
static void exercise(kylix_comm *s, int rank, int size, const char *label) {
  int f0 = g_fail;
  int64_t out[2 * K], in[K + 2], n_out = make_out(rank, out), n_in = 0;
  for (int k = 0; k < K; k++) in[n_in++] = (k * 5 + rank) % K; /* every index, in a rank-specific order */
  in[n_in++] = NOBODY;
  in[n_in++] = in[0]; /* repeated request */
  double ov[2 * K], iv[K + 2];
  for (int64_t i = 0; i < n_out; i++) ov[i] = val(rank, i);

  kylix_plan *p = NULL;
  MUST_OK(kylix_config(s, out, n_out, in, n_in, &p));
  MUST_OK(kylix_reduce(p, ov, iv, KYLIX_F64, KYLIX_SUM, 1));
  for (int64_t j = 0; j < n_in; j++) {
    double w = in[j] == NOBODY ? 0 : want_sum(size, (int)in[j]);
    if (iv[j] != w) { FAILF("%s: reduce in[%" PRId64 "]=%" PRId64 " = %g, want %g", label, j, in[j], iv[j], w); break; }
  }
  MUST_OK(kylix_plan_free(p));

  double iv2[K + 2];
  MUST_OK(kylix_config_reduce(s, out, n_out, ov, in, n_in, iv2, KYLIX_F64, KYLIX_SUM, 1, NULL));
  for (int64_t j = 0; j < n_in; j++) {
    double w = in[j] == NOBODY ? 0 : want_sum(size, (int)in[j]);
    if (iv2[j] != w) { FAILF("%s: config_reduce in[%" PRId64 "] = %g, want %g", label, j, iv2[j], w); break; }
  }

  /* dense: element i of rank r is i*(r+1) + r */
  for (int round = 0; round < 2; round++) {
    int64_t count = round ? 200000 : 10;
    int64_t *a = xmalloc((size_t)count * sizeof *a), *b = xmalloc((size_t)count * sizeof *b);
    for (int64_t i = 0; i < count; i++) a[i] = i * (rank + 1) + rank;
    MUST_OK(kylix_allreduce(s, a, b, count, KYLIX_I64, KYLIX_SUM));
    int64_t tri = (int64_t)size * (size + 1) / 2, base = (int64_t)size * (size - 1) / 2;
    for (int64_t i = 0; i < count; i++)
      if (b[i] != i * tri + base) { FAILF("%s: allreduce of %" PRId64 " [%" PRId64 "] = %" PRId64 ", want %" PRId64, label, count, i, b[i], i * tri + base); break; }
    free(a);
    free(b);
  }

  char msg[32] = "";
  if (rank == size - 1) snprintf(msg, sizeof msg, "hello from %d", rank);
  MUST_OK(kylix_bcast(s, msg, sizeof msg, size - 1));
  char want[32];
  snprintf(want, sizeof want, "hello from %d", size - 1);
  CHECK(!strcmp(msg, want), "%s: bcast gave \"%s\", want \"%s\"", label, msg, want);

  /* mix: after enough steps every rank holds the mean (size-1)/2; 8 steps cover any layering here */
  double m[2] = {rank, 2.0 * rank};
  for (int64_t step = 0; step < 8; step++) MUST_OK(kylix_mix(s, m, 2, KYLIX_F64, step));
  CHECK(fabs(m[0] - (size - 1) / 2.0) < 1e-9 && fabs(m[1] - (size - 1)) < 1e-9,
        "%s: mix gave %g %g, want %g %g", label, m[0], m[1], (size - 1) / 2.0, (double)(size - 1));

  int32_t failed[MAXR], nf = -1;
  CHECK_ST(kylix_failed_ranks(s, failed, MAXR, &nf), KYLIX_OK);
  CHECK(nf == 0, "%s: kylix_failed_ranks on the new comm lists %d ranks (first %d)", label, nf, nf > 0 ? failed[0] : -1);
  MUST_OK(kylix_barrier(s));
  if (g_fail == f0) PASS("%s: rank %d of %d: sparse reduce, config_reduce, allreduce, bcast, mix, barrier right", label, rank, size);
}

/* The first collective after the deaths fails; returns 1 if the message names one of dead[]. */
static int expect_failure(kylix_comm *c, const int *dead, int ndead, double T, const char *label) {
  double t0 = now_s();
  int64_t a[4] = {1, 2, 3, 4}, b[4];
  int st = kylix_allreduce(c, a, b, 4, KYLIX_I64, KYLIX_SUM);
  double dt = now_s() - t0;
  char msg[600];
  snprintf(msg, sizeof msg, "%s", st ? errmsg_of(c) : "");
  INFO("%s: allreduce with dead ranks returned %s after %.3f s: %s", label, status_name(st), dt, msg);
  CHECK(st == KYLIX_ERR_PEER || st == KYLIX_ERR_TIMEOUT, "%s: allreduce with dead ranks returned %s", label, status_name(st));
  CHECK(dt <= T + MARGIN_S, "%s: allreduce took %.2f s to fail", label, dt);
  int named = 0;
  for (int i = 0; i < ndead; i++) named |= names_rank(msg, dead[i]);
  CHECK(named, "%s: errmsg names no dead rank: \"%s\"", label, msg);
  CHECK_ST(kylix_barrier(c), KYLIX_ERR_STATE);
  return named;
}

/* kylix_failed_ranks on c lists only ranks in dead[], and soon at least one of them. (Right
   after the failed call it may list none: the call can fail through a peer's report before this
   rank's own connection to the dead rank has ended.) */
static void check_failed_list(kylix_comm *c, const int *dead, int ndead, double T, const char *label) {
  int32_t failed[MAXR], nf = -1;
  int st;
  double t0 = now_s();
  while ((st = kylix_failed_ranks(c, failed, MAXR, &nf)) == KYLIX_OK && nf == 0 && now_s() - t0 < T + MARGIN_S)
    sleep_s(0.01);
  CHECK(st == KYLIX_OK, "%s: kylix_failed_ranks returned %s: %s", label, status_name(st), errmsg_of(c));
  if (st != KYLIX_OK) return;
  char list[256] = "";
  for (int i = 0; i < nf && i < MAXR; i++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? "," : "", failed[i]);
  INFO("%s: failed_ranks n=%d [%s] after %.3f s", label, nf, list, now_s() - t0);
  CHECK(nf >= 1, "%s: kylix_failed_ranks lists nobody %.1f s after a death", label, now_s() - t0);
  for (int i = 0; i < nf && i < MAXR; i++) {
    CHECK(in_list(dead, ndead, failed[i]), "%s: kylix_failed_ranks lists rank %d, which is alive", label, failed[i]);
    CHECK(i == 0 || failed[i] > failed[i - 1], "%s: kylix_failed_ranks not in increasing order", label);
  }
}

/* Shrink c; check the size and this rank's new number; returns the new comm. */
static kylix_comm *do_shrink(kylix_comm *c, int want_rank, int want_size, double T, const char *label) {
  kylix_comm *s = NULL;
  double t0 = now_s();
  int st = kylix_shrink(c, &s);
  double dt = now_s() - t0;
  INFO("%s: kylix_shrink returned %s after %.3f s%s%s", label, status_name(st), dt, st ? ": " : "", st ? errmsg_of(c) : "");
  if (st != KYLIX_OK || !s) {
    FAILF("%s: kylix_shrink returned %s: %s", label, status_name(st), errmsg_of(c));
    say("DONE", "fails=%d (aborted)", g_fail);
    exit(1);
  }
  CHECK(dt <= T + MARGIN_S, "%s: kylix_shrink took %.2f s", label, dt);
  CHECK(s != c, "%s: kylix_shrink returned the old handle", label);
  CHECK(kylix_size(s) == want_size, "%s: new size %d, want %d", label, kylix_size(s), want_size);
  CHECK(kylix_rank(s) == want_rank, "%s: new rank %d, want %d (survivors keep their order)", label, kylix_rank(s), want_rank);
  /* the old comm: broken for good */
  CHECK_ST(kylix_barrier(c), KYLIX_ERR_STATE);
  kylix_comm *again = NULL;
  CHECK_ST(kylix_shrink(c, &again), KYLIX_ERR_STATE);
  CHECK(again == NULL, "%s: a refused kylix_shrink left *survivors non-NULL", label);
  CHECK_ST(kylix_shrink(c, NULL), KYLIX_ERR_ARG);
  CHECK_ST(kylix_shrink(NULL, &again), KYLIX_ERR_ARG);
  return s;
}

int main(int argc, char **argv) {
  check_init("shrink", 100);
  if (argc < 2) {
    fprintf(stderr, "usage: %s VICTIMS [VICTIMS2] [TIMEOUT_MS]\n", argv[0]);
    return 2;
  }
  int v1[MAXR], v2[MAXR];
  int n1 = parse_list(argv[1], v1);
  int n2 = argc > 2 ? parse_list(argv[2], v2) : 0;
  int timeout_ms = argc > 3 ? atoi(argv[3]) : 4000;
  double T = timeout_ms / 1000.0;
  char opts[64];
  snprintf(opts, sizeof opts, "timeout_ms=%d", timeout_ms);
  kylix_comm *c = init_comm(opts);
  int orig_rank = g_rank, orig_size = g_size;

  /* a working comm first */
  exercise(c, g_rank, g_size, "before");
  if (in_list(v1, n1, orig_rank)) {
    INFO("victim: SIGKILL");
    raise(SIGKILL);
  }

  /* survivors of the first round, in original numbering */
  int live[MAXR], nlive = 0, me1 = -1;
  for (int r = 0; r < orig_size; r++)
    if (!in_list(v1, n1, r)) {
      if (r == orig_rank) me1 = nlive;
      live[nlive++] = r;
    }
  if (n1 > 0) {
    expect_failure(c, v1, n1, T, "round 1");
    check_failed_list(c, v1, n1, T, "round 1");
  }
  kylix_comm *s = do_shrink(c, me1, nlive, T, "shrink 1");
  g_comm = s;
  exercise(s, me1, nlive, "after shrink 1");

  kylix_comm *s2 = NULL;
  if (n2 > 0) {
    /* the second victims, numbered in s */
    int d2[MAXR], nd2 = 0, me2 = -1, nlive2 = 0;
    for (int i = 0; i < nlive; i++) {
      if (in_list(v2, n2, live[i])) d2[nd2++] = i;
      else {
        if (live[i] == orig_rank) me2 = nlive2;
        nlive2++;
      }
    }
    if (in_list(v2, n2, orig_rank)) {
      INFO("second victim (rank %d of the shrunk comm): SIGKILL", me1);
      raise(SIGKILL);
    }
    expect_failure(s, d2, nd2, T, "round 2");
    check_failed_list(s, d2, nd2, T, "round 2");
    s2 = do_shrink(s, me2, nlive2, T, "shrink 2");
    g_comm = s2;
    exercise(s2, me2, nlive2, "after shrink 2");
  }

  /* Finalize order: even ranks of the newest comm finalize the old comms first, then everyone
     runs more collectives on the newest: the old comms' finalize must not close its connections. */
  kylix_comm *newest = s2 ? s2 : s;
  int nr = kylix_rank(newest), ns = kylix_size(newest);
  if (nr % 2 == 0) {
    CHECK_ST(kylix_finalize(c), KYLIX_OK);
    c = NULL;
    if (s2) {
      CHECK_ST(kylix_finalize(s), KYLIX_OK);
      s = NULL;
    }
  }
  exercise(newest, nr, ns, "after finalizing the old comms on even ranks");
  MUST_OK(kylix_barrier(newest));
  CHECK_ST(kylix_finalize(newest), KYLIX_OK);
  g_comm = NULL;
  if (s2 && s) CHECK_ST(kylix_finalize(s), KYLIX_OK);
  if (c) CHECK_ST(kylix_finalize(c), KYLIX_OK);
  if (g_fail == 0)
    PASS("shrink: rank %d of %d is rank %d of %d after %d+%d deaths", orig_rank, orig_size, nr, ns, n1, n2);
  return check_finish();
}
