// smoke.c: drives libkylix.so through include/kylix.h on one rank, the way a C host does.
// Run by capi_test.go as `smoke basic` and `smoke fork`; prints "PASS" last on success.
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kylix.h"

static int failures;

#define CHECK(cond, ...)                                          \
  do {                                                            \
    if (!(cond)) {                                                \
      failures++;                                                 \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                               \
      fprintf(stderr, "\n");                                      \
    }                                                             \
  } while (0)

#define CHECK_ST(call, want)                                                         \
  do {                                                                               \
    int st_ = (call);                                                                \
    CHECK(st_ == (want), "%s returned %d (%s), want %d; errmsg(NULL)=\"%s\"", #call, st_, \
          kylix_strerror(st_), (want), kylix_errmsg(NULL));                          \
  } while (0)

static int contains(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

static kylix_comm *init1(void) {
  kylix_comm *c = NULL;
  CHECK_ST(kylix_init("rank=0;size=1", &c), KYLIX_OK);
  CHECK(c != NULL, "init gave no comm");
  return c;
}

static void test_version_strerror(void) {
  CHECK(kylix_version() == KYLIX_VERSION, "kylix_version()=%d, header says %d", kylix_version(),
        KYLIX_VERSION);
  CHECK(kylix_version() == 100, "version 0.1.0 is 100, got %d", kylix_version());
  for (int s = -3; s <= KYLIX_ERR_INTERNAL + 3; s++) {
    const char *m = kylix_strerror(s);
    CHECK(m != NULL && m[0] != 0, "strerror(%d) is NULL or empty", s);
  }
  CHECK(strcmp(kylix_strerror(12345), "unknown status") == 0, "strerror(12345)=%s",
        kylix_strerror(12345));
  CHECK(strcmp(kylix_strerror(KYLIX_ERR_INTERNAL + 1), "unknown status") == 0, "just past the end");
  CHECK(strcmp(kylix_strerror(KYLIX_ERR_TIMEOUT), kylix_strerror(KYLIX_ERR_PEER)) != 0,
        "statuses share a description");
  CHECK(kylix_errmsg(NULL) != NULL, "errmsg(NULL) is NULL before any failure");
}

static void test_init_errors(void) {
  kylix_comm *c = (kylix_comm *)0x1;
  CHECK_ST(kylix_init("rank=0;size=1;bogus=1", &c), KYLIX_ERR_ARG);
  CHECK(c == NULL, "failed init left *out=%p", (void *)c);
  CHECK(contains(kylix_errmsg(NULL), "bogus"), "errmsg(NULL)=\"%s\" does not name bogus",
        kylix_errmsg(NULL));
  CHECK_ST(kylix_init("rank=0;size=1", NULL), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(NULL), "out"), "errmsg(NULL)=\"%s\"", kylix_errmsg(NULL));
  CHECK_ST(kylix_init("rank=3;size=2;peers=a:1,b:2", &c), KYLIX_ERR_ARG);
  CHECK_ST(kylix_init("size", &c), KYLIX_ERR_ARG);
  // NULL handles and finalize(NULL)
  CHECK_ST(kylix_finalize(NULL), KYLIX_OK);
  CHECK_ST(kylix_plan_free(NULL), KYLIX_OK);
  CHECK_ST(kylix_barrier(NULL), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(NULL), "c is NULL"), "errmsg(NULL)=\"%s\"", kylix_errmsg(NULL));
  CHECK(kylix_rank(NULL) == -1 && kylix_size(NULL) == -1, "rank/size of NULL");
  CHECK_ST(kylix_reduce(NULL, NULL, NULL, KYLIX_F64, KYLIX_SUM, 1), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(NULL), "p is NULL"), "errmsg(NULL)=\"%s\"", kylix_errmsg(NULL));
}

