/*
 * kill.c - a rank dies or goes silent in the middle of a job.
 *
 * usage: kill MODE [VICTIM] [TIMEOUT_MS] [CALL]
 *   CALL: the 3rd collective, the one the victim misses: reduce (default),
 *        config, config_reduce, allreduce, bcast, barrier.
 *   TIMEOUT_MS 0: no timeout_ms option; the launcher's --timeout must set it.
 *   MODE sigkill | abort | exit: the victim (default: the last rank) dies
 *        before its 3rd reduce (SIGKILL, abort(), exit(3) without finalize).
 *   MODE hang: the victim sleeps through 2*TIMEOUT_MS + 3 s instead of
 *        calling its 3rd reduce (a silent peer), then finalizes and exits 0.
 *   MODE exitearly: the victim exits 7 after a barrier; the others sleep 60 s
 *        outside the library: the launcher (without --keep-going) has to stop
 *        them. They print a FAIL line if they wake up. VICTIM -1: nobody
 *        exits; every rank sleeps (for kylixrun --job-timeout).
 *
 * Survivors: the 3rd reduce fails with KYLIX_ERR_PEER or KYLIX_ERR_TIMEOUT
 * within TIMEOUT_MS + 3 s, kylix_errmsg names the victim ("r<k> INFO
 * names-victim=yes|no"; required for the dead modes); later calls return
 * KYLIX_ERR_STATE (or KYLIX_ERR_PEER) just as promptly; finalize returns.
 */
#include "check.h"

#define MARGIN_S 3.0

