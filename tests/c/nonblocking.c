/*
 * nonblocking.c - kylix_ireduce, kylix_iallreduce, kylix_wait, kylix_test.
 *
 * usage: nonblocking [SEED]
 *
 * inflight  six requests (ireduce and iallreduce, several dtypes and ops) in
 *           flight at once, completed in an order that differs between ranks;
 *           every result equals the reference each rank computes by itself
 * mixed     blocking kylix_allreduce, kylix_reduce and kylix_barrier called
 *           while requests are in flight queue behind them (same order on
 *           every rank); the requests are done when the blocking call returns
 * poll      kylix_test polled with a nanosleep between polls until done
 * overlap   a large iallreduce returns at once and completes while the caller
 *           computes (kylix_test between chunks of work, never kylix_wait);
 *           the buffers are untouched by the caller meanwhile
 * errors    a second kylix_wait on the same handle and kylix_test after done
 *           return KYLIX_ERR_STATE (no crash, no double free); NULL request or
 *           done give KYLIX_ERR_ARG; a bad argument on one rank fails there at
 *           once and with KYLIX_ERR_MISMATCH at wait on the others; an op
 *           mismatch fails every request; a plan freed while a request on it
 *           is in flight still gives the right result
 * finalize  kylix_finalize with a request in flight finishes it first; the
 *           handle is invalid afterwards
 */
#include "check.h"

#define K 500          /* sparse feature indices 0..K-1 */
#define NOBODY 9999999 /* an index nobody contributes */
#define ND 3000        /* dense elements */

static uint64_t g_seed;

/* Rank r contributes to index k when (7k + r) % 3 != 0; multiples of 11 twice. */
static int contributes(int r, int k) { return (7 * k + r) % 3 != 0; }

static int64_t make_out(int r, int64_t *idx) {
  int64_t n = 0;
  for (int k = K - 1; k >= 0; k--) /* descending: unsorted on purpose */
    if (contributes(r, k)) {
      idx[n++] = k;
      if (k % 11 == 0) idx[n++] = k;
    }
  return n;
}

/* value of rank r at out position p in request q: small integers, exact in any order */
static int64_t sval(int r, int64_t p, int q) {
  rng_t g = rng_seed(g_seed, (uint64_t)q, (uint64_t)r, (uint64_t)p);
  return (int64_t)rng_below(&g, 9) - 2;
}

static int64_t dval(int r, int i, int q) {
  rng_t g = rng_seed(g_seed, 1000 + (uint64_t)q, (uint64_t)r, (uint64_t)i);
  return (int64_t)rng_below(&g, 1000) - 300;
}

static int64_t op_apply(int op, int64_t a, int64_t b) {
  switch (op) {
  case KYLIX_SUM: return a + b;
  case KYLIX_MAX: return a > b ? a : b;
  case KYLIX_MIN: return a < b ? a : b;
  }
  return 0;
}

/* reference for sparse request q with op at index k: has = 0 when nobody contributes */
static int64_t sparse_want(int q, int op, int k, int *has) {
  int64_t acc = 0;
  *has = 0;
  static int64_t idx[2 * K];
  for (int r = 0; r < g_size; r++) {
    int64_t n = make_out(r, idx);
    for (int64_t p = 0; p < n; p++)
      if (idx[p] == k) {
        acc = *has ? op_apply(op, acc, sval(r, p, q)) : sval(r, p, q);
        *has = 1;
      }
  }
  return acc;
}

static int64_t dense_want(int q, int op, int i) {
  int64_t acc = dval(0, i, q);
  for (int r = 1; r < g_size; r++) acc = op_apply(op, acc, dval(r, i, q));
  return acc;
}

/* the plan every section uses */
static int64_t g_out[2 * K], g_in[K + 1], g_nout, g_nin;

static kylix_plan *make_plan(kylix_comm *c) {
  g_nout = make_out(g_rank, g_out);
  g_nin = 0;
  for (int k = 0; k < K; k++) g_in[g_nin++] = (k * 37) % K; /* a permutation */
  g_in[g_nin++] = NOBODY;
  kylix_plan *p = NULL;
  MUST_OK(kylix_config(c, g_out, g_nout, g_in, g_nin, &p));
  return p;
}

/* A request with its buffers and what it must produce. */
typedef struct {
  int sparse; /* ireduce, else iallreduce */
  int q, op, dtype;
  void *send, *recv;
  kylix_request *rq;
} req_t;