static void test_sparse(kylix_comm *c) {
  CHECK(kylix_rank(c) == 0 && kylix_size(c) == 1, "rank %d size %d", kylix_rank(c),
        kylix_size(c));
  const int64_t out_idx[] = {5, 3, 5, 7};
  const double out_vals[] = {1, 10, 2, 20, 4, 40, 8, 80}; /* width 2 */
  const int64_t in_idx[] = {5, 7, 9, 3, 5};
  const double want_sum[] = {5, 50, 8, 80, 0, 0, 2, 20, 5, 50};
  double in_vals[10];

  kylix_plan *p = NULL;
  CHECK_ST(kylix_config(c, out_idx, 4, in_idx, 5, &p), KYLIX_OK);
  CHECK(p != NULL, "config gave no plan");
  for (int round = 0; round < 2; round++) { /* a plan is reusable */
    memset(in_vals, 0xff, sizeof in_vals);
    CHECK_ST(kylix_reduce(p, out_vals, in_vals, KYLIX_F64, KYLIX_SUM, 2), KYLIX_OK);
    CHECK(memcmp(in_vals, want_sum, sizeof want_sum) == 0,
          "round %d SUM: got %g %g %g %g %g %g %g %g %g %g", round, in_vals[0], in_vals[1],
          in_vals[2], in_vals[3], in_vals[4], in_vals[5], in_vals[6], in_vals[7], in_vals[8],
          in_vals[9]);
  }
  CHECK_ST(kylix_reduce(p, out_vals, in_vals, KYLIX_F64, KYLIX_MAX, 2), KYLIX_OK);
  CHECK(in_vals[0] == 4 && in_vals[1] == 40 && isinf(in_vals[4]) && in_vals[4] < 0,
        "MAX: %g %g %g", in_vals[0], in_vals[1], in_vals[4]);

  /* i64, width 1 */
  const int64_t ov[] = {1, 2, 3, 4};
  int64_t iv[5];
  CHECK_ST(kylix_reduce(p, ov, iv, KYLIX_I64, KYLIX_SUM, 1), KYLIX_OK);
  CHECK(iv[0] == 4 && iv[1] == 4 && iv[2] == 0 && iv[3] == 2 && iv[4] == 4,
        "i64 SUM: %lld %lld %lld %lld %lld", (long long)iv[0], (long long)iv[1],
        (long long)iv[2], (long long)iv[3], (long long)iv[4]);

  /* argument errors: status, message naming the argument, comm still usable after */
  CHECK_ST(kylix_config(c, NULL, 5, in_idx, 5, &p), KYLIX_ERR_ARG);
  CHECK(p == NULL, "failed config left a plan");
  CHECK(contains(kylix_errmsg(c), "out_idx is NULL but n_out=5"), "errmsg=\"%s\"",
        kylix_errmsg(c));
  CHECK_ST(kylix_config(c, out_idx, 4, in_idx, -1, &p), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(c), "n_in"), "errmsg=\"%s\"", kylix_errmsg(c));
  CHECK_ST(kylix_config(c, out_idx, 4, in_idx, 5, NULL), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(c), "plan is NULL"), "errmsg=\"%s\"", kylix_errmsg(c));
  const int64_t neg[] = {1, -4};
  CHECK_ST(kylix_config(c, neg, 2, NULL, 0, &p), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(c), "out_idx"), "errmsg=\"%s\"", kylix_errmsg(c));
  CHECK_ST(kylix_barrier(c), KYLIX_OK);

  CHECK_ST(kylix_config(c, out_idx, 4, in_idx, 5, &p), KYLIX_OK);
  CHECK_ST(kylix_reduce(p, out_vals, NULL, KYLIX_F64, KYLIX_SUM, 2), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(c), "in_vals is NULL"), "errmsg=\"%s\"", kylix_errmsg(c));
  CHECK_ST(kylix_reduce(p, out_vals, in_vals, KYLIX_F64, KYLIX_SUM, 0), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(c), "width"), "errmsg=\"%s\"", kylix_errmsg(c));
  CHECK_ST(kylix_reduce(p, out_vals, in_vals, 99, KYLIX_SUM, 2), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(c), "dtype"), "errmsg=\"%s\"", kylix_errmsg(c));
  CHECK_ST(kylix_reduce(p, out_vals, in_vals, KYLIX_F64, 65536 + KYLIX_SUM, 2), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(c), "op"), "errmsg=\"%s\"", kylix_errmsg(c));
  CHECK_ST(kylix_reduce(p, out_vals, in_vals, KYLIX_F64, KYLIX_BXOR, 2), KYLIX_ERR_ARG);
  CHECK_ST(kylix_reduce(p, out_vals, in_vals, KYLIX_F64, KYLIX_SUM, 2), KYLIX_OK);
  CHECK(memcmp(in_vals, want_sum, sizeof want_sum) == 0, "reduce after argument errors");

  /* a freed plan is refused, never a crash; free(NULL) is fine */
  CHECK_ST(kylix_plan_free(p), KYLIX_OK);
  CHECK_ST(kylix_reduce(p, out_vals, in_vals, KYLIX_F64, KYLIX_SUM, 2), KYLIX_ERR_STATE);
  CHECK(contains(kylix_errmsg(c), "plan was freed"), "errmsg=\"%s\"", kylix_errmsg(c));
  CHECK_ST(kylix_plan_free(p), KYLIX_ERR_STATE);
  CHECK_ST(kylix_reduce((kylix_plan *)(uintptr_t)0xdeadbeef, out_vals, in_vals, KYLIX_F64,
                        KYLIX_SUM, 2),
           KYLIX_ERR_ARG);

  /* config_reduce, not kept and kept */
  memset(in_vals, 0, sizeof in_vals);
  CHECK_ST(kylix_config_reduce(c, out_idx, 4, out_vals, in_idx, 5, in_vals, KYLIX_F64, KYLIX_SUM,
                               2, NULL),
           KYLIX_OK);
  CHECK(memcmp(in_vals, want_sum, sizeof want_sum) == 0, "config_reduce SUM");
  kylix_plan *p2 = NULL;
  CHECK_ST(kylix_config_reduce(c, out_idx, 4, out_vals, in_idx, 5, in_vals, KYLIX_F64, KYLIX_SUM,
                               2, &p2),
           KYLIX_OK);
  CHECK(p2 != NULL, "kept plan missing");
  memset(in_vals, 0, sizeof in_vals);
  CHECK_ST(kylix_reduce(p2, out_vals, in_vals, KYLIX_F64, KYLIX_SUM, 2), KYLIX_OK);
  CHECK(memcmp(in_vals, want_sum, sizeof want_sum) == 0, "reduce on config_reduce's plan");
  CHECK_ST(kylix_config_reduce(c, out_idx, 4, NULL, in_idx, 5, in_vals, KYLIX_F64, KYLIX_SUM, 2,
                               &p2),
           KYLIX_ERR_ARG);
  CHECK(p2 == NULL, "failed config_reduce left a plan");
  CHECK(contains(kylix_errmsg(c), "out_vals is NULL but n_out=4"), "errmsg=\"%s\"",
        kylix_errmsg(c));

  /* empty sets with NULL pointers are valid */
  kylix_plan *pe = NULL;
  CHECK_ST(kylix_config(c, NULL, 0, NULL, 0, &pe), KYLIX_OK);
  CHECK_ST(kylix_reduce(pe, NULL, NULL, KYLIX_F32, KYLIX_SUM, 3), KYLIX_OK);
  CHECK_ST(kylix_plan_free(pe), KYLIX_OK);

  /* bcast, barrier */
  char buf[8] = "kylix";
  CHECK_ST(kylix_bcast(c, buf, sizeof buf, 0), KYLIX_OK);
  CHECK(strcmp(buf, "kylix") == 0, "bcast changed the root's buffer");
  CHECK_ST(kylix_bcast(c, NULL, 8, 0), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(c), "buf is NULL"), "errmsg=\"%s\"", kylix_errmsg(c));
  CHECK_ST(kylix_bcast(c, buf, sizeof buf, 1), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(c), "root"), "errmsg=\"%s\"", kylix_errmsg(c));
  CHECK_ST(kylix_barrier(c), KYLIX_OK);
}

