/*
 * replicated.c - a replicated job (kylixrun --replication S) that loses replicas and keeps
 * computing: every survivor checks every result, bit for bit, against a brute-force sum over
 * the node data (each node counted once).
 *
 * usage: replicated ITERS [EVENT ...]
 *   Rank r is replica r / (size/S) of node r % (size/S); its data depend on the node only.
 *   Each iteration: config + reduce (sparse, f64 SUM), dense allreduce (f64 SUM), a one-shot
 *   config_reduce (i64 MAX), and an ireduce started before and waited for after a barrier.
 *   EVENT is RANK:WHAT:ITER[:ARG], acted on by rank RANK in iteration ITER:
 *     kill:config | kill:reduce | kill:dense | kill:cfgred | kill:ireduce
 *                  a thread raises SIGKILL ARG microseconds (default 300) after that call
 *                  starts: the rank dies in the middle of it;
 *     stop         a child process stops this rank (SIGSTOP) for ARG ms, then resumes it;
 *     sleep        the rank sleeps ARG ms before the iteration (outside the library).
 *   EXPECT=peer (environment): the job is meant to lose every replica of a node (killed as
 *   the call starts). Survivors then expect a call to fail with KYLIX_ERR_PEER naming the
 *   ranks in DEAD (a comma list) within KYLIX_LIVENESS_MS + 1 s of its start, and stop there
 *   ("r<k> PASS peer-error").
 * A rank that was stopped long enough to be declared dead finds its peers gone: it reports
 * "r<k> INFO declared-dead" and exits 0 (the launcher keeps the job going: its node has
 * another replica).
 */
#include "check.h"

#include <pthread.h>
#include <sys/wait.h>

#define NFEAT 200000
#define NOUT 6000
#define NIN 5000
#define NDENSE (1 << 19)

static int g_s = 1, g_m = 1, g_node = 0;
static double g_call_start = 0; /* when the call being checked started (die_during) */

/* Node data of iteration it: out indices (with repeats), in indices, values. */
static void node_sets(int node, int it, int64_t *out, double *vals, int64_t *in) {
  rng_t g = rng_seed(42, (uint64_t)it, (uint64_t)node, 1);
  for (int i = 0; i < NOUT; i++) {
    out[i] = (int64_t)(rng_below(&g, 4) == 0 ? rng_below(&g, 500) : rng_below(&g, NFEAT));
    vals[i] = (double)((int)rng_below(&g, 7) - 3);
  }
  for (int i = 0; i < NIN; i++) in[i] = (int64_t)(rng_below(&g, 3) == 0 ? rng_below(&g, 500) : rng_below(&g, NFEAT));
}

static double dense_val(int node, int it, int64_t i) { return (double)((node + 1) * ((i + it) % 5)); }

typedef struct {
  int rank, iter;
  char what[16];
  int arg;
} event;

static event g_ev[16];
static int g_nev = 0;

static const event *event_for(int it, const char *what) {
  for (int i = 0; i < g_nev; i++)
    if (g_ev[i].rank == g_rank && g_ev[i].iter == it && !strcmp(g_ev[i].what, what)) return &g_ev[i];
  return NULL;
}

static void *killer(void *arg) {
  sleep_s((double)(intptr_t)arg * 1e-6);
  raise(SIGKILL);
  return NULL;
}

/* die_during: when an event says so, SIGKILL this rank arg µs from now (during the call). */
static void die_during(int it, const char *call) {
  g_call_start = now_s();
  char what[24];
  snprintf(what, sizeof what, "kill:%s", call);
  const event *e = event_for(it, what);
  if (!e) return;
  INFO("victim: dies %d us into %s of iteration %d", e->arg, call, it);
  pthread_t t;
  pthread_create(&t, NULL, killer, (void *)(intptr_t)(e->arg ? e->arg : 300));
}

/* A child stops this process for ms milliseconds, then lets it go on. */
static void stop_me(int ms) {
  INFO("stopped for %d ms", ms);
  stop_self(ms);
}

/* When this rank was declared dead while stopped, its peers have dropped it. */
static int g_expect_peer = 0;
static const char *g_dead = "";
static int g_liveness_ms = 5000;