static void fill(req_t *t) {
  int64_t n = t->sparse ? g_nout : ND;
  for (int64_t i = 0; i < n; i++) {
    int64_t v = t->sparse ? sval(g_rank, i, t->q) : dval(g_rank, (int)i, t->q);
    if (t->dtype == KYLIX_F64) ((double *)t->send)[i] = (double)v;
    else if (t->dtype == KYLIX_I32) ((int32_t *)t->send)[i] = (int32_t)v;
    else ((int64_t *)t->send)[i] = v;
  }
}

static req_t req_new(int sparse, int q, int op, int dtype) {
  req_t t = {sparse, q, op, dtype, NULL, NULL, NULL};
  t.send = xmalloc(8 * (sparse ? (size_t)g_nout : ND));
  t.recv = xmalloc(8 * (sparse ? (size_t)g_nin : ND));
  memset(t.recv, 0xEE, 8 * (sparse ? (size_t)g_nin : ND));
  fill(&t);
  return t;
}

static void req_free(req_t *t) {
  free(t->send);
  free(t->recv);
}

static int64_t get(const req_t *t, int64_t i) {
  if (t->dtype == KYLIX_F64) return (int64_t)((double *)t->recv)[i];
  if (t->dtype == KYLIX_I32) return ((int32_t *)t->recv)[i];
  return ((int64_t *)t->recv)[i];
}

static int issue(kylix_comm *c, kylix_plan *p, req_t *t) {
  t->rq = NULL;
  if (t->sparse) return kylix_ireduce(p, t->send, t->recv, t->dtype, t->op, 1, &t->rq);
  return kylix_iallreduce(c, t->send, t->recv, ND, t->dtype, t->op, &t->rq);
}

/* check t's result; returns the number of wrong elements (the first few are printed) */
static int verify(const char *what, const req_t *t) {
  int bad = 0;
  if (t->sparse) {
    for (int64_t j = 0; j < g_nin; j++) {
      int has = 0;
      int64_t want = g_in[j] == NOBODY ? 0 : sparse_want(t->q, t->op, (int)g_in[j], &has);
      int64_t got = get(t, j);
      if (!has) { /* the op's identity */
        if (t->dtype == KYLIX_F64) {
          double gd = ((double *)t->recv)[j];
          double id = t->op == KYLIX_SUM ? 0 : t->op == KYLIX_MAX ? -INFINITY : INFINITY;
          if (gd != id && bad++ < 3) FAILF("%s q%d: in[%" PRId64 "] (nobody's) = %g, want %g", what, t->q, j, gd, id);
        } else if (t->op == KYLIX_SUM && got != 0 && bad++ < 3) {
          FAILF("%s q%d: in[%" PRId64 "] (nobody's) = %" PRId64 ", want 0", what, t->q, j, got);
        }
        continue;
      }
      if (got != want && bad++ < 3)
        FAILF("%s q%d op %d: in[%" PRId64 "] (index %" PRId64 ") = %" PRId64 ", want %" PRId64, what, t->q, t->op, j, g_in[j], got, want);
    }
  } else {
    for (int i = 0; i < ND; i++) {
      int64_t want = dense_want(t->q, t->op, i), got = get(t, i);
      if (got != want && bad++ < 3) FAILF("%s q%d op %d: [%d] = %" PRId64 ", want %" PRId64, what, t->q, t->op, i, got, want);
    }
  }
  return bad;
}

/* ---- sections */

static void section_inflight(kylix_comm *c, kylix_plan *p) {
  int f0 = g_fail;
  enum { N = 6 };
  req_t t[N] = {
      req_new(1, 1, KYLIX_SUM, KYLIX_F64), req_new(0, 2, KYLIX_SUM, KYLIX_I64),
      req_new(1, 3, KYLIX_MAX, KYLIX_I32), req_new(0, 4, KYLIX_MIN, KYLIX_F64),
      req_new(1, 5, KYLIX_SUM, KYLIX_I64), req_new(0, 6, KYLIX_MAX, KYLIX_I32),
  };
  for (int i = 0; i < N; i++) {
    int st = issue(c, p, &t[i]);
    if (st != KYLIX_OK || !t[i].rq) {
      FAILF("issuing request %d returned %s: %s", i, status_name(st), errmsg_of(c));
      say("DONE", "fails=%d (aborted)", g_fail);
      exit(1);
    }
  }
  /* complete in a rank-dependent order: rank r starts at request r and goes backwards */
  for (int k = 0; k < N; k++) {
    int i = ((g_rank - k) % N + N) % N;
    CHECK_ST(kylix_wait(t[i].rq), KYLIX_OK);
    verify("inflight", &t[i]);
  }
  for (int i = 0; i < N; i++) req_free(&t[i]);
  if (g_fail == f0) PASS("inflight: %d requests in flight, completed in a rank-dependent order", N);
}