static void test_surface_calls(kylix_comm *c) {
  double x[2] = {1, 2};
  kylix_request *r = (kylix_request *)0x1;
  int op = -1, done = -1;
  int32_t n32 = -1;
  int64_t n64 = -1;
  kylix_comm *s = (kylix_comm *)0x1;
  /* allreduce: one rank is its own sum */
  CHECK_ST(kylix_allreduce(c, x, x, 2, KYLIX_F64, KYLIX_SUM), KYLIX_OK);
  CHECK(x[0] == 1 && x[1] == 2, "allreduce on one rank changed x: %g %g", x[0], x[1]);
  CHECK_ST(kylix_allreduce(c, x, x, 2, KYLIX_F64, KYLIX_BOR), KYLIX_ERR_ARG);
  /* mix: implemented (capi/exports_mix.go); one rank is its own mean */
  CHECK_ST(kylix_mix(c, x, 2, KYLIX_F64, 0), KYLIX_OK);
  CHECK_ST(kylix_mix(c, x, 2, KYLIX_I64, 0), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(c), "dtype"), "errmsg(c)=\"%s\"", kylix_errmsg(c));
  /* non-blocking: implemented (capi/exports_request.go) */
  CHECK_ST(kylix_iallreduce(c, x, x, 2, KYLIX_F64, KYLIX_SUM, &r), KYLIX_OK);
  CHECK(r != NULL && r != (kylix_request *)0x1, "iallreduce gave no request");
  CHECK_ST(kylix_wait(r), KYLIX_OK);
  CHECK(x[0] == 1 && x[1] == 2, "iallreduce on one rank changed x: %g %g", x[0], x[1]);
  CHECK_ST(kylix_wait(r), KYLIX_ERR_STATE); /* freed by the first wait: refused, no double free */
  CHECK(contains(kylix_errmsg(NULL), "already completed and freed"), "errmsg(NULL)=\"%s\"",
        kylix_errmsg(NULL));
  CHECK_ST(kylix_test(r, &done), KYLIX_ERR_STATE);
  CHECK(done == 0, "test of a freed request set done=%d", done);
  CHECK_ST(kylix_iallreduce(c, x, x, 2, KYLIX_F64, KYLIX_SUM, NULL), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(c), "req is NULL"), "errmsg(c)=\"%s\"", kylix_errmsg(c));
  CHECK_ST(kylix_failed_ranks(c, NULL, 0, &n32), KYLIX_OK); /* nobody failed */
  CHECK(n32 == 0, "failed_ranks n=%d", n32);
  CHECK_ST(kylix_failed_ranks(c, NULL, 0, NULL), KYLIX_ERR_ARG);
  /* shrink: implemented (capi/exports_shrink.go). It breaks the comm it shrinks, so on a
     second comm: one rank shrinks to itself; the two comms are finalized separately. */
  kylix_comm *c2 = init1(), *s2 = (kylix_comm *)0x1;
  CHECK_ST(kylix_shrink(c2, NULL), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(c2), "survivors is NULL"), "errmsg(c2)=\"%s\"", kylix_errmsg(c2));
  CHECK_ST(kylix_shrink(NULL, &s), KYLIX_ERR_ARG);
  CHECK(s == NULL, "a failed shrink left *survivors set");
  CHECK_ST(kylix_shrink(c2, &s), KYLIX_OK);
  CHECK(s != NULL && s != c2 && kylix_rank(s) == 0 && kylix_size(s) == 1, "shrunk comm: rank %d size %d",
        kylix_rank(s), kylix_size(s));
  CHECK_ST(kylix_barrier(c2), KYLIX_ERR_STATE); /* the shrunk comm is broken for good */
  CHECK_ST(kylix_shrink(c2, &s2), KYLIX_ERR_STATE);
  CHECK(s2 == NULL, "a refused shrink left *survivors set");
  CHECK_ST(kylix_finalize(c2), KYLIX_OK); /* the old comm first: the new one keeps working */
  CHECK_ST(kylix_allreduce(s, x, x, 2, KYLIX_F64, KYLIX_SUM), KYLIX_OK);
  CHECK(x[0] == 1 && x[1] == 2, "allreduce on the shrunk comm changed x: %g %g", x[0], x[1]);
  CHECK_ST(kylix_failed_ranks(s, NULL, 0, &n32), KYLIX_OK);
  CHECK(n32 == 0, "failed_ranks of the shrunk comm n=%d", n32);
  CHECK_ST(kylix_finalize(s), KYLIX_OK);
  /* resize, members, join address (capi/exports_resize.go) on a comm that is not elastic: a
     resize admits nobody; min_size above what is left times out at once, c unchanged. */
  kylix_comm *c3 = init1(), *n3 = (kylix_comm *)0x1;
  int32_t prev[4] = {-7, -7, -7, -7};
  CHECK_ST(kylix_members(c3, prev, 4, &n32), KYLIX_OK);
  CHECK(n32 == 1 && prev[0] == 0 && prev[1] == -7, "members: n=%d prev %d %d", n32, prev[0], prev[1]);
  CHECK_ST(kylix_members(c3, prev, 4, NULL), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(c3), "n is NULL"), "errmsg(c3)=\"%s\"", kylix_errmsg(c3));
  CHECK_ST(kylix_members(c3, NULL, 1, &n32), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(c3), "prev_ranks"), "errmsg(c3)=\"%s\"", kylix_errmsg(c3));
  CHECK_ST(kylix_members(c3, prev, -1, &n32), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(c3), "cap"), "errmsg(c3)=\"%s\"", kylix_errmsg(c3));
  CHECK_ST(kylix_members(c3, NULL, 0, &n32), KYLIX_ERR_ARG); /* cap 0: only *n */
  CHECK(n32 == 1, "members with cap 0: n=%d", n32);
  char ja[8] = "xxxxxxx";
  n64 = -1;
  CHECK_ST(kylix_join_address(c3, ja, sizeof ja, &n64), KYLIX_ERR_STATE);
  CHECK(contains(kylix_errmsg(c3), "not elastic"), "errmsg(c3)=\"%s\"", kylix_errmsg(c3));
  CHECK(ja[0] == 'x', "join_address wrote into buf on failure");
  CHECK_ST(kylix_join_address(c3, NULL, 4, &n64), KYLIX_ERR_ARG);
  CHECK_ST(kylix_join_address(NULL, ja, sizeof ja, &n64), KYLIX_ERR_ARG);
  CHECK_ST(kylix_resize(c3, 1, NULL), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(c3), "next is NULL"), "errmsg(c3)=\"%s\"", kylix_errmsg(c3));
  CHECK_ST(kylix_resize(c3, -1, &n3), KYLIX_ERR_ARG);
  CHECK(n3 == NULL && contains(kylix_errmsg(c3), "min_size"), "errmsg(c3)=\"%s\"", kylix_errmsg(c3));
  CHECK_ST(kylix_resize(NULL, 0, &n3), KYLIX_ERR_ARG);
  CHECK_ST(kylix_resize(c3, 2, &n3), KYLIX_ERR_TIMEOUT); /* nobody can join */
  CHECK(n3 == NULL && contains(kylix_errmsg(c3), "not elastic"), "errmsg(c3)=\"%s\"", kylix_errmsg(c3));
  CHECK_ST(kylix_allreduce(c3, x, x, 2, KYLIX_F64, KYLIX_SUM), KYLIX_OK); /* c3 unchanged */
  CHECK_ST(kylix_resize(c3, 1, &n3), KYLIX_OK);
  CHECK(n3 != NULL && kylix_size(n3) == 1, "resized comm");
  CHECK_ST(kylix_barrier(c3), KYLIX_ERR_STATE);
  CHECK_ST(kylix_members(n3, prev, 4, &n32), KYLIX_OK);
  CHECK(n32 == 1 && prev[0] == 0, "members of the resized comm: n=%d prev %d", n32, prev[0]);
  CHECK_ST(kylix_finalize(c3), KYLIX_OK);
  CHECK_ST(kylix_finalize(n3), KYLIX_OK);
  CHECK_ST(kylix_stats_json(c, NULL, 0, &n64), KYLIX_ERR_ARG); /* cap 0: only *needed */
  CHECK(n64 > 2, "stats_json needed=%lld", (long long)n64);
  CHECK_ST(kylix_stats_reset(c), KYLIX_OK);
  kylix_plan *p = NULL;
  const int64_t i1[] = {1};
  CHECK_ST(kylix_config(c, i1, 1, i1, 1, &p), KYLIX_OK);
  double y = -1;
  CHECK_ST(kylix_ireduce(p, x, &y, KYLIX_F64, KYLIX_SUM, 1, &r), KYLIX_OK);
  CHECK_ST(kylix_plan_free(p), KYLIX_OK); /* the request in flight still completes */
  for (done = 0; !done;) {
    CHECK_ST(kylix_test(r, &done), KYLIX_OK);
    if (!done) usleep(200);
  }
  CHECK(y == 1, "ireduce gave %g, want 1", y);
  CHECK_ST(kylix_test(r, &done), KYLIX_ERR_STATE); /* freed when done was set */
  CHECK_ST(kylix_ireduce(p, x, &y, KYLIX_F64, KYLIX_SUM, 1, &r), KYLIX_ERR_STATE);
  CHECK(r == NULL, "failed ireduce left a request");
  CHECK_ST(kylix_wait(NULL), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(NULL), "kylix_wait: r is NULL"), "errmsg(NULL)=\"%s\"",
        kylix_errmsg(NULL));
  CHECK_ST(kylix_test(NULL, &done), KYLIX_ERR_ARG);
  CHECK_ST(kylix_wait((kylix_request *)(uintptr_t)0x1234), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(NULL), "not a kylix_request"), "errmsg(NULL)=\"%s\"",
        kylix_errmsg(NULL));
  CHECK_ST(kylix_op_create(NULL, NULL, &op), KYLIX_ERR_ARG); /* implemented: NULL fn */
  CHECK(op == 0 && contains(kylix_errmsg(NULL), "fn is NULL"), "op=%d errmsg(NULL)=\"%s\"", op,
        kylix_errmsg(NULL));
  CHECK_ST(kylix_barrier(c), KYLIX_OK);
}

