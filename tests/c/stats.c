/*
 * stats.c - kylix_stats_json and kylix_stats_reset through the C ABI.
 *
 * usage: stats DEGREES   (the degrees option kylixrun was given, e.g. 2x2)
 *
 * One plan, reduced REPS times, then: the size protocol (cap 0 -> ARG with
 * *needed, cap = needed - 1 -> ARG and nothing written, cap = needed -> the
 * object, NUL-terminated, nothing written past it), the documented fields,
 * per-layer figures that agree with each other (reduce_down bytes = REPS x
 * value bytes x out_keys_sent), a reset to zero, counting again after it, and
 * bad arguments.
 */
#include "check.h"

#define REPS 3
#define WIDTH 2

/* stats: the JSON of c in a fresh malloc'd string (exit on failure). */
static char *stats(kylix_comm *c) {
  int64_t need = -1;
  int st = kylix_stats_json(c, NULL, 0, &need);
  if (st != KYLIX_ERR_ARG || need < 2) {
    FAILF("stats_json(cap 0) returned %s with needed=%" PRId64 ": %s", status_name(st), need, errmsg_of(c));
    say("DONE", "fails=%d (aborted)", g_fail);
    exit(1);
  }
  char *b = xmalloc((size_t)need);
  int64_t n2 = -1;
  MUST_OK(kylix_stats_json(c, b, need, &n2));
  CHECK(n2 == need && strlen(b) + 1 == (size_t)need, "needed %" PRId64 " then %" PRId64 ", strlen %zu", need, n2, strlen(b));
  return b;
}

/* num: the integer after the first occurrence of key (a "\"name\":" string) at or after from. */
static int64_t num(const char *from, const char *key) {
  const char *p = from ? strstr(from, key) : NULL;
  if (!p) {
    FAILF("no %s in the stats", key);
    return -1;
  }
  return strtoll(p + strlen(key), NULL, 10);
}

