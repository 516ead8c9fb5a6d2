/*
 * bcast_barrier.c - kylix_bcast from every root at several sizes, dense
 * allreduce, and kylix_barrier.
 *
 * usage: bcast_barrier [SEED]
 *
 * bcast: every root, sizes 0 (also with a NULL buffer), 1, 7, 4097 and
 *   1000000 bytes; the root's bytes arrive exactly, nothing around the buffer
 *   is written, the root's buffer is unchanged.
 * barrier: ranks enter at staggered times; nobody leaves before the last one
 *   entered (wall clock, same host: every rank's entry and exit times are
 *   broadcast); then 200 barriers in a row.
 * allreduce (last, so that a failure leaves the sections above intact):
 *   I64 SUM and F64 MAX, separate and in place (send == recv).
 */
#include "check.h"

static void pattern(unsigned char *b, size_t n, uint64_t seed, int root) {
  rng_t g = rng_seed(seed, 42, (uint64_t)root, n);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = rng_next(&g);
    memcpy(b + i, &v, 8);
  }
  for (; i < n; i++) b[i] = (unsigned char)rng_next(&g);
}

int main(int argc, char **argv) {
  check_init("bcast_barrier", 110);
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 7;
  kylix_comm *c = init_comm("timeout_ms=20000");
  double t0 = now_s();

  /* ---- bcast */
  int f0 = g_fail, nb = 0;
  static const size_t sizes[] = {0, 1, 7, 4097, 1000000};
  unsigned char *want = xmalloc(1000000);
  for (int root = 0; root < g_size; root++)
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
      size_t n = sizes[si];
      pattern(want, n, seed, root);
      gbuf b = gbuf_new(n, 0xEE);
      if (g_rank == root) memcpy(gbuf_ptr(b), want, n);
      int st = kylix_bcast(c, gbuf_ptr(b), (int64_t)n, root);
      nb++;
      if (st != KYLIX_OK) {
        FAILF("bcast root %d %zu bytes returned %s: %s", root, n, status_name(st), errmsg_of(c));
        say("DONE", "fails=%d (aborted)", g_fail);
        return 1;
      }
      if (memcmp(gbuf_ptr(b), want, n) != 0) {
        size_t k = 0;
        while (((unsigned char *)gbuf_ptr(b))[k] == want[k]) k++;
        FAILF("bcast root %d %zu bytes: byte %zu is 0x%02x, want 0x%02x", root, n, k, ((unsigned char *)gbuf_ptr(b))[k], want[k]);
      }
      CHECK(gbuf_guards_ok(b), "bcast root %d %zu bytes wrote outside the buffer", root, n);
      gbuf_free(b);
    }
  /* zero bytes with a NULL buffer (allowed: count 0) */
  for (int root = 0; root < g_size; root++) {
    int st = kylix_bcast(c, NULL, 0, root);
    nb++;
    if (st != KYLIX_OK) {
      FAILF("bcast NULL, 0 bytes, root %d returned %s: %s", root, status_name(st), errmsg_of(c));
      say("DONE", "fails=%d (aborted)", g_fail);
      return 1;
    }
  }
  free(want);
  if (g_fail == f0) PASS("bcast: %d broadcasts from every root, 0..1000000 bytes, exact", nb);

  /* ---- barrier: nobody leaves before the last one entered */
  f0 = g_fail;
  for (int round = 0; round < 3; round++) {
    int order = round == 1 ? g_size - 1 - g_rank : (g_rank * 7 + round) % g_size;
    sleep_s(0.04 * order);
    double entry = wall_s();
    MUST_OK(kylix_barrier(c));
    double exit_t = wall_s();
    /* gather everybody's times with bcast (allreduce is tested on its own below) */
    double max_entry = entry, min_exit = exit_t;
    for (int root = 0; root < g_size; root++) {
      double t2[2] = {entry, exit_t};
      MUST_OK(kylix_bcast(c, t2, sizeof t2, root));
      if (t2[0] > max_entry) max_entry = t2[0];
      if (t2[1] < min_exit) min_exit = t2[1];
    }
    CHECK(min_exit >= max_entry, "barrier round %d: a rank left %.6f s before the last one entered", round, max_entry - min_exit);
  }
  double tb = now_s();
  for (int i = 0; i < 200; i++) MUST_OK(kylix_barrier(c));
  INFO("200 barriers in %.3f s", now_s() - tb);
  if (g_fail == f0) PASS("barrier: nobody leaves before the last rank enters; 200 in a row");

  /* ---- dense allreduce */
  f0 = g_fail;
  do {
#define ALLRED(call)                                                                   \
  {                                                                                    \
    int _st = (call);                                                                  \
    if (_st != KYLIX_OK) {                                                             \
      FAILF("%s returned %s: %s", #call, status_name(_st), errmsg_of(c));              \
      break;                                                                           \
    }                                                                                  \
  }
    enum { N = 1000 };
    int64_t *s = xmalloc(N * sizeof *s), *r = xmalloc(N * sizeof *r);
    for (int k = 0; k < N; k++) s[k] = (int64_t)k * (g_rank + 1);
    ALLRED(kylix_allreduce(c, s, r, N, KYLIX_I64, KYLIX_SUM));
    int64_t tri = (int64_t)g_size * (g_size + 1) / 2;
    for (int k = 0; k < N; k++)
      if (r[k] != k * tri) { FAILF("allreduce I64 SUM [%d] = %" PRId64 ", want %" PRId64, k, r[k], k * tri); break; }
    CHECK(s[N - 1] == (int64_t)(N - 1) * (g_rank + 1), "allreduce modified send");
    ALLRED(kylix_allreduce(c, s, s, N, KYLIX_I64, KYLIX_SUM)); /* in place */
    for (int k = 0; k < N; k++)
      if (s[k] != k * tri) { FAILF("in-place allreduce I64 SUM [%d] = %" PRId64 ", want %" PRId64, k, s[k], k * tri); break; }
    double d[3] = {(double)g_rank, -(double)g_rank, 0.5}, e[3];
    ALLRED(kylix_allreduce(c, d, e, 3, KYLIX_F64, KYLIX_MAX));
    CHECK(e[0] == g_size - 1 && e[1] == 0 && e[2] == 0.5, "allreduce F64 MAX gave %g %g %g", e[0], e[1], e[2]);
    free(s);
    free(r);
  } while (0);
  if (g_fail == f0) PASS("allreduce: I64 SUM (separate and in place), F64 MAX");

  INFO("bcast_barrier: %d ranks, %.2f s", g_size, now_s() - t0);
  MUST_OK(kylix_finalize(c));
  return check_finish();
}
