/*
 * extras.c - the parts of the C ABI beyond the core sparse/dense collectives.
 *
 * usage: extras SECTION [LAYERS]
 *   nonblocking  kylix_ireduce/kylix_iallreduce with kylix_wait and kylix_test
 *                (polled with a 1 ms sleep), two requests in flight at once
 *   userop       kylix_op_create: a user SUM equals the built-in SUM bitwise;
 *                the associative, non-commutative "first" op shows that
 *                contributions are combined in one fixed order (rank order,
 *                then the caller's order) on every rank
 *   mix          kylix_mix: after LAYERS steps every rank holds the global mean
 *   fork         a child forked after init gets KYLIX_ERR_STATE, never a hang;
 *                the parent's comm is unaffected
 *   reinit       kylix_init again after kylix_finalize, then a second comm
 *                alongside the first ("each call makes a new, independent
 *                comm"): both work, a barrier on each
 *   shrink       the last rank is SIGKILLed; the survivors see KYLIX_ERR_PEER,
 *                kylix_shrink gives a comm of size-1 ranks renumbered in order,
 *                and a reduce on it is right (run with --keep-going)
 */
#include "check.h" /* first: it defines _GNU_SOURCE */

#include <sys/wait.h>

#define K 64          /* feature indices 0..K-1 */
#define NOBODY 1000000 /* an index nobody contributes */

/* Rank r contributes to k when (k + r) % 3 != 0; indices k % 5 == 0 twice. */
static int contributes(int r, int k) { return (k + r) % 3 != 0; }

static int64_t make_out(int r, int64_t *idx) {
  int64_t n = 0;
  for (int k = K - 1; k >= 0; k--) /* descending: unsorted on purpose */
    if (contributes(r, k)) {
      idx[n++] = k;
      if (k % 5 == 0) idx[n++] = k;
    }
  return n;
}

static double val(int r, int64_t pos) { return (double)(r * 1000 + pos + 1); }

static kylix_plan *sum_plan(kylix_comm *c, int64_t *out, int64_t *n_out, int64_t *in, int64_t *n_in) {
  *n_out = make_out(g_rank, out);
  *n_in = 0;
  for (int k = 0; k < K; k++) in[(*n_in)++] = k;
  in[(*n_in)++] = NOBODY;
  kylix_plan *p = NULL;
  MUST_OK(kylix_config(c, out, *n_out, in, *n_in, &p));
  return p;
}

/* expected SUM at index k */
static double want_sum(int k) {
  double s = 0;
  for (int r = 0; r < g_size; r++) {
    int64_t idx[2 * K], n = make_out(r, idx);
    for (int64_t p = 0; p < n; p++)
      if (idx[p] == k) s += val(r, p);
  }
  return s;
}