int main(int argc, char **argv) {
  check_init("kill", 110);
  if (argc < 2) {
    fprintf(stderr, "usage: %s sigkill|abort|exit|hang|exitearly [VICTIM] [TIMEOUT_MS]\n", argv[0]);
    return 2;
  }
  const char *mode = argv[1];
  int timeout_ms = argc > 3 ? atoi(argv[3]) : 4000;
  char opts[64] = "";
  if (timeout_ms > 0) /* 0: take it from the launcher (kylixrun --timeout sets KYLIX_TIMEOUT_MS) */
    snprintf(opts, sizeof opts, "timeout_ms=%d", timeout_ms);
  else if (getenv("KYLIX_TIMEOUT_MS"))
    timeout_ms = atoi(getenv("KYLIX_TIMEOUT_MS"));
  if (timeout_ms <= 0) {
    fprintf(stderr, "kill: TIMEOUT_MS 0 needs KYLIX_TIMEOUT_MS from kylixrun --timeout\n");
    return 2;
  }
  kylix_comm *c = init_comm(opts);
  int victim = argc > 2 ? atoi(argv[2]) : g_size - 1;
  double T = timeout_ms / 1000.0;
  const char *call = argc > 4 ? argv[4] : "reduce";

  if (!strcmp(mode, "exitearly")) {
    MUST_OK(kylix_barrier(c));
    if (g_rank == victim) {
      INFO("victim exits 7");
      exit(7);
    }
    sleep_s(60);
    FAILF("still running 60 s after rank %d exited 7: the launcher did not stop this rank", victim);
    return check_finish();
  }

  int64_t out[4] = {1, 2, 3, 100 + g_rank};
  int64_t *in = xmalloc((size_t)(3 + g_size) * sizeof *in);
  in[0] = 1, in[1] = 2, in[2] = 3;
  for (int r = 0; r < g_size; r++) in[3 + r] = 100 + r;
  kylix_plan *p = NULL;
  MUST_OK(kylix_config(c, out, 4, in, 3 + g_size, &p));
  double vals[4], *res = xmalloc((size_t)(3 + g_size) * sizeof *res);

  for (int i = 0; i < 2; i++) {
    for (int k = 0; k < 4; k++) vals[k] = (double)(i + 1);
    MUST_OK(kylix_reduce(p, vals, res, KYLIX_F64, KYLIX_SUM, 1));
    CHECK(res[0] == (double)(i + 1) * g_size && res[3 + victim] == (double)(i + 1),
          "reduce %d before the failure gave %g, %g", i, res[0], res[3 + victim]);
  }

  if (g_rank == victim) {
    INFO("victim: %s before %s", mode, call);
    if (!strcmp(mode, "sigkill")) raise(SIGKILL);
    if (!strcmp(mode, "abort")) abort();
    if (!strcmp(mode, "exit")) exit(3);
    if (!strcmp(mode, "hang")) {
      sleep_s(2 * T + 3);
      double t0 = now_s();
      int st = kylix_finalize(c);
      INFO("victim woke up; finalize returned %s after %.2f s", status_name(st), now_s() - t0);
      CHECK(now_s() - t0 < T + MARGIN_S, "finalize of the silent rank took %.2f s", now_s() - t0);
      return check_finish();
    }
    FAILF("unknown mode %s", mode);
    return check_finish();
  }

  /* survivors */
  double t0 = now_s();
  int st;
  if (!strcmp(call, "reduce")) st = kylix_reduce(p, vals, res, KYLIX_F64, KYLIX_SUM, 1);
  else if (!strcmp(call, "config")) {
    kylix_plan *q = NULL;
    st = kylix_config(c, out, 4, in, 3 + g_size, &q);
  } else if (!strcmp(call, "config_reduce")) st = kylix_config_reduce(c, out, 4, vals, in, 3 + g_size, res, KYLIX_F64, KYLIX_SUM, 1, NULL);
  else if (!strcmp(call, "allreduce")) st = kylix_allreduce(c, vals, res, 4, KYLIX_F64, KYLIX_SUM);
  else if (!strcmp(call, "bcast")) st = kylix_bcast(c, res, 8, victim); /* the dead rank is the root */
  else if (!strcmp(call, "barrier")) st = kylix_barrier(c);
  else { FAILF("unknown call %s", call); return check_finish(); }
  double dt = now_s() - t0;
  const char *m = errmsg_of(c);
  char msg[512];
  snprintf(msg, sizeof msg, "%s", st ? m : "");
  INFO("%s returned %s after %.3f s: %s", call, status_name(st), dt, msg);
  CHECK(st == KYLIX_ERR_PEER || st == KYLIX_ERR_TIMEOUT, "%s with rank %d %s returned %s, want KYLIX_ERR_PEER or KYLIX_ERR_TIMEOUT",
        call, victim, strcmp(mode, "hang") ? "dead" : "silent", status_name(st));
  CHECK(dt <= T + MARGIN_S, "%s took %.2f s to fail, timeout_ms=%d (+%.0f s margin)", call, dt, timeout_ms, MARGIN_S);
  int named = names_rank(msg, victim);
  INFO("names-victim=%s", named ? "yes" : "no");
  if (strcmp(mode, "hang") != 0)
    CHECK(named, "errmsg does not name the dead rank %d: \"%s\"", victim, msg);

  /* the comm is broken now: later calls fail promptly */
  t0 = now_s();
  int st2 = kylix_reduce(p, vals, res, KYLIX_F64, KYLIX_SUM, 1);
  int st3 = kylix_barrier(c);
  double dt2 = now_s() - t0;
  CHECK(st2 == KYLIX_ERR_STATE || st2 == KYLIX_ERR_PEER, "reduce after the failure returned %s, want KYLIX_ERR_STATE: %s", status_name(st2), st2 ? errmsg_of(c) : "");
  CHECK(st3 == KYLIX_ERR_STATE || st3 == KYLIX_ERR_PEER, "barrier after the failure returned %s, want KYLIX_ERR_STATE: %s", status_name(st3), st3 ? errmsg_of(c) : "");
  CHECK(dt2 <= T + MARGIN_S, "calls after the failure took %.2f s", dt2);
  INFO("after the failure: reduce %s, barrier %s, %.3f s", status_name(st2), status_name(st3), dt2);

  int32_t failed[64], nf = -1;
  int st4 = kylix_failed_ranks(c, failed, 64, &nf);
  if (st4 == KYLIX_OK) {
    char list[256] = "";
    for (int i = 0; i < nf && i < 64; i++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? "," : "", failed[i]);
    INFO("failed_ranks: n=%d [%s]", nf, list);
    for (int i = 0; i < nf && i < 64; i++) CHECK(failed[i] == victim, "failed_ranks lists rank %d, which is alive", failed[i]);
  } else {
    FAILF("kylix_failed_ranks after rank %d failed returned %s: %s", victim, status_name(st4), errmsg_of(c));
  }

  /* Let every survivor ask kylix_failed_ranks before anyone finalizes: a finalized peer is
     gone too, and the library may list it (see the INFO line above). */
  sleep_s(1.0);
  t0 = now_s();
  int st5 = kylix_finalize(c);
  CHECK(st5 == KYLIX_OK, "finalize after the failure returned %s", status_name(st5));
  CHECK(now_s() - t0 <= T + MARGIN_S, "finalize took %.2f s", now_s() - t0);
  g_comm = NULL;
  if (g_fail == 0) PASS("kill %s %s: survivor failed with %s in %.3f s (victim %d named: %s), then %s", mode, call, status_name(st), dt, victim, named ? "yes" : "no", status_name(st2));
  return check_finish();
}