static void test_plan_degrees(void) {
  int32_t d[8], layers = -1;
  CHECK_ST(kylix_plan_degrees(1000000, 0.01, 64, 1.0, 1 << 16, 4, d, 8, &layers), KYLIX_OK);
  CHECK(layers >= 1 && layers <= 6, "layers=%d", layers);
  long prod = 1;
  for (int i = 0; i < layers && i < 8; i++) {
    CHECK(d[i] >= 2, "degree %d = %d", i, d[i]);
    prod *= d[i];
  }
  CHECK(prod == 64, "degrees multiply to %ld", prod);
  if (layers > 1) {
    int32_t small[1], l2 = -1;
    CHECK_ST(kylix_plan_degrees(1000000, 0.01, 64, 1.0, 1 << 16, 4, small, 1, &l2),
             KYLIX_ERR_ARG);
    CHECK(l2 == layers, "too-small cap still reports layers: %d vs %d", l2, layers);
    CHECK(contains(kylix_errmsg(NULL), "cap"), "errmsg(NULL)=\"%s\"", kylix_errmsg(NULL));
  }
  CHECK_ST(kylix_plan_degrees(1000000, 0.01, 1, 1.0, 1 << 16, 4, d, 8, &layers), KYLIX_OK);
  CHECK_ST(kylix_plan_degrees(1000000, 0.01, 64, 1.0, 1 << 16, 4, d, 8, NULL), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(NULL), "layers"), "errmsg(NULL)=\"%s\"", kylix_errmsg(NULL));
  CHECK_ST(kylix_plan_degrees(1000000, 0.01, 64, 1.0, 1 << 16, 4, NULL, 8, &layers),
           KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(NULL), "degrees"), "errmsg(NULL)=\"%s\"", kylix_errmsg(NULL));
  CHECK_ST(kylix_plan_degrees(1000000, 1.5, 64, 1.0, 1 << 16, 4, d, 8, &layers), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(NULL), "density"), "errmsg(NULL)=\"%s\"", kylix_errmsg(NULL));
  CHECK_ST(kylix_plan_degrees(1000000, 0.01, 0, 1.0, 1 << 16, 4, d, 8, &layers), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(NULL), "ranks"), "errmsg(NULL)=\"%s\"", kylix_errmsg(NULL));
}