int main(int argc, char **argv) {
  check_init("stats", 100);
  if (argc < 2) {
    fprintf(stderr, "usage: %s DEGREES\n", argv[0]);
    return 2;
  }
  const char *degrees = argv[1];
  kylix_comm *c = init_comm("");

  /* every rank contributes 400 indices of 2000 and asks for 300 */
  rng_t g = rng_seed(7, 1, (uint64_t)g_rank, 0);
  int64_t out[400], in[300];
  for (int i = 0; i < 400; i++) out[i] = (int64_t)rng_below(&g, 2000);
  for (int i = 0; i < 300; i++) in[i] = (int64_t)rng_below(&g, 2000);
  double *ov = xmalloc(sizeof(double) * 400 * WIDTH), *iv = xmalloc(sizeof(double) * 300 * WIDTH);
  for (int i = 0; i < 400 * WIDTH; i++) ov[i] = 1;
  kylix_plan *p = NULL;
  MUST_OK(kylix_config(c, out, 400, in, 300, &p));
  for (int r = 0; r < REPS; r++) MUST_OK(kylix_reduce(p, ov, iv, KYLIX_F64, KYLIX_SUM, WIDTH));

  /* ---- the size protocol */
  int f0 = g_fail;
  int64_t need = -1;
  CHECK_ST(kylix_stats_json(c, NULL, 0, &need), KYLIX_ERR_ARG);
  CHECK(contains_ci(kylix_errmsg(c), "cap"), "message does not name cap: %s", kylix_errmsg(c));
  CHECK(need > 100, "needed=%" PRId64, need);
  if (need > 1 && need < (1 << 24)) {
    gbuf small = gbuf_new((size_t)need - 1, 0x33);
    int64_t n2 = -1;
    CHECK_ST(kylix_stats_json(c, gbuf_ptr(small), need - 1, &n2), KYLIX_ERR_ARG);
    CHECK(n2 == need, "needed %" PRId64 " then %" PRId64, need, n2);
    int untouched = 1;
    for (size_t i = 0; i < small.n; i++) untouched &= ((unsigned char *)gbuf_ptr(small))[i] == 0x33;
    CHECK(untouched && gbuf_guards_ok(small), "cap too small, yet the buffer was written");
    gbuf_free(small);
    gbuf exact = gbuf_new((size_t)need, 0x33);
    CHECK_ST(kylix_stats_json(c, gbuf_ptr(exact), need, NULL), KYLIX_OK);
    const char *s = gbuf_ptr(exact);
    CHECK(s[0] == '{' && s[need - 2] == '}' && s[need - 1] == 0, "not one NUL-terminated object");
    CHECK(gbuf_guards_ok(exact), "stats_json wrote outside buf[0..cap)");
    gbuf_free(exact);
  }
  if (g_fail == f0) PASS("stats_json: cap 0 / cap-1 -> KYLIX_ERR_ARG with *needed, nothing written; cap = needed fits exactly");

  /* ---- fields and per-layer figures */
  f0 = g_fail;
  char *js = stats(c);
  const char *fields[] = {"\"version\":1", "\"rank\":", "\"size\":", "\"degrees_option\":", "\"since_unix_s\":",
                          "\"compression\":{\"option\":", "\"ratio\":1", "\"totals\":{\"bytes_sent\":",
                          "\"phase_seconds\":{\"config\":", "\"collectives\":{", "\"plans\":[{", "\"retired_plans\":{",
                          "\"layers\":[{\"layer\":0,\"degree\":", NULL};
  for (const char *const *f = fields; *f; f++) CHECK(strstr(js, *f) != NULL, "field %s missing", *f);
  char want[64];
  snprintf(want, sizeof want, "\"degrees_option\":\"%s\"", degrees);
  CHECK(strstr(js, want) != NULL, "%s missing", want);
  int64_t sent = num(js, "\"totals\":{\"bytes_sent\":");
  if (g_size > 1) CHECK(sent > 0, "totals.bytes_sent=%" PRId64, sent);
  const char *layer0 = strstr(js, "\"layers\":[{");
  if (layer0 && g_size > 1) {
    int64_t ks = num(layer0, "\"out_keys_sent\":"), kr = num(layer0, "\"in_keys_recv\":");
    int64_t down = num(layer0, "\"reduce_down\":{\"bytes_sent\":");
    int64_t up = num(layer0, "\"reduce_up\":{\"bytes_sent\":");
    CHECK(down == (int64_t)REPS * WIDTH * 8 * ks, "layer 0 reduce_down bytes_sent %" PRId64 ", out_keys_sent %" PRId64, down, ks);
    CHECK(up == (int64_t)REPS * WIDTH * 8 * kr, "layer 0 reduce_up bytes_sent %" PRId64 ", in_keys_recv %" PRId64, up, kr);
    INFO("layer 0: out_keys_sent %" PRId64 ", reduce_down %" PRId64 " bytes, reduce_up %" PRId64 " bytes", ks, down, up);
  }
  CHECK(num(js, "\"calls\":{\"config\":1,\"reduce\":") == REPS, "plan calls.reduce is not %d", REPS);
  free(js);
  if (g_fail == f0) PASS("stats_json: documented fields; layer bytes = reduces x value bytes x keys");

  /* ---- reset, then counting again */
  f0 = g_fail;
  CHECK_ST(kylix_stats_reset(c), KYLIX_OK);
  js = stats(c);
  CHECK(strstr(js, "\"totals\":{\"bytes_sent\":0,\"bytes_recv\":0,\"msgs_sent\":0,\"msgs_recv\":0}") != NULL,
        "totals not zero after reset");
  CHECK(strstr(js, "\"out_keys_above\":") != NULL, "the plan lost its key counts in the reset");
  free(js);
  MUST_OK(kylix_barrier(c));
  js = stats(c);
  CHECK(strstr(js, "\"barrier\":{\"calls\":1,\"errors\":0,") != NULL, "barrier not counted after reset");
  if (g_size > 1) CHECK(num(js, "\"totals\":{\"bytes_sent\":") == 0 && num(js, "\"msgs_sent\":") > 0,
                        "a barrier sends empty messages");
  free(js);
  if (g_fail == f0) PASS("stats_reset: counters to zero, plan figures kept, counting resumes");

  /* ---- bad arguments */
  f0 = g_fail;
  char b4[4];
  int64_t n = -1;
  CHECK_ST(kylix_stats_json(NULL, b4, 4, &n), KYLIX_ERR_ARG);
  CHECK_ST(kylix_stats_json(c, b4, -1, &n), KYLIX_ERR_ARG);
  CHECK(contains_ci(kylix_errmsg(c), "cap"), "cap<0: %s", kylix_errmsg(c));
  CHECK_ST(kylix_stats_json(c, NULL, 10, &n), KYLIX_ERR_ARG);
  CHECK(contains_ci(kylix_errmsg(c), "buf"), "NULL buf: %s", kylix_errmsg(c));
  CHECK_ST(kylix_stats_reset(NULL), KYLIX_ERR_ARG);
  if (g_fail == f0) PASS("stats: NULL comm, negative cap, NULL buf -> KYLIX_ERR_ARG");

  MUST_OK(kylix_plan_free(p));
  MUST_OK(kylix_barrier(c));
  MUST_OK(kylix_finalize(c));
  g_comm = NULL;
  CHECK_ST(kylix_stats_json(c, b4, 4, &n), KYLIX_ERR_STATE);
  CHECK_ST(kylix_stats_reset(c), KYLIX_ERR_STATE);
  free(ov);
  free(iv);
  return check_finish();
}