static int test_done(kylix_request *rq) {
  int done = -1;
  int st = kylix_test(rq, &done);
  if (st != KYLIX_OK) FAILF("kylix_test returned %s: %s", status_name(st), errmsg_of(g_comm));
  return done;
}

static void section_mixed(kylix_comm *c, kylix_plan *p) {
  int f0 = g_fail;
  req_t a = req_new(1, 11, KYLIX_SUM, KYLIX_I64), b = req_new(0, 12, KYLIX_MAX, KYLIX_F64);
  req_t blk = req_new(0, 13, KYLIX_SUM, KYLIX_I64), blk2 = req_new(1, 14, KYLIX_MIN, KYLIX_I64);
  MUST_OK(issue(c, p, &a));
  /* a blocking allreduce with a request in flight: it queues behind the request */
  CHECK_ST(kylix_allreduce(c, blk.send, blk.recv, ND, KYLIX_I64, KYLIX_SUM), KYLIX_OK);
  verify("mixed blocking allreduce", &blk);
  CHECK(test_done(a.rq) == 1, "ireduce issued before a blocking allreduce is not done after it");
  verify("mixed ireduce", &a);
  MUST_OK(issue(c, p, &b));
  CHECK_ST(kylix_reduce(p, blk2.send, blk2.recv, KYLIX_I64, KYLIX_MIN, 1), KYLIX_OK);
  verify("mixed blocking reduce", &blk2);
  MUST_OK(issue(c, p, &a));
  CHECK_ST(kylix_barrier(c), KYLIX_OK);
  CHECK_ST(kylix_wait(a.rq), KYLIX_OK);
  CHECK_ST(kylix_wait(b.rq), KYLIX_OK);
  verify("mixed iallreduce", &b);
  verify("mixed ireduce again", &a);
  req_free(&a), req_free(&b), req_free(&blk), req_free(&blk2);
  if (g_fail == f0) PASS("mixed: blocking allreduce, reduce and barrier queue behind requests in flight");
}

static void section_poll(kylix_comm *c, kylix_plan *p) {
  int f0 = g_fail;
  req_t t = req_new(0, 21, KYLIX_SUM, KYLIX_I64), u = req_new(1, 22, KYLIX_SUM, KYLIX_F64);
  MUST_OK(issue(c, p, &t));
  MUST_OK(issue(c, p, &u));
  int polls = 0, done_t = 0, done_u = 0;
  double t0 = now_s();
  while (!(done_t && done_u) && now_s() - t0 < 60) {
    if (!done_t && test_done(t.rq) == 1) done_t = 1;
    if (!done_u && test_done(u.rq) == 1) {
      done_u = 1;
      if (!done_t) { /* the first may have finished since it was tested, not after the second */
        done_t = test_done(t.rq) == 1;
        CHECK(done_t, "the second request finished before the first");
      }
    }
    polls++;
    if (!(done_t && done_u)) sleep_s(0.0005); /* never busy-spin */
  }
  CHECK(done_t && done_u, "requests not done after 60 s of kylix_test (%d polls)", polls);
  if (done_t) verify("poll iallreduce", &t);
  if (done_u) verify("poll ireduce", &u);
  req_free(&t), req_free(&u);
  if (g_fail == f0) PASS("poll: two requests done after %d kylix_test polls", polls);
}