/* outcome of a call: 1 to go on, 0 when the job is over for this rank */
static int outcome(int st, const char *what, int it, int was_stopped) {
  if (st == KYLIX_OK) return 1;
  const char *msg = errmsg_of(g_comm);
  if (was_stopped && st == KYLIX_ERR_PEER) {
    INFO("declared-dead: %s in iteration %d after being stopped: %s", what, it, msg);
    printf("r%d DONE fails=%d\n", g_rank, g_fail);
    fflush(stdout);
    _exit(g_fail ? 1 : 0);
  }
  if (g_expect_peer && st == KYLIX_ERR_PEER) {
    double late = now_s() - g_call_start;
    int named = 1;
    char buf[64];
    strncpy(buf, g_dead, sizeof buf - 1);
    buf[sizeof buf - 1] = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
      if (!strstr(msg, tok)) named = 0;
    CHECK(named, "the error does not name every dead rank (%s): %s", g_dead, msg);
    INFO("peer error %.2f s into the call: %s", late, msg);
    CHECK(late < g_liveness_ms / 1000.0 + 1.0, "PEER came %.2f s into the call (liveness %d ms)", late, g_liveness_ms);
    PASS("peer-error in %s of iteration %d", what, it);
    /* The next call on the broken comm returns KYLIX_ERR_STATE at once and tells the peers
       still waiting for this rank why it will not come (they may have got through the call
       that failed here, not needing the dead node in it). */
    CHECK_ST(kylix_barrier(g_comm), KYLIX_ERR_STATE);
    return 0;
  }
  FAILF("%s in iteration %d: %s: %s", what, it, status_name(st), msg);
  return 0;
}

