/*
 * auth.c - a rank with the wrong job secret is refused.
 *
 * usage: auth [ODD_RANK] [TIMEOUT_MS] [PEERS]
 *
 * PEERS (host:port,...): use this static peer table instead of the launcher's
 * rendezvous, so that the ranks' own handshake (not the rendezvous) has to
 * refuse the secret. ODD_RANK -1: nobody is odd, the job must work (control).
 *
 * The odd rank (default 1) overrides the launcher's secret with
 * kylix_init("secret=wrong..."): it must get KYLIX_ERR_AUTH. The others use
 * the launcher's secret; they cannot form the job without the odd rank, so
 * their kylix_init (or, if init succeeds lazily, their first barrier) fails
 * with KYLIX_ERR_AUTH, KYLIX_ERR_TIMEOUT, KYLIX_ERR_PEER or KYLIX_ERR_NET.
 * Everyone returns within TIMEOUT_MS + 3 s.
 */
#include "check.h"

#define MARGIN_S 3.0

static int refused(int st) {
  return st == KYLIX_ERR_AUTH || st == KYLIX_ERR_TIMEOUT || st == KYLIX_ERR_PEER || st == KYLIX_ERR_NET;
}

int main(int argc, char **argv) {
  check_init("auth", 100);
  int odd = argc > 1 ? atoi(argv[1]) : 1;
  int timeout_ms = argc > 2 ? atoi(argv[2]) : 3000;
  double T = timeout_ms / 1000.0;
  char opts[1024], peers[900] = "";
  if (argc > 3) snprintf(peers, sizeof peers, "peers=%s;rendezvous=;", argv[3]);
  int is_odd = g_rank == odd;
  if (is_odd)
    snprintf(opts, sizeof opts, "%ssecret=wrong-secret-%d;timeout_ms=%d", peers, g_rank, timeout_ms);
  else
    snprintf(opts, sizeof opts, "%stimeout_ms=%d", peers, timeout_ms);

  kylix_comm *c = (kylix_comm *)&odd;
  double t0 = now_s();
  int st = kylix_init(opts, &c);
  double dt = now_s() - t0;
  char msg[512];
  snprintf(msg, sizeof msg, "%s", st ? errmsg_of(NULL) : "");
  INFO("%s kylix_init returned %s after %.3f s: %s", is_odd ? "wrong-secret rank:" : "good rank:", status_name(st), dt, msg);
  CHECK(dt <= T + MARGIN_S, "kylix_init took %.2f s (timeout_ms=%d)", dt, timeout_ms);
  if (st != KYLIX_OK) CHECK(c == NULL, "kylix_init failed but *out is not NULL");
  if (st != KYLIX_OK) CHECK(msg[0] != 0, "kylix_init failed with an empty kylix_errmsg(NULL)");

  if (odd < 0) { /* control: everybody has the right secret */
    CHECK(st == KYLIX_OK, "kylix_init with the right secret returned %s: %s", status_name(st), msg);
    if (st != KYLIX_OK) return check_finish();
    g_comm = c;
    CHECK_ST(kylix_barrier(c), KYLIX_OK);
    CHECK_ST(kylix_finalize(c), KYLIX_OK);
    if (g_fail == 0) PASS("auth control: the right secret joins (%s)", peers[0] ? "static peers" : "rendezvous");
    return check_finish();
  }
  if (is_odd) {
    CHECK(st == KYLIX_ERR_AUTH, "the rank with the wrong secret got %s, want KYLIX_ERR_AUTH", status_name(st));
    if (st == KYLIX_OK) kylix_finalize(c);
    if (g_fail == 0) PASS("auth: wrong secret refused with KYLIX_ERR_AUTH in %.3f s", dt);
    return check_finish();
  }

  if (st == KYLIX_OK) {
    /* init may connect lazily: then the first collective must fail */
    g_comm = c;
    t0 = now_s();
    int st2 = kylix_barrier(c);
    double dt2 = now_s() - t0;
    INFO("good rank: init succeeded; barrier returned %s after %.3f s: %s", status_name(st2), dt2, st2 ? errmsg_of(c) : "");
    CHECK(refused(st2), "barrier in a job with a wrong-secret rank returned %s", status_name(st2));
    CHECK(dt2 <= T + MARGIN_S, "barrier took %.2f s (timeout_ms=%d)", dt2, timeout_ms);
    kylix_finalize(c);
    if (g_fail == 0) PASS("auth: job refused (barrier %s)", status_name(st2));
  } else {
    CHECK(refused(st), "kylix_init in a job with a wrong-secret rank returned %s", status_name(st));
    if (g_fail == 0) PASS("auth: job refused (init %s in %.3f s)", status_name(st), dt);
  }
  return check_finish();
}