static void section_overlap(kylix_comm *c) {
  int f0 = g_fail;
  enum { NB = 1 << 20 }; /* 8 MB of doubles */
  double *send = xmalloc(NB * sizeof(double)), *recv = xmalloc(NB * sizeof(double));
  for (int i = 0; i < NB; i++) send[i] = (double)((i + g_rank) % 1000);
  /* the same operation blocking, for scale */
  MUST_OK(kylix_barrier(c));
  double t0 = now_s();
  MUST_OK(kylix_allreduce(c, send, recv, NB, KYLIX_F64, KYLIX_SUM));
  double t_block = now_s() - t0;
  memset(recv, 0, NB * sizeof(double));

  MUST_OK(kylix_barrier(c));
  kylix_request *rq = NULL;
  t0 = now_s();
  MUST_OK(kylix_iallreduce(c, send, recv, NB, KYLIX_F64, KYLIX_SUM, &rq));
  double t_issue = now_s() - t0;
  /* local computation in chunks, kylix_test in between: the library progresses on its own */
  enum { NW = 1 << 16 };
  double *work = xmalloc(NW * sizeof(double)), acc = 0;
  for (int i = 0; i < NW; i++) work[i] = (double)i;
  int done = 0, chunks = 0;
  while (!done && now_s() - t0 < 60) {
    for (int i = 0; i < NW; i++) acc += work[i] * work[(i * 7) % NW] * 1e-9;
    chunks++;
    done = test_done(rq);
  }
  double t_done = now_s() - t0;
  CHECK(done == 1, "iallreduce not done after 60 s of computing and kylix_test");
  CHECK(acc > 0, "local computation produced %g", acc);
  if (done == 1) {
    int bad = 0;
    for (int i = 0; i < NB && bad < 3; i++) {
      double want = 0;
      for (int r = 0; r < g_size; r++) want += (double)((i + r) % 1000);
      if (recv[i] != want) {
        bad++;
        FAILF("overlap iallreduce [%d] = %g, want %g", i, recv[i], want);
      }
    }
  }
  /* kylix_iallreduce only queues the work: it must return long before the blocking call would
     (the 2 ms floor keeps a scheduler hiccup on an oversubscribed host from failing this). */
  CHECK(t_issue < 0.5 * t_block || t_issue < 0.002, "kylix_iallreduce took %.3f ms, the blocking call %.3f ms",
        t_issue * 1e3, t_block * 1e3);
  INFO("overlap: blocking %.2f ms; issue %.3f ms, done after %.2f ms and %d chunks of computation", t_block * 1e3,
       t_issue * 1e3, t_done * 1e3, chunks);
  free(send), free(recv), free(work);
  if (g_fail == f0) PASS("overlap: 8 MB iallreduce completed during %d chunks of local computation", chunks);
}

