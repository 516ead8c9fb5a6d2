/*
 * cause.c - one rank starts a job's failure; the others fail because of it and exit first.
 * The launcher (tests/cause_test.go) must name the rank that started it, not the first to exit.
 *
 * usage: cause MODE CULPRIT
 *   MODE badarg: CULPRIT passes NULL values to its 2nd reduce (KYLIX_ERR_ARG), then sleeps
 *        outside the library; the others' reduce fails with MISMATCH and they exit 1 at once.
 *   MODE sigstop: CULPRIT stops itself (SIGSTOP) before its 2nd reduce; the others declare it
 *        lost after liveness_ms and exit 1.
 * Every rank prints "r<k> INFO st=<status>" for the failed reduce.
 */
#include "check.h"

int main(int argc, char **argv) {
  check_init("cause", 60);
  if (argc < 3) {
    fprintf(stderr, "usage: %s badarg|sigstop CULPRIT\n", argv[0]);
    return 2;
  }
  const char *mode = argv[1];
  int culprit = atoi(argv[2]);
  kylix_comm *c = init_comm("timeout_ms=8000;liveness_ms=1000");
  int64_t out[2] = {7, 100 + g_rank}, in[1] = {7};
  kylix_plan *p = NULL;
  MUST_OK(kylix_config(c, out, 2, in, 1, &p));
  double vals[2] = {1, 1}, res[1];
  MUST_OK(kylix_reduce(p, vals, res, KYLIX_F64, KYLIX_SUM, 1));
  CHECK(res[0] == g_size, "first reduce gave %g, want %d", res[0], g_size);

  if (g_rank == culprit) {
    if (!strcmp(mode, "sigstop")) raise(SIGSTOP);
    int st = kylix_reduce(p, NULL, res, KYLIX_F64, KYLIX_SUM, 1);
    INFO("st=%s: %s", status_name(st), errmsg_of(c));
    sleep_s(30); /* outside the library: the others exit first, the launcher stops this one */
    return 1;
  }
  int st = kylix_reduce(p, vals, res, KYLIX_F64, KYLIX_SUM, 1);
  INFO("st=%s: %s", status_name(st), errmsg_of(c));
  return 1;
}
