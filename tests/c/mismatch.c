/*
 * mismatch.c - ranks that disagree get KYLIX_ERR_MISMATCH, fast, on every rank.
 *
 * usage: mismatch SCENARIO|all [ODD_RANK]
 *
 * One rank (ODD_RANK, default 1; 0 when size is 1) makes a different call than
 * the others. timeout_ms is 20000, so a failure that comes from a timeout
 * instead of detection takes 20 s; every rank must return in under 5 s with
 * KYLIX_ERR_MISMATCH (the odd rank in scenario badarg gets KYLIX_ERR_ARG, as
 * documented in kylix.h). Afterwards a barrier and a correct reduce must
 * succeed with the right values: a mismatch does not break the comm.
 *
 * Scenarios: barrier_vs_reduce width op dtype plan bcast_vs_allreduce
 * bcast_root bcast_bytes allreduce_count allreduce_dtype config_vs_reduce
 * badarg barrier_vs_bcast, or all (every one in turn, recovering in between).
 */
#include "check.h"

#define LIMIT_S 5.0

static kylix_comm *c;
static kylix_plan *pa, *pb;
static int odd;
static int64_t a_out[2] = {3, 11}, a_in[3] = {11, 3, 99};
static int64_t b_out[1] = {4}, b_in[2] = {4, 5};

/* in "all" order: the bcast argument checks last, so that the others run in any case */
static const char *names[] = {"barrier_vs_reduce", "width", "op", "dtype", "plan", "bcast_vs_allreduce",
                              "allreduce_count", "allreduce_dtype", "config_vs_reduce", "badarg",
                              "bcast_bytes", "bcast_root", "barrier_vs_bcast", NULL};

/* each rank contributes rank+1 to 3 and 11 */
static int reduce_a(int dtype, int op, int width, double *res) {
  double vals[2 * 4];
  for (int k = 0; k < 2 * width; k++) vals[k] = g_rank + 1;
  if (dtype == KYLIX_F64) return kylix_reduce(pa, vals, res, dtype, op, width);
  float fv[8];
  for (int k = 0; k < 2 * width; k++) fv[k] = (float)vals[k];
  return kylix_reduce(pa, fv, res, dtype, op, width);
}

static int run(const char *s) {
  int me_odd = g_rank == odd;
  double res[64];
  char buf[256];
  memset(buf, g_rank, sizeof buf);
  if (!strcmp(s, "barrier_vs_reduce"))
    return me_odd ? kylix_barrier(c) : reduce_a(KYLIX_F64, KYLIX_SUM, 1, res);
  if (!strcmp(s, "width")) return reduce_a(KYLIX_F64, KYLIX_SUM, me_odd ? 2 : 1, res);
  if (!strcmp(s, "op")) return reduce_a(KYLIX_F64, me_odd ? KYLIX_MAX : KYLIX_SUM, 1, res);
  if (!strcmp(s, "dtype")) { /* same element size: F32 vs I32 */
    int32_t iv[2] = {1, 2};
    float fv[2] = {1, 2};
    return me_odd ? kylix_reduce(pa, iv, res, KYLIX_I32, KYLIX_SUM, 1) : kylix_reduce(pa, fv, res, KYLIX_F32, KYLIX_SUM, 1);
  }
  if (!strcmp(s, "plan")) { /* same dtype, op, width; another plan */
    double v[2] = {1, 1};
    return kylix_reduce(me_odd ? pb : pa, v, res, KYLIX_F64, KYLIX_SUM, 1);
  }
  if (!strcmp(s, "bcast_vs_allreduce"))
    return me_odd ? kylix_bcast(c, buf, 100, 0) : kylix_allreduce(c, buf, buf, 25, KYLIX_F32, KYLIX_SUM);
  if (!strcmp(s, "bcast_root")) return kylix_bcast(c, buf, 100, me_odd ? (odd == 0 ? 1 : odd) : 0);
  if (!strcmp(s, "bcast_bytes")) return kylix_bcast(c, buf, me_odd ? 200 : 100, 0);
  if (!strcmp(s, "allreduce_count")) {
    double v[20] = {0};
    return kylix_allreduce(c, v, res, me_odd ? 20 : 10, KYLIX_F64, KYLIX_SUM);
  }
  if (!strcmp(s, "allreduce_dtype")) {
    double v[10] = {0};
    return kylix_allreduce(c, v, res, 10, me_odd ? KYLIX_I64 : KYLIX_F64, KYLIX_SUM);
  }
  if (!strcmp(s, "config_vs_reduce")) {
    if (me_odd) {
      kylix_plan *q = NULL;
      int st = kylix_config(c, b_out, 1, b_in, 2, &q);
      if (st == KYLIX_OK) kylix_plan_free(q);
      return st;
    }
    return reduce_a(KYLIX_F64, KYLIX_SUM, 1, res);
  }
  if (!strcmp(s, "barrier_vs_bcast")) /* the odd rank is the root the others wait for */
    return me_odd ? kylix_bcast(c, buf, 100, odd) : kylix_barrier(c);
  if (!strcmp(s, "badarg")) return reduce_a(KYLIX_F64, KYLIX_SUM, me_odd ? 0 : 1, res);
  fprintf(stderr, "unknown scenario %s\n", s);
  exit(2);
}