static void section_errors(kylix_comm *c, kylix_plan *p) {
  int f0 = g_fail;
  req_t t = req_new(0, 31, KYLIX_SUM, KYLIX_I64);
  MUST_OK(issue(c, p, &t));
  kylix_request *freed = t.rq;
  CHECK_ST(kylix_wait(t.rq), KYLIX_OK);
  verify("errors first wait", &t);
  /* the handle was freed by the first wait */
  CHECK_ST(kylix_wait(freed), KYLIX_ERR_STATE);
  CHECK(contains_ci(kylix_errmsg(NULL), "already completed and freed"), "errmsg(NULL) = \"%s\"", kylix_errmsg(NULL));
  int done = -1;
  CHECK_ST(kylix_test(freed, &done), KYLIX_ERR_STATE);
  CHECK(done == 0, "kylix_test on a freed request set done=%d", done);
  /* kylix_test frees when it reports done */
  MUST_OK(issue(c, p, &t));
  freed = t.rq;
  for (done = 0; !done;) {
    if (kylix_test(t.rq, &done) != KYLIX_OK) {
      FAILF("kylix_test: %s", errmsg_of(c));
      break;
    }
    if (!done) sleep_s(0.0005);
  }
  CHECK_ST(kylix_test(freed, &done), KYLIX_ERR_STATE);
  CHECK_ST(kylix_wait(freed), KYLIX_ERR_STATE);
  /* NULLs */
  CHECK_ST(kylix_wait(NULL), KYLIX_ERR_ARG);
  CHECK_ST(kylix_test(NULL, &done), KYLIX_ERR_ARG);
  MUST_OK(issue(c, p, &t));
  CHECK_ST(kylix_test(t.rq, NULL), KYLIX_ERR_ARG);
  CHECK(contains_ci(kylix_errmsg(c), "done is NULL"), "errmsg(c) = \"%s\"", kylix_errmsg(c));
  CHECK_ST(kylix_wait(t.rq), KYLIX_OK); /* still valid after the refused test */
  kylix_request *rq = (kylix_request *)0x1;
  CHECK_ST(kylix_iallreduce(c, t.send, t.recv, ND, KYLIX_I64, KYLIX_SUM, NULL), KYLIX_ERR_ARG);

  /* rank 0 passes width 0: refused there at once, a mismatch at wait elsewhere */
  req_t s = req_new(1, 32, KYLIX_SUM, KYLIX_F64);
  int st = kylix_ireduce(p, s.send, s.recv, KYLIX_F64, KYLIX_SUM, g_rank == 0 ? 0 : 1, &rq);
  if (g_rank == 0) {
    CHECK(st == KYLIX_ERR_ARG && rq == NULL, "width 0: %s, rq=%p", status_name(st), (void *)rq);
    CHECK(contains_ci(kylix_errmsg(c), "width"), "errmsg(c) = \"%s\"", kylix_errmsg(c));
  } else {
    CHECK(st == KYLIX_OK && rq != NULL, "peer of a rejecting rank: issue returned %s", status_name(st));
    if (st == KYLIX_OK) {
      CHECK_ST(kylix_wait(rq), KYLIX_ERR_MISMATCH);
      CHECK(names_rank(kylix_errmsg(c), 0), "mismatch does not name rank 0: \"%s\"", kylix_errmsg(c));
    }
  }
  /* every rank passes BOR on floats: refused everywhere at issue */
  rq = (kylix_request *)0x1;
  CHECK_ST(kylix_iallreduce(c, s.send, s.recv, 4, KYLIX_F64, KYLIX_BOR, &rq), KYLIX_ERR_ARG);
  CHECK(rq == NULL, "a refused iallreduce left a request");
  /* ranks disagree on the op: every request fails with a mismatch */
  MUST_OK(kylix_iallreduce(c, t.send, t.recv, ND, KYLIX_I64, g_rank == g_size - 1 ? KYLIX_MAX : KYLIX_SUM, &rq));
  if (g_size > 1) CHECK_ST(kylix_wait(rq), KYLIX_ERR_MISMATCH);
  else CHECK_ST(kylix_wait(rq), KYLIX_OK);
  /* the comm is still usable; a plan freed while a request on it runs still gives the result */
  int64_t out2[2 * K], in2[K + 1], nout = g_nout, nin = g_nin;
  memcpy(out2, g_out, sizeof out2), memcpy(in2, g_in, sizeof in2);
  kylix_plan *p2 = NULL;
  MUST_OK(kylix_config(c, out2, nout, in2, nin, &p2));
  req_t u = req_new(1, 33, KYLIX_SUM, KYLIX_I64);
  MUST_OK(issue(c, p2, &u));
  CHECK_ST(kylix_plan_free(p2), KYLIX_OK);
  CHECK_ST(kylix_wait(u.rq), KYLIX_OK);
  verify("ireduce on a plan freed meanwhile", &u);
  CHECK_ST(kylix_ireduce(p2, u.send, u.recv, KYLIX_I64, KYLIX_SUM, 1, &rq), KYLIX_ERR_STATE);
  req_free(&t), req_free(&s), req_free(&u);
  CHECK_ST(kylix_barrier(c), KYLIX_OK);
  if (g_fail == f0) PASS("errors: double wait and test after done give KYLIX_ERR_STATE; ARG at issue, MISMATCH at wait");
}

static void section_finalize(kylix_comm *c, kylix_plan *p) {
  int f0 = g_fail;
  req_t t = req_new(0, 41, KYLIX_SUM, KYLIX_I64), u = req_new(1, 42, KYLIX_MAX, KYLIX_I64);
  MUST_OK(issue(c, p, &t));
  MUST_OK(issue(c, p, &u));
  CHECK_ST(kylix_finalize(c), KYLIX_OK);
  g_comm = NULL;
  /* finalize finished both before closing: the buffers hold the results */
  verify("iallreduce in flight at finalize", &t);
  verify("ireduce in flight at finalize", &u);
  CHECK_ST(kylix_wait(t.rq), KYLIX_ERR_STATE);
  int done = -1;
  CHECK_ST(kylix_test(u.rq, &done), KYLIX_ERR_STATE);
  req_free(&t), req_free(&u);
  if (g_fail == f0) PASS("finalize: requests in flight finished first, handles invalid afterwards");
}

int main(int argc, char **argv) {
  check_init("nonblocking", 110);
  g_seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 5;
  kylix_comm *c = init_comm("timeout_ms=20000");
  kylix_plan *p = make_plan(c);
  section_inflight(c, p);
  section_mixed(c, p);
  section_poll(c, p);
  section_overlap(c);
  section_errors(c, p);
  section_finalize(c, p); /* finalizes c and with it p */
  return check_finish();
}