int main(int argc, char **argv) {
  check_init("replicated", 300);
  if (argc < 2) {
    fprintf(stderr, "usage: %s ITERS [RANK:WHAT:ITER[:ARG] ...]\n", argv[0]);
    return 2;
  }
  int iters = atoi(argv[1]);
  for (int i = 2; i < argc && g_nev < 16; i++) {
    event *e = &g_ev[g_nev];
    char what[24] = "", sub[24] = "";
    int n = sscanf(argv[i], "%d:%23[a-z]:%23[^:]", &e->rank, what, sub);
    if (n >= 3 && !strcmp(what, "kill")) {
      snprintf(e->what, sizeof e->what, "kill:%s", sub);
      if (sscanf(argv[i], "%*d:%*[a-z]:%*[a-z]:%d:%d", &e->iter, &e->arg) < 1) return 2;
    } else if (n >= 3) {
      snprintf(e->what, sizeof e->what, "%s", what);
      if (sscanf(argv[i], "%*d:%*[a-z]:%d:%d", &e->iter, &e->arg) < 1) return 2;
    } else {
      fprintf(stderr, "replicated: bad event %s\n", argv[i]);
      return 2;
    }
    g_nev++;
  }
  g_expect_peer = getenv("EXPECT") && !strcmp(getenv("EXPECT"), "peer");
  if (getenv("DEAD")) g_dead = getenv("DEAD");
  if (getenv("KYLIX_LIVENESS_MS")) g_liveness_ms = atoi(getenv("KYLIX_LIVENESS_MS"));

  kylix_comm *c = init_comm("");
  g_s = getenv("KYLIX_REPLICATION") ? atoi(getenv("KYLIX_REPLICATION")) : 1;
  g_m = g_size / g_s;
  g_node = g_rank % g_m;

  int64_t *out = xmalloc(NOUT * sizeof *out), *in = xmalloc(NIN * sizeof *in);
  double *vals = xmalloc(NOUT * sizeof *vals), *res = xmalloc(NIN * sizeof *res);
  double *want = xmalloc(NIN * sizeof *want), *acc = xmalloc(NFEAT * sizeof *acc);
  int64_t *o2 = xmalloc(NOUT * sizeof *o2), *i2 = xmalloc(NIN * sizeof *i2);
  double *v2 = xmalloc(NOUT * sizeof *v2);
  int64_t *ivals = xmalloc(NOUT * sizeof *ivals), *ires = xmalloc(NIN * sizeof *ires);
  int64_t *iwant = xmalloc(NIN * sizeof *iwant), *imax = xmalloc(NFEAT * sizeof *imax);
  uint8_t *seen = xmalloc(NFEAT);
  double *dsend = xmalloc(NDENSE * sizeof *dsend), *drecv = xmalloc(NDENSE * sizeof *drecv);
  double *ires2 = xmalloc(NIN * sizeof *ires2);
  int was_stopped = 0;

  for (int it = 0; it < iters; it++) {
    const event *e;
    if ((e = event_for(it, "sleep"))) {
      INFO("sleeps %d ms before iteration %d", e->arg, it);
      sleep_s(e->arg / 1000.0);
    }
    if ((e = event_for(it, "stop"))) {
      stop_me(e->arg);
      was_stopped = 1;
    }
    /* reference: every node's contribution, each node once */
    memset(acc, 0, NFEAT * sizeof *acc);
    memset(seen, 0, NFEAT);
    for (int64_t i = 0; i < NFEAT; i++) imax[i] = INT64_MIN;
    for (int node = 0; node < g_m; node++) {
      node_sets(node, it, o2, v2, i2);
      for (int k = 0; k < NOUT; k++) {
        acc[o2[k]] += v2[k];
        seen[o2[k]] = 1;
        int64_t iv = (int64_t)v2[k] * 1000 + node;
        if (iv > imax[o2[k]]) imax[o2[k]] = iv;
      }
    }
    node_sets(g_node, it, out, vals, in);
    for (int k = 0; k < NIN; k++) {
      want[k] = acc[in[k]];
      iwant[k] = seen[in[k]] ? imax[in[k]] : INT64_MIN;
    }
    for (int k = 0; k < NOUT; k++) ivals[k] = (int64_t)vals[k] * 1000 + g_node;

    kylix_plan *p = NULL;
    die_during(it, "config");
    if (!outcome(kylix_config(c, out, NOUT, in, NIN, &p), "config", it, was_stopped)) break;
    die_during(it, "reduce");
    if (!outcome(kylix_reduce(p, vals, res, KYLIX_F64, KYLIX_SUM, 1), "reduce", it, was_stopped)) break;
    CHECK(!memcmp(res, want, NIN * sizeof *res), "reduce of iteration %d differs from the brute force", it);

    for (int64_t i = 0; i < NDENSE; i++) dsend[i] = dense_val(g_node, it, i);
    die_during(it, "dense");
    if (!outcome(kylix_allreduce(c, dsend, drecv, NDENSE, KYLIX_F64, KYLIX_SUM), "allreduce", it, was_stopped)) break;
    int dense_ok = 1;
    for (int64_t i = 0; i < NDENSE && dense_ok; i++) {
      double w = 0;
      for (int node = 0; node < g_m; node++) w += dense_val(node, it, i);
      dense_ok = drecv[i] == w;
    }
    CHECK(dense_ok, "dense allreduce of iteration %d differs from the brute force", it);

    die_during(it, "cfgred");
    if (!outcome(kylix_config_reduce(c, out, NOUT, ivals, in, NIN, ires, KYLIX_I64, KYLIX_MAX, 1, NULL),
                 "config_reduce", it, was_stopped))
      break;
    CHECK(!memcmp(ires, iwant, NIN * sizeof *ires), "config_reduce of iteration %d differs from the brute force", it);

    /* a request in flight while a replica dies */
    kylix_request *rq = NULL;
    die_during(it, "ireduce");
    if (!outcome(kylix_ireduce(p, vals, ires2, KYLIX_F64, KYLIX_SUM, 1, &rq), "ireduce", it, was_stopped)) break;
    int stb = kylix_barrier(c);
    int stw = kylix_wait(rq);
    if (!outcome(stw, "ireduce wait", it, was_stopped) || !outcome(stb, "barrier", it, was_stopped)) break;
    CHECK(!memcmp(ires2, want, NIN * sizeof *ires2), "ireduce of iteration %d differs from the brute force", it);
    kylix_plan_free(p);
    if (!g_fail) PASS("iteration %d", it);
  }

  int32_t failed[64], nf = 0;
  if (kylix_failed_ranks(c, failed, 64, &nf) == KYLIX_OK) {
    char buf[256] = "";
    for (int i = 0; i < nf && i < 64; i++) snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%d", i ? "," : "", failed[i]);
    INFO("failed-ranks [%s]", buf);
  }
  int64_t need = 0;
  if (kylix_stats_json(c, NULL, 0, &need) == KYLIX_OK || need > 0) {
    /* Room to spare: racing copies still landing after the last call (faster over shared
     * memory) move the counters, and so the length, between the two calls. */
    need += 1024;
    char *js = xmalloc(need);
    if (kylix_stats_json(c, js, need, &need) == KYLIX_OK) {
      char *w = strstr(js, "\"copies_won\":");
      if (w) INFO("stats %.40s", w);
    }
    free(js);
  }
  kylix_finalize(c);
  return check_finish();
}