static void section_nonblocking(kylix_comm *c) {
  int f0 = g_fail;
  int64_t out[2 * K], in[K + 1], n_out, n_in;
  kylix_plan *p = sum_plan(c, out, &n_out, in, &n_in);
  double ov[2 * K], iv[K + 1];
  for (int64_t i = 0; i < n_out; i++) ov[i] = val(g_rank, i);
  kylix_request *rq = NULL;
  MUST_OK(kylix_ireduce(p, ov, iv, KYLIX_F64, KYLIX_SUM, 1, &rq));
  CHECK(rq != NULL, "ireduce gave no request");
  CHECK_ST(kylix_wait(rq), KYLIX_OK);
  for (int k = 0; k < K; k++) CHECK(iv[k] == want_sum(k), "ireduce [%d] = %g, want %g", k, iv[k], want_sum(k));
  CHECK(iv[K] == 0, "ireduce nobody's index = %g", iv[K]);

  /* iallreduce polled with kylix_test */
  int64_t s[100], r[100];
  for (int i = 0; i < 100; i++) s[i] = (int64_t)i * (g_rank + 1);
  MUST_OK(kylix_iallreduce(c, s, r, 100, KYLIX_I64, KYLIX_SUM, &rq));
  int done = 0, polls = 0;
  double t0 = now_s();
  while (!done && now_s() - t0 < 30) {
    int st = kylix_test(rq, &done);
    if (st != KYLIX_OK) { FAILF("kylix_test returned %s: %s", status_name(st), errmsg_of(c)); break; }
    polls++;
    if (!done) sleep_s(0.001);
  }
  CHECK(done, "iallreduce not done after 30 s of kylix_test");
  int64_t tri = (int64_t)g_size * (g_size + 1) / 2;
  for (int i = 0; i < 100 && done; i++)
    if (r[i] != i * tri) { FAILF("iallreduce [%d] = %" PRId64 ", want %" PRId64, i, r[i], i * tri); break; }

  /* two requests in flight, waited for in reverse order */
  kylix_request *ra = NULL, *rb = NULL;
  double iv2[K + 1];
  MUST_OK(kylix_ireduce(p, ov, iv2, KYLIX_F64, KYLIX_SUM, 1, &ra));
  MUST_OK(kylix_iallreduce(c, s, r, 100, KYLIX_I64, KYLIX_SUM, &rb));
  CHECK_ST(kylix_wait(rb), KYLIX_OK);
  CHECK_ST(kylix_wait(ra), KYLIX_OK);
  for (int k = 0; k < K; k++) CHECK(iv2[k] == want_sum(k), "second ireduce [%d] = %g, want %g", k, iv2[k], want_sum(k));
  CHECK(r[7] == 7 * tri, "second iallreduce [7] = %" PRId64, r[7]);

  /* a blocking collective after the requests */
  CHECK_ST(kylix_barrier(c), KYLIX_OK);
  CHECK_ST(kylix_test(NULL, &done), KYLIX_ERR_ARG);
  MUST_OK(kylix_plan_free(p));
  if (g_fail == f0) PASS("nonblocking: ireduce+wait, iallreduce+test (%d polls), two in flight", polls);
}

/* ---- user ops */

static int g_ctx_ok = 1;

static void user_sum(void *inout, const void *in, int64_t count, int dtype, void *ctx) {
  if (ctx != (void *)&g_ctx_ok || dtype != KYLIX_F64) g_ctx_ok = 0;
  double *a = inout;
  const double *b = in;
  for (int64_t i = 0; i < count; i++) a[i] += b[i];
}

/* keep inout: associative, not commutative */
static void user_first(void *inout, const void *in, int64_t count, int dtype, void *ctx) {
  (void)inout, (void)in, (void)count, (void)dtype, (void)ctx;
}

static void section_userop(kylix_comm *c) {
  int f0 = g_fail;
  int op_sum = -1, op_first = -1;
  MUST_OK(kylix_op_create(user_sum, &g_ctx_ok, &op_sum));
  MUST_OK(kylix_op_create(user_first, NULL, &op_first));
  CHECK(op_sum != op_first && op_sum > KYLIX_BXOR && op_first > KYLIX_BXOR, "op ids %d, %d", op_sum, op_first);
  int bad = 0;
  CHECK_ST(kylix_op_create(NULL, NULL, &bad), KYLIX_ERR_ARG);

  int64_t out[2 * K], in[K + 1], n_out, n_in;
  kylix_plan *p = sum_plan(c, out, &n_out, in, &n_in);
  n_in = K; /* nobody's index: a user op has no identity to check */
  kylix_plan_free(p);
  MUST_OK(kylix_config(c, out, n_out, in, n_in, &p));
  double ov[2 * K], a[K], b[K];
  for (int64_t i = 0; i < n_out; i++) ov[i] = val(g_rank, i);
  MUST_OK(kylix_reduce(p, ov, a, KYLIX_F64, op_sum, 1));
  MUST_OK(kylix_reduce(p, ov, b, KYLIX_F64, KYLIX_SUM, 1));
  CHECK(memcmp(a, b, sizeof a) == 0, "user SUM differs from the built-in SUM");
  CHECK(g_ctx_ok, "user fn got the wrong ctx or dtype");

  /* "first": the result is the first contribution in the combining order. With the order
     "rank order, then the caller's order" that is the lowest contributing rank's first
     occurrence; if the library passes operands the other way round it is the highest rank's
     last occurrence. Either way one convention must hold for every index. */
  MUST_OK(kylix_reduce(p, ov, a, KYLIX_F64, op_first, 1));
  int left = 0, right = 0, neither = 0, contributed = 0;
  for (int k = 0; k < K; k++) {
    double lo = -1, hi = -1;
    for (int r = 0; r < g_size; r++) {
      int64_t idx[2 * K], n = make_out(r, idx);
      for (int64_t q = 0; q < n; q++)
        if (idx[q] == k) {
          if (lo < 0) lo = val(r, q);
          hi = val(r, q);
        }
    }
    if (lo < 0) continue; /* nobody contributes */
    contributed++;
    left += a[k] == lo;
    right += a[k] == hi;
    if (a[k] != lo && a[k] != hi && ++neither <= 3)
      FAILF("user op first: index %d got %g, want %g (first in rank order) or %g (last)", k, a[k], lo, hi);
  }
  CHECK(neither == 0 && (left == contributed || right == contributed),
        "user op first: no single combining order: of %d indices %d match first-in-order, %d last-in-order",
        contributed, left, right);
  INFO("userop first: of %d indices %d match the first contribution in rank order, %d the last", contributed, left, right);
  double all[K];
  MUST_OK(kylix_allreduce(c, a, all, K, KYLIX_F64, op_first));
  MUST_OK(kylix_plan_free(p));
  if (g_fail == f0) PASS("userop: user SUM == built-in SUM; non-commutative op combined in one fixed order");
}

