/*
 * badargs.c - bad arguments get KYLIX_ERR_ARG and a message naming the
 * argument, never a crash, and the comm keeps working afterwards.
 *
 * usage: badargs
 *
 * Every rank makes the same bad calls in the same order. After each bad
 * collective call a correct reduce must succeed with the right values (the
 * header: "a rank whose arguments are rejected still takes part ... all stay
 * in step"). At the end the comm is finalized and used again: KYLIX_ERR_STATE.
 */
#include "check.h"

static kylix_plan *g_plan; /* a correct plan for the "still works" checks */
static int g_checks = 0;
static int64_t good_out[3] = {5, 7, 7};      /* 7 twice: combined with the op */
static int64_t good_in[3] = {7, 1000, 5};    /* 1000: nobody contributes */

/* expect: status want, and a non-empty message containing one of the needles
   (NULL-terminated list, case-insensitive). c is the comm whose errmsg to read
   (NULL: the thread's message). */
static void expect_msg(const char *what, int st, int want, const kylix_comm *c, const char *const *needles) {
  g_checks++;
  if (st != want) {
    FAILF("%s: returned %s (%d), want %s; errmsg: %s", what, status_name(st), st, status_name(want),
          errmsg_of((kylix_comm *)c));
    return;
  }
  const char *m = kylix_errmsg(c);
  if (!m || !*m) {
    FAILF("%s: %s but kylix_errmsg is %s", what, status_name(st), m ? "empty" : "NULL");
    return;
  }
  if (!needles) return;
  for (const char *const *n = needles; *n; n++)
    if (contains_ci(m, *n)) return;
  char list[256] = "";
  for (const char *const *n = needles; *n; n++) {
    strncat(list, *n, sizeof list - strlen(list) - 3);
    if (n[1]) strncat(list, "|", sizeof list - strlen(list) - 1);
  }
  FAILF("%s: message does not name the argument (want one of %s): \"%s\"", what, list, m);
}

#define NEEDLES(...) ((const char *const[]){__VA_ARGS__, NULL})
#define EXPECT_ARG(what, call, ...) expect_msg(what, (call), KYLIX_ERR_ARG, g_comm, NEEDLES(__VA_ARGS__))
#define EXPECT_ARG_NULLCOMM(what, call, ...) expect_msg(what, (call), KYLIX_ERR_ARG, NULL, NEEDLES(__VA_ARGS__))

/* A correct reduce: every rank contributes rank+1 at 5 and twice at 7. */
static void still_works(const char *after) {
  int64_t out[3], in[3];
  for (int k = 0; k < 3; k++) out[k] = g_rank + 1;
  memset(in, 0xCD, sizeof in);
  int st = kylix_reduce(g_plan, out, in, KYLIX_I64, KYLIX_SUM, 1);
  if (st != KYLIX_OK) {
    FAILF("after %s: a correct kylix_reduce returned %s: %s", after, status_name(st), errmsg_of(g_comm));
    say("DONE", "fails=%d (aborted: the comm is out of step)", g_fail);
    exit(1);
  }
  int64_t s = (int64_t)g_size * (g_size + 1) / 2;
  if (in[0] != 2 * s || in[1] != 0 || in[2] != s)
    FAILF("after %s: correct reduce gave {%" PRId64 ",%" PRId64 ",%" PRId64 "}, want {%" PRId64 ",0,%" PRId64 "}",
          after, in[0], in[1], in[2], 2 * s, s);
}