/* a barrier and a correct reduce must work after the mismatch */
static void recover(const char *s) {
  int st = kylix_barrier(c);
  if (st != KYLIX_OK) {
    FAILF("%s: barrier after the mismatch returned %s: %s", s, status_name(st), errmsg_of(c));
    say("DONE", "fails=%d (aborted)", g_fail);
    exit(1);
  }
  double res[3];
  memset(res, 0, sizeof res);
  st = reduce_a(KYLIX_F64, KYLIX_SUM, 1, res);
  double want = (double)g_size * (g_size + 1) / 2;
  if (st != KYLIX_OK) {
    FAILF("%s: correct reduce after the mismatch returned %s: %s", s, status_name(st), errmsg_of(c));
    say("DONE", "fails=%d (aborted)", g_fail);
    exit(1);
  }
  CHECK(res[0] == want && res[1] == want && res[2] == 0, "%s: reduce after the mismatch gave %g %g %g, want %g %g 0", s, res[0], res[1], res[2], want, want);
}

static void scenario(const char *s) {
  int f0 = g_fail;
  double t0 = now_s();
  int st = run(s);
  double dt = now_s() - t0;
  int want = KYLIX_ERR_MISMATCH;
  if (!strcmp(s, "badarg") && g_rank == odd) want = KYLIX_ERR_ARG;
  const char *m = errmsg_of(c);
  if (st != want)
    FAILF("%s: %s returned %s after %.2f s, want %s; errmsg: %s", s, g_rank == odd ? "the odd rank" : "a conforming rank",
          status_name(st), dt, status_name(want), st ? m : "");
  else
    CHECK(*m, "%s: %s but errmsg is empty", s, status_name(st));
  CHECK(dt < LIMIT_S, "%s: took %.2f s to fail (limit %.0f s; timeout_ms is 20000)", s, dt, LIMIT_S);
  INFO("%s: %s after %.3f s: %s", s, status_name(st), dt, st ? m : "");
  recover(s);
  if (g_fail == f0) PASS("mismatch %s: %s in %.3f s, then a correct reduce works", s, status_name(st), dt);
}

int main(int argc, char **argv) {
  check_init("mismatch", 110);
  if (argc < 2) {
    fprintf(stderr, "usage: %s SCENARIO|all [ODD_RANK]\n", argv[0]);
    return 2;
  }
  c = init_comm("timeout_ms=20000");
  odd = argc > 2 ? atoi(argv[2]) : (g_size > 1 ? 1 : 0);
  if (odd >= g_size) odd = g_size - 1;
  MUST_OK(kylix_config(c, a_out, 2, a_in, 3, &pa));
  MUST_OK(kylix_config(c, b_out, 1, b_in, 2, &pb));
  recover("setup");
  if (!strcmp(argv[1], "all")) {
    for (const char **s = names; *s; s++) {
      if (g_size == 1 && strcmp(*s, "badarg") != 0) continue; /* one rank cannot disagree with itself */
      scenario(*s);
    }
  } else {
    scenario(argv[1]);
  }
  MUST_OK(kylix_plan_free(pa));
  MUST_OK(kylix_plan_free(pb));
  MUST_OK(kylix_finalize(c));
  return check_finish();
}