static void test_finalize(kylix_comm *c) {
  kylix_plan *p = NULL;
  const int64_t i1[] = {1};
  CHECK_ST(kylix_config(c, i1, 1, i1, 1, &p), KYLIX_OK);
  double rv = 0;
  kylix_request *rq = NULL;
  CHECK_ST(kylix_iallreduce(c, i1, &rv, 1, KYLIX_I64, KYLIX_SUM, &rq), KYLIX_OK);
  CHECK_ST(kylix_finalize(c), KYLIX_OK); /* finishes the request in flight, then frees it */
  CHECK(memcmp(&rv, i1, sizeof rv) == 0, "request in flight at finalize did not complete");
  CHECK_ST(kylix_wait(rq), KYLIX_ERR_STATE);
  /* the comm and its plans are gone: refused, never a crash */
  CHECK_ST(kylix_barrier(c), KYLIX_ERR_STATE);
  CHECK(contains(kylix_errmsg(NULL), "finalized"), "errmsg(NULL)=\"%s\"", kylix_errmsg(NULL));
  CHECK(contains(kylix_errmsg(c), "finalized"), "errmsg(c)=\"%s\"", kylix_errmsg(c));
  CHECK(kylix_rank(c) == -1, "rank of a finalized comm");
  double v = 1, w = 0;
  CHECK_ST(kylix_reduce(p, &v, &w, KYLIX_F64, KYLIX_SUM, 1), KYLIX_ERR_STATE);
  CHECK(contains(kylix_errmsg(NULL), "plan was freed"), "errmsg(NULL)=\"%s\"", kylix_errmsg(NULL));
  CHECK_ST(kylix_plan_free(p), KYLIX_ERR_STATE);
  CHECK_ST(kylix_finalize(c), KYLIX_ERR_STATE);
}