static void section_mix(kylix_comm *c, int layers) {
  int f0 = g_fail;
  enum { N = 257 };
  double d[N], want[N];
  float f[N], fw[N];
  for (int i = 0; i < N; i++) {
    want[i] = 0;
    for (int r = 0; r < g_size; r++) want[i] += (double)((r * 31 + i * 7) % 101) / 8.0;
    want[i] /= g_size;
    fw[i] = (float)want[i];
    d[i] = (double)((g_rank * 31 + i * 7) % 101) / 8.0;
    f[i] = (float)d[i];
  }
  for (int s = 0; s < layers; s++) {
    MUST_OK(kylix_mix(c, d, N, KYLIX_F64, s));
    MUST_OK(kylix_mix(c, f, N, KYLIX_F32, s));
  }
  for (int i = 0; i < N; i++) {
    if (fabs(d[i] - want[i]) > 1e-12 * fabs(want[i]) + 1e-12) { FAILF("mix F64 [%d] = %.17g, want %.17g", i, d[i], want[i]); break; }
    if (fabsf(f[i] - fw[i]) > 1e-5f * fabsf(fw[i]) + 1e-5f) { FAILF("mix F32 [%d] = %.9g, want %.9g", i, f[i], fw[i]); break; }
  }
  int st = kylix_mix(c, d, N, KYLIX_I64, 0);
  CHECK(st == KYLIX_ERR_ARG, "kylix_mix on I64 returned %s, want KYLIX_ERR_ARG", status_name(st));
  CHECK_ST(kylix_barrier(c), KYLIX_OK);
  if (g_fail == f0) PASS("mix: global mean after %d steps (F64, F32)", layers);
}

static void section_fork(kylix_comm *c) {
  int f0 = g_fail;
  MUST_OK(kylix_barrier(c));
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) { FAILF("fork: %s", strerror(errno)); return; }
  if (pid == 0) {
    alarm(10);
    double t0 = now_s();
    int st = kylix_barrier(c);
    double dt = now_s() - t0;
    const char *m = kylix_errmsg(NULL);
    int ok = st == KYLIX_ERR_STATE && dt < 5 && m && *m;
    printf("r%d INFO forked child: kylix_barrier returned %s after %.3f s: %s\n", g_rank, status_name(st), dt, m ? m : "(null)");
    fflush(stdout);
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  double t0 = now_s();
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "forked child: %s %d (want exit 0: KYLIX_ERR_STATE and a message within 5 s)",
        WIFEXITED(status) ? "exit" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  INFO("child ended after %.3f s", now_s() - t0);
  CHECK_ST(kylix_barrier(c), KYLIX_OK);
  if (g_fail == f0) PASS("fork: the child gets KYLIX_ERR_STATE, the parent's comm still works");
}

