/*
 * killmid.c - a rank is killed (SIGKILL) in the middle of a large dense allreduce.
 *
 * usage: killmid VICTIM AFTER_MS COUNT [TIMEOUT_MS]
 *
 * Every rank runs back-to-back in-place kylix_allreduce of COUNT floats (SUM); the victim's
 * second thread raises SIGKILL AFTER_MS after its first call completed (counted from there, so
 * a loaded machine cannot kill it before one call is checked), so it dies mid-call: between
 * ranks of one host, in the middle of a fold that reads its memory, of a write-back into it, or
 * of its own single-copy send. Before that every result is checked at a few elements. The
 * survivors' failing call must return KYLIX_ERR_PEER (or TIMEOUT) within TIMEOUT_MS + 3 s,
 * naming the victim, and the next call fails promptly.
 */
#include "check.h"
#include <pthread.h>

#define MARGIN_S 3.0

static double g_after;

static void *killer(void *arg) {
  (void)arg;
  sleep_s(g_after);
  raise(SIGKILL);
  return NULL;
}

int main(int argc, char **argv) {
  check_init("killmid", 110);
  if (argc < 4) {
    fprintf(stderr, "usage: %s VICTIM AFTER_MS COUNT [TIMEOUT_MS]\n", argv[0]);
    return 2;
  }
  int victim = atoi(argv[1]);
  g_after = atoi(argv[2]) / 1000.0;
  size_t n = (size_t)atol(argv[3]);
  int timeout_ms = argc > 4 ? atoi(argv[4]) : 4000;
  char opts[64];
  snprintf(opts, sizeof opts, "timeout_ms=%d", timeout_ms);
  kylix_comm *c = init_comm(opts);
  float *buf = xmalloc(n * sizeof *buf);
  MUST_OK(kylix_barrier(c));
  int calls = 0, st = KYLIX_OK;
  double t0 = 0;
  size_t probe[3] = {0, n / 2 + 1, n - 1};
  while (st == KYLIX_OK) {
    for (size_t i = 0; i < n; i++) buf[i] = (float)((i + (size_t)g_rank) % 5);
    t0 = now_s();
    st = kylix_allreduce(c, buf, buf, (int64_t)n, KYLIX_F32, KYLIX_SUM);
    if (st != KYLIX_OK) break;
    calls++;
    for (int k = 0; k < 3; k++) {
      float want = 0;
      for (int r = 0; r < g_size; r++) want += (float)((probe[k] + (size_t)r) % 5);
      CHECK(buf[probe[k]] == want, "call %d: element %zu is %g, want %g", calls, probe[k], buf[probe[k]], want);
    }
    pthread_t th;
    if (g_rank == victim && calls == 1 && pthread_create(&th, NULL, killer, NULL) != 0) {
      FAILF("pthread_create failed");
      return check_finish();
    }
    if (g_rank == victim && calls > 100000) break; /* the killer never came */
  }
  if (g_rank == victim) {
    FAILF("the victim is still alive after %d calls", calls);
    return check_finish();
  }
  double dt = now_s() - t0;
  char msg[512];
  snprintf(msg, sizeof msg, "%s", errmsg_of(c));
  INFO("call %d returned %s after %.3f s: %s", calls + 1, status_name(st), dt, msg);
  CHECK(calls > 0, "no call completed before the victim died");
  CHECK(st == KYLIX_ERR_PEER || st == KYLIX_ERR_TIMEOUT, "allreduce with rank %d killed returned %s, want KYLIX_ERR_PEER or KYLIX_ERR_TIMEOUT",
        victim, status_name(st));
  CHECK(dt <= timeout_ms / 1000.0 + MARGIN_S, "allreduce took %.2f s to fail, timeout_ms=%d", dt, timeout_ms);
  int named = names_rank(msg, victim);
  INFO("names-victim=%s", named ? "yes" : "no");
  t0 = now_s();
  int st2 = kylix_allreduce(c, buf, buf, (int64_t)n, KYLIX_F32, KYLIX_SUM);
  CHECK(st2 == KYLIX_ERR_STATE || st2 == KYLIX_ERR_PEER, "allreduce after the failure returned %s", status_name(st2));
  CHECK(now_s() - t0 <= timeout_ms / 1000.0 + MARGIN_S, "the call after the failure took %.2f s", now_s() - t0);
  if (g_fail == 0) PASS("killmid allreduce: %d calls, then %s naming rank %d", calls, status_name(st), victim);
  kylix_finalize(c);
  free(buf);
  return check_finish();
}