static int run_basic(void) {
  test_version_strerror();
  test_init_errors();
  kylix_comm *c = init1();
  if (c == NULL) return 1;
  test_sparse(c);
  test_surface_calls(c);
  test_plan_degrees();
  test_finalize(c);
  /* two comms at once are independent */
  kylix_comm *a = init1(), *b = init1();
  CHECK(a != b, "two comms share a handle");
  CHECK_ST(kylix_config(a, NULL, -1, NULL, 0, &(kylix_plan *){NULL}), KYLIX_ERR_ARG);
  CHECK(contains(kylix_errmsg(a), "n_out") && kylix_errmsg(b)[0] == 0,
        "errmsg(a)=\"%s\" errmsg(b)=\"%s\"", kylix_errmsg(a), kylix_errmsg(b));
  CHECK_ST(kylix_finalize(a), KYLIX_OK);
  CHECK_ST(kylix_barrier(b), KYLIX_OK);
  CHECK_ST(kylix_finalize(b), KYLIX_OK);
  return failures;
}

static int run_fork(void) {
  kylix_comm *c = init1();
  if (c == NULL) return 1;
  CHECK_ST(kylix_barrier(c), KYLIX_OK);
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    return 1;
  }
  if (pid == 0) {
    alarm(10); /* a hang in the child is the bug this guards against */
    int bad = 0;
    int st = kylix_barrier(c);
    if (st != KYLIX_ERR_STATE) bad++, fprintf(stderr, "child: barrier returned %d\n", st);
    const char *m = kylix_errmsg(NULL);
    if (!contains(m, "spawn") || !contains(m, "forkserver"))
      bad++, fprintf(stderr, "child: errmsg(NULL)=\"%s\"\n", m);
    if (!contains(kylix_errmsg(c), "fork")) bad++, fprintf(stderr, "child: errmsg(c)\n");
    kylix_comm *c2 = (kylix_comm *)0x1;
    if (kylix_init("rank=0;size=1", &c2) != KYLIX_ERR_STATE || c2 != NULL)
      bad++, fprintf(stderr, "child: init after fork did not fail cleanly\n");
    if (kylix_rank(c) != -1) bad++, fprintf(stderr, "child: rank\n");
    if (kylix_finalize(c) != KYLIX_ERR_STATE) bad++, fprintf(stderr, "child: finalize\n");
    if (kylix_version() != KYLIX_VERSION) bad++, fprintf(stderr, "child: version\n");
    if (strcmp(kylix_strerror(KYLIX_OK), "success") != 0) bad++, fprintf(stderr, "child: strerror\n");
    _exit(bad ? 3 : 0);
  }
  int ws = 0;
  CHECK(waitpid(pid, &ws, 0) == pid, "waitpid");
  CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "child: %s %d",
        WIFSIGNALED(ws) ? "killed by signal" : "exit", WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws));
  /* the parent is unaffected */
  CHECK_ST(kylix_barrier(c), KYLIX_OK);
  CHECK_ST(kylix_finalize(c), KYLIX_OK);
  return failures;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s basic|fork\n", argv[0]);
    return 2;
  }
  int bad = strcmp(argv[1], "fork") == 0 ? run_fork() : run_basic();
  if (bad) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("PASS\n");
  return 0;
}