static void section_shrink(kylix_comm *c) {
  int f0 = g_fail;
  int victim = g_size - 1;
  MUST_OK(kylix_barrier(c));
  if (g_rank == victim) {
    INFO("victim: SIGKILL");
    raise(SIGKILL);
  }
  int st = kylix_barrier(c);
  CHECK(st == KYLIX_ERR_PEER || st == KYLIX_ERR_TIMEOUT, "barrier with a dead rank returned %s", status_name(st));
  kylix_comm *s = NULL;
  double t0 = now_s();
  st = kylix_shrink(c, &s);
  INFO("shrink returned %s after %.3f s%s%s", status_name(st), now_s() - t0, st ? ": " : "", st ? errmsg_of(c) : "");
  if (st != KYLIX_OK || !s) {
    FAILF("kylix_shrink returned %s: %s", status_name(st), errmsg_of(c));
    return;
  }
  CHECK(kylix_size(s) == g_size - 1, "shrunk size %d, want %d", kylix_size(s), g_size - 1);
  CHECK(kylix_rank(s) == g_rank, "shrunk rank %d, want %d (survivors keep their order)", kylix_rank(s), g_rank);
  int old_rank = g_rank, old_size = g_size;
  kylix_comm *old = g_comm;
  g_comm = s;
  g_size = kylix_size(s);
  g_rank = kylix_rank(s);
  int64_t out[2 * K], in[K + 1], n_out, n_in;
  kylix_plan *p = sum_plan(s, out, &n_out, in, &n_in);
  double ov[2 * K], iv[K + 1];
  for (int64_t i = 0; i < n_out; i++) ov[i] = val(g_rank, i);
  MUST_OK(kylix_reduce(p, ov, iv, KYLIX_F64, KYLIX_SUM, 1));
  for (int k = 0; k < K; k++) CHECK(iv[k] == want_sum(k), "reduce on the shrunk comm [%d] = %g, want %g", k, iv[k], want_sum(k));
  MUST_OK(kylix_finalize(s));
  g_comm = old, g_rank = old_rank, g_size = old_size;
  if (g_fail == f0) PASS("shrink: %d survivors renumbered, reduce on the new comm is right", old_size - 1);
}

/* returns the comm main should finalize */
static kylix_comm *section_reinit(kylix_comm *c) {
  int f0 = g_fail;
  MUST_OK(kylix_barrier(c));
  MUST_OK(kylix_finalize(c));
  kylix_comm *a = NULL, *b = NULL;
  double t0 = now_s();
  int st = kylix_init("timeout_ms=5000", &a);
  CHECK(st == KYLIX_OK, "kylix_init after kylix_finalize returned %s after %.2f s: %s", status_name(st), now_s() - t0, errmsg_of(NULL));
  if (st != KYLIX_OK) return NULL;
  g_comm = a;
  CHECK_ST(kylix_barrier(a), KYLIX_OK);
  t0 = now_s();
  st = kylix_init("timeout_ms=5000", &b);
  CHECK(st == KYLIX_OK, "a second, concurrent kylix_init returned %s after %.2f s: %s", status_name(st), now_s() - t0, errmsg_of(NULL));
  if (st == KYLIX_OK) {
    CHECK(kylix_rank(b) == g_rank && kylix_size(b) == g_size, "second comm: rank %d size %d", kylix_rank(b), kylix_size(b));
    CHECK_ST(kylix_barrier(b), KYLIX_OK);
    CHECK_ST(kylix_barrier(a), KYLIX_OK);
    CHECK_ST(kylix_finalize(b), KYLIX_OK);
  }
  if (g_fail == f0) PASS("reinit: init after finalize, and two comms at once");
  return a;
}

int main(int argc, char **argv) {
  check_init("extras", 100);
  if (argc < 2) {
    fprintf(stderr, "usage: %s nonblocking|userop|mix|fork|shrink|reinit [LAYERS]\n", argv[0]);
    return 2;
  }
  kylix_comm *c = init_comm("timeout_ms=10000");
  const char *s = argv[1];
  if (!strcmp(s, "nonblocking")) section_nonblocking(c);
  else if (!strcmp(s, "userop")) section_userop(c);
  else if (!strcmp(s, "mix")) section_mix(c, argc > 2 ? atoi(argv[2]) : 1);
  else if (!strcmp(s, "fork")) section_fork(c);
  else if (!strcmp(s, "shrink")) section_shrink(c);
  else if (!strcmp(s, "reinit")) {
    c = section_reinit(c);
    if (!c) return check_finish();
  }
  else { fprintf(stderr, "unknown section %s\n", s); return 2; }
  int st = kylix_finalize(c);
  CHECK(st == KYLIX_OK, "finalize returned %s", status_name(st));
  return check_finish();
}