int main(void) {
  check_init("badargs", 100);
  int f0;

  /* ---- kylix_init with bad options: local, fails before any communication */
  {
    kylix_comm *c2 = (kylix_comm *)&f0; /* must be set to NULL on failure */
    EXPECT_ARG_NULLCOMM("kylix_init unknown key", kylix_init("bogus_key_xyz=1", &c2), "bogus_key_xyz");
    CHECK(c2 == NULL, "kylix_init failed but did not set *out to NULL");
    EXPECT_ARG_NULLCOMM("kylix_init timeout_ms=abc", kylix_init("timeout_ms=abc", &c2), "timeout_ms");
    EXPECT_ARG_NULLCOMM("kylix_init not key=value", kylix_init("justaword", &c2), "justaword");
    EXPECT_ARG_NULLCOMM("kylix_init degrees=3x7", kylix_init("degrees=3x7", &c2), "degrees");
    EXPECT_ARG_NULLCOMM("kylix_init compress=zip", kylix_init("compress=zip", &c2), "compress");
    EXPECT_ARG_NULLCOMM("kylix_init NULL out", kylix_init("", NULL), "out", "null", "comm");
  }

  /* ---- local calls */
  {
    int v = kylix_version();
    CHECK(v == KYLIX_VERSION, "kylix_version()=%d, header says %d", v, KYLIX_VERSION);
    for (int s = KYLIX_OK; s <= KYLIX_ERR_INTERNAL; s++) {
      const char *m = kylix_strerror(s);
      CHECK(m && *m, "kylix_strerror(%d) is %s", s, m ? "empty" : "NULL");
      for (int t = KYLIX_OK; t < s; t++)
        CHECK(!m || !kylix_strerror(t) || strcmp(m, kylix_strerror(t)) != 0, "kylix_strerror(%d) == kylix_strerror(%d)", s, t);
    }
    const char *u = kylix_strerror(12345), *u2 = kylix_strerror(-1);
    CHECK(u && *u && u2 && *u2, "kylix_strerror of an unknown status is NULL or empty");
    const char *e = kylix_errmsg(NULL);
    CHECK(e != NULL, "kylix_errmsg(NULL) returned NULL");
    CHECK(kylix_rank(NULL) == -1 && kylix_size(NULL) == -1, "kylix_rank/size(NULL) are not -1");
    CHECK_ST(kylix_finalize(NULL), KYLIX_OK);
    CHECK_ST(kylix_plan_free(NULL), KYLIX_OK);
    int32_t deg[16], layers = -1;
    EXPECT_ARG_NULLCOMM("kylix_plan_degrees cap=0", kylix_plan_degrees(1000000, 0.01, 8, 1.0, 1 << 20, 4, NULL, 0, &layers), "cap");
    CHECK(layers >= 1, "kylix_plan_degrees with cap=0 did not report the number of layers (%d)", layers);
    int st = kylix_plan_degrees(1000000, 0.01, 8, 1.0, 1 << 20, 4, deg, 16, &layers);
    CHECK(st == KYLIX_OK, "kylix_plan_degrees returned %s: %s", status_name(st), errmsg_of(NULL));
    if (st == KYLIX_OK) {
      int64_t prod = 1;
      for (int i = 0; i < layers && i < 16; i++) prod *= deg[i];
      CHECK(prod == 8, "kylix_plan_degrees for 8 ranks: degrees multiply to %" PRId64, prod);
    }
    EXPECT_ARG_NULLCOMM("kylix_plan_degrees ranks=0", kylix_plan_degrees(1000, 0.1, 0, 1.0, 1 << 20, 4, deg, 16, &layers), "ranks");
    EXPECT_ARG_NULLCOMM("kylix_plan_degrees layers=NULL", kylix_plan_degrees(1000, 0.1, 4, 1.0, 1 << 20, 4, deg, 16, NULL), "layers");
  }

  kylix_comm *c = init_comm("timeout_ms=20000");
  double t0 = now_s();
  MUST_OK(kylix_config(c, good_out, 3, good_in, 3, &g_plan));
  still_works("config");

  int64_t neg_out[3] = {5, -5, 7}, neg_in[2] = {1, -1}, ok_in[2] = {1, 2};
  int64_t vals[8] = {0}, res[8];
  kylix_plan *p;

  /* ---- kylix_config */
  f0 = g_fail;
  p = (kylix_plan *)&f0;
  EXPECT_ARG("config negative out index", kylix_config(c, neg_out, 3, ok_in, 2, &p), "out_idx", "index", "negative");
  CHECK(p == NULL, "kylix_config failed but did not set *plan to NULL");
  still_works("config negative out index");
  EXPECT_ARG("config negative in index", kylix_config(c, good_out, 3, neg_in, 2, &p), "in_idx", "index", "negative");
  still_works("config negative in index");
  EXPECT_ARG("config NULL out_idx n_out=5", kylix_config(c, NULL, 5, ok_in, 2, &p), "out_idx", "null");
  still_works("config NULL out_idx");
  EXPECT_ARG("config NULL in_idx n_in=2", kylix_config(c, good_out, 3, NULL, 2, &p), "in_idx", "null");
  still_works("config NULL in_idx");
  EXPECT_ARG("config n_out=-1", kylix_config(c, good_out, -1, ok_in, 2, &p), "n_out", "count", "negative");
  still_works("config n_out=-1");
  EXPECT_ARG("config NULL plan", kylix_config(c, good_out, 3, ok_in, 2, NULL), "plan");
  still_works("config NULL plan");
  EXPECT_ARG_NULLCOMM("config NULL comm", kylix_config(NULL, good_out, 3, ok_in, 2, &p), "comm", "null", "handle");
  if (g_fail == f0) PASS("config: negative indices, NULL with n>0, negative count, NULL plan, NULL comm -> KYLIX_ERR_ARG naming the argument; comm still works");

  /* ---- kylix_reduce */
  f0 = g_fail;
  EXPECT_ARG("reduce width=0", kylix_reduce(g_plan, vals, res, KYLIX_I64, KYLIX_SUM, 0), "width");
  still_works("reduce width=0");
  EXPECT_ARG("reduce width=-3", kylix_reduce(g_plan, vals, res, KYLIX_I64, KYLIX_SUM, -3), "width");
  still_works("reduce width=-3");
  EXPECT_ARG("reduce BOR on F32", kylix_reduce(g_plan, vals, res, KYLIX_F32, KYLIX_BOR, 1), "op", "bor");
  still_works("reduce BOR on F32");
  EXPECT_ARG("reduce BAND on F64", kylix_reduce(g_plan, vals, res, KYLIX_F64, KYLIX_BAND, 1), "op", "band");
  still_works("reduce BAND on F64");
  EXPECT_ARG("reduce BXOR on F32", kylix_reduce(g_plan, vals, res, KYLIX_F32, KYLIX_BXOR, 1), "op", "bxor");
  still_works("reduce BXOR on F32");
  EXPECT_ARG("reduce dtype=99", kylix_reduce(g_plan, vals, res, 99, KYLIX_SUM, 1), "dtype");
  still_works("reduce dtype=99");
  EXPECT_ARG("reduce dtype=0", kylix_reduce(g_plan, vals, res, 0, KYLIX_SUM, 1), "dtype");
  still_works("reduce dtype=0");
  EXPECT_ARG("reduce op=99", kylix_reduce(g_plan, vals, res, KYLIX_I64, 99, 1), "op");
  still_works("reduce op=99");
  EXPECT_ARG("reduce op=0", kylix_reduce(g_plan, vals, res, KYLIX_I64, 0, 1), "op");
  still_works("reduce op=0");
  EXPECT_ARG("reduce NULL out_vals", kylix_reduce(g_plan, NULL, res, KYLIX_I64, KYLIX_SUM, 1), "out_vals", "null");
  still_works("reduce NULL out_vals");
  EXPECT_ARG("reduce NULL in_vals", kylix_reduce(g_plan, vals, NULL, KYLIX_I64, KYLIX_SUM, 1), "in_vals", "null");
  still_works("reduce NULL in_vals");
  EXPECT_ARG_NULLCOMM("reduce NULL plan", kylix_reduce(NULL, vals, res, KYLIX_I64, KYLIX_SUM, 1), "plan", "null", "handle");
  if (g_fail == f0) PASS("reduce: width 0/-3, bit ops on floats, dtype 0/99, op 0/99, NULL buffers, NULL plan -> KYLIX_ERR_ARG naming the argument; comm still works");

  /* ---- kylix_config_reduce */
  f0 = g_fail;
  EXPECT_ARG("config_reduce negative out index", kylix_config_reduce(c, neg_out, 3, vals, ok_in, 2, res, KYLIX_I64, KYLIX_SUM, 1, NULL), "out_idx", "index", "negative");
  still_works("config_reduce negative out index");
  EXPECT_ARG("config_reduce width=0", kylix_config_reduce(c, good_out, 3, vals, ok_in, 2, res, KYLIX_I64, KYLIX_SUM, 0, NULL), "width");
  still_works("config_reduce width=0");
  EXPECT_ARG("config_reduce BXOR on F64", kylix_config_reduce(c, good_out, 3, vals, ok_in, 2, res, KYLIX_F64, KYLIX_BXOR, 1, NULL), "op", "bxor");
  still_works("config_reduce BXOR on F64");
  if (g_fail == f0) PASS("config_reduce: negative index, width 0, BXOR on F64 -> KYLIX_ERR_ARG; comm still works");

  /* ---- dense collectives */
  f0 = g_fail;
  EXPECT_ARG("allreduce count=-1", kylix_allreduce(c, vals, res, -1, KYLIX_I64, KYLIX_SUM), "count", "negative");
  still_works("allreduce count=-1");
  EXPECT_ARG("allreduce BOR on F32", kylix_allreduce(c, vals, res, 2, KYLIX_F32, KYLIX_BOR), "op", "bor");
  still_works("allreduce BOR on F32");
  EXPECT_ARG("allreduce dtype=99", kylix_allreduce(c, vals, res, 2, 99, KYLIX_SUM), "dtype");
  still_works("allreduce dtype=99");
  EXPECT_ARG("allreduce NULL send", kylix_allreduce(c, NULL, res, 2, KYLIX_I64, KYLIX_SUM), "send", "null");
  still_works("allreduce NULL send");
  EXPECT_ARG("bcast root=size", kylix_bcast(c, vals, 8, g_size), "root");
  still_works("bcast root=size");
  EXPECT_ARG("bcast root=-1", kylix_bcast(c, vals, 8, -1), "root");
  still_works("bcast root=-1");
  EXPECT_ARG("bcast bytes=-1", kylix_bcast(c, vals, -1, 0), "bytes", "negative");
  still_works("bcast bytes=-1");
  EXPECT_ARG("bcast NULL buf bytes=10", kylix_bcast(c, NULL, 10, 0), "buf", "null");
  still_works("bcast NULL buf");
  EXPECT_ARG_NULLCOMM("barrier NULL comm", kylix_barrier(NULL), "comm", "null", "handle");
  if (g_fail == f0) PASS("dense: negative count, bit op on float, bad dtype, NULL send, bad root, negative bytes, NULL buf -> KYLIX_ERR_ARG; comm still works");

  /* ---- stats_json: too small a buffer is ARG with *needed set, then it fits */
  {
    f0 = g_fail;
    int64_t needed = -1;
    char tiny[2] = {'x', 'y'};
    EXPECT_ARG("stats_json cap=2", kylix_stats_json(c, tiny, 2, &needed), "cap", "small", "buf");
    CHECK(needed > 2, "stats_json did not report the size needed (%" PRId64 ")", needed);
    CHECK(tiny[0] == 'x' && tiny[1] == 'y', "stats_json wrote into a buffer that was too small");
    if (needed > 2 && needed < (1 << 24)) {
      char *buf = xmalloc((size_t)needed + 16);
      memset(buf, 0x7F, (size_t)needed + 16);
      int64_t n2 = -1;
      int st = kylix_stats_json(c, buf, needed, &n2);
      CHECK(st == KYLIX_OK, "stats_json with cap=needed returned %s: %s", status_name(st), errmsg_of(c));
      if (st == KYLIX_OK) {
        CHECK(buf[0] == '{' && memchr(buf, 0, (size_t)needed) != NULL, "stats_json is not a NUL-terminated object: %.60s", buf);
        CHECK(buf[needed] == 0x7F, "stats_json wrote past cap");
      }
      free(buf);
    }
    if (g_fail == f0) PASS("stats_json: small cap -> KYLIX_ERR_ARG with *needed; then a JSON object");
  }

  /* ---- handles: freed plan, finalized comm -> KYLIX_ERR_STATE, never a crash */
  f0 = g_fail;
  {
    kylix_plan *q = NULL;
    MUST_OK(kylix_config(c, good_out, 3, good_in, 3, &q));
    MUST_OK(kylix_plan_free(q));
    CHECK_ST(kylix_plan_free(q), KYLIX_ERR_STATE);
    CHECK_ST(kylix_reduce(q, vals, res, KYLIX_I64, KYLIX_SUM, 1), KYLIX_ERR_STATE);
    still_works("using a freed plan");
  }
  /* ---- kylix_reject: the last rank gives up its turn with a reason; the others' reduce fails
     with KYLIX_ERR_MISMATCH naming it and the reason; the next collective works on every rank */
  f0 = g_fail;
  {
    int last = g_size - 1;
    if (g_size > 1) {
      if (g_rank == last) {
        CHECK_ST(kylix_reject(c, "in_vals is 3 short (found by the binding)"), KYLIX_OK);
      } else {
        int st = kylix_reduce(g_plan, vals, res, KYLIX_I64, KYLIX_SUM, 1);
        char rankname[32];
        snprintf(rankname, sizeof rankname, "rank %d", last);
        expect_msg("reduce against a kylix_reject", st, KYLIX_ERR_MISMATCH, c,
                   NEEDLES("3 short (found by the binding)"));
        CHECK(contains_ci(errmsg_of(c), rankname), "kylix_reject's peers: message does not name %s: %s", rankname,
              errmsg_of(c));
      }
      still_works("kylix_reject");
    }
    CHECK_ST(kylix_reject(NULL, "x"), KYLIX_ERR_ARG);
    if (g_size > 1) { /* a NULL reason is allowed */
      if (g_rank == 0)
        CHECK_ST(kylix_reject(c, NULL), KYLIX_OK);
      else
        expect_msg("barrier against kylix_reject(NULL)", kylix_barrier(c), KYLIX_ERR_MISMATCH, c,
                   NEEDLES("no reason given"));
      still_works("kylix_reject(c, NULL)");
    }
  }
  if (g_fail == f0) PASS("kylix_reject: peers get MISMATCH naming the rank and reason; the comm goes on");

  MUST_OK(kylix_barrier(c));
  MUST_OK(kylix_finalize(c));
  g_comm = NULL;
  CHECK_ST(kylix_barrier(c), KYLIX_ERR_STATE);
  CHECK_ST(kylix_reduce(g_plan, vals, res, KYLIX_I64, KYLIX_SUM, 1), KYLIX_ERR_STATE);
  CHECK_ST(kylix_plan_free(g_plan), KYLIX_ERR_STATE);
  CHECK_ST(kylix_finalize(c), KYLIX_ERR_STATE);
  CHECK(kylix_rank(c) == -1, "kylix_rank of a finalized comm is %d", kylix_rank(c));
  const char *m = kylix_errmsg(c);
  CHECK(m != NULL, "kylix_errmsg of a finalized comm is NULL");
  if (g_fail == f0) PASS("handles: freed plan and finalized comm -> KYLIX_ERR_STATE");

  INFO("badargs: %d bad calls checked in %.2f s", g_checks, now_s() - t0);
  return check_finish();
}
