/*
 * shrink_replicated.c - a shrunk replicated comm keeps the replication layers: a stopped
 * replica holds up nobody, and racing is counted in the statistics.
 *
 * usage: shrink_replicated PIDFILE          (6 ranks, --replication 2, --keep-going,
 *                                            KYLIX_LIVENESS_MS far above STOP_MS)
 *   - ranks 2 and 5 (both replicas of node 2) raise(SIGKILL) after a barrier; the others see
 *     the failure and kylix_shrink: 4 ranks, 2 nodes, still 2 replicas each (old 0,3 and 1,4);
 *   - on the shrunk comm everyone configures a plan of large rows and reduces once; then new
 *     rank 3 writes its pid to PIDFILE and is stopped (SIGSTOP) for STOP_MS;
 *   - the other three wait until it shows as stopped and run ITERS reduces, each checked bit
 *     for bit against the sum over the two nodes' regenerated data. The messages are far larger
 *     than a socket's buffers, so a sender whose copy for the stopped replica cannot leave the
 *     rest of the write to the background waits for it. They check that the replica was still
 *     stopped when they finished (it is not declared dead: liveness is far longer), and that
 *     kylix_stats_json counts racing copies won.
 */
#include "check.h"


#define K (1 << 15) /* keys a rank */
#define W 64        /* values a key: 16 MiB of f64 a rank */
#define ITERS 4
#define STOP_MS 25000

/* Node j's value for key k, element e: small integers, so every sum is exact. */
static double val(int node, int64_t k, int e) { return (double)((node * 7 + k * 3 + e) % 1000); }

static char proc_state(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return '?';
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')'); /* the state follows the command name */
  return p && p[1] == ' ' ? p[2] : '?';
}


static long long json_count(const char *js, const char *key) {
  const char *p = strstr(js, key);
  return p ? atoll(p + strlen(key)) : -1;
}

int main(int argc, char **argv) {
  check_init("shrink_replicated", 120);
  if (argc < 2) {
    FAILF("usage: shrink_replicated PIDFILE");
    return check_finish();
  }
  const char *pidfile = argv[1];
  kylix_comm *c = init_comm("");
  CHECK(g_size == 6, "run with 6 ranks, not %d", g_size);
  MUST_OK(kylix_barrier(c));
  if (g_rank == 2 || g_rank == 5) raise(SIGKILL);
  int st = kylix_barrier(c);
  CHECK(st == KYLIX_ERR_PEER || st == KYLIX_ERR_TIMEOUT, "barrier after node 2 died: %s", status_name(st));
  kylix_comm *nc = NULL;
  MUST_OK(kylix_shrink(c, &nc));
  g_comm = nc;
  int r = kylix_rank(nc), n = kylix_size(nc);
  CHECK(n == 4, "shrunk comm has %d ranks, want 4", n);
  int node = r % 2;

  int64_t *idx = xmalloc(sizeof(int64_t) * K);
  double *vals = xmalloc(sizeof(double) * K * W), *res = xmalloc(sizeof(double) * K * W);
  for (int64_t i = 0; i < K; i++) idx[i] = i * 5 + 1;
  for (int64_t i = 0; i < K; i++)
    for (int e = 0; e < W; e++) vals[i * W + e] = val(node, idx[i], e);
  kylix_plan *p = NULL;
  MUST_OK(kylix_config(nc, idx, K, idx, K, &p));
  MUST_OK(kylix_reduce(p, vals, res, KYLIX_F64, KYLIX_SUM, W));

  if (r == 3) { /* the replica that stops */
    FILE *f = fopen(pidfile, "w");
    if (f) {
      fprintf(f, "%d\n", (int)getpid());
      fclose(f);
    }
    INFO("stopping for %d ms", STOP_MS);
    stop_self(STOP_MS);
    INFO("resumed");
    kylix_plan_free(p);
    kylix_finalize(nc);
    kylix_finalize(c);
    return check_finish();
  }

  pid_t stopped = 0;
  for (int i = 0; i < 1000 && !stopped; i++) { /* up to 10 s for it to stop */
    FILE *f = fopen(pidfile, "r");
    int pid = 0;
    if (f) {
      if (fscanf(f, "%d", &pid) != 1) pid = 0;
      fclose(f);
    }
    if (pid > 0 && proc_state(pid) == 'T') stopped = pid;
    else sleep_s(0.01);
  }
  CHECK(stopped, "the replica never showed as stopped");
  kylix_stats_reset(nc);
  int bad = 0;
  for (int it = 0; it < ITERS; it++) {
    MUST_OK(kylix_reduce(p, vals, res, KYLIX_F64, KYLIX_SUM, W));
    for (int64_t i = 0; i < K && bad < 5; i++)
      for (int e = 0; e < W; e++) {
        double want = val(0, idx[i], e) + val(1, idx[i], e);
        if (res[i * W + e] != want) {
          FAILF("iteration %d key %" PRId64 " elem %d: %g, want %g", it, idx[i], e, res[i * W + e], want);
          bad++;
          break;
        }
      }
  }
  if (!bad) PASS("%d reduces on the shrunk replicated comm", ITERS);
  char state = stopped ? proc_state(stopped) : '?';
  CHECK(state == 'T', "the stopped replica was no longer stopped (state %c) when the reduces ended: they waited for it", state);
  if (state == 'T') PASS("reduces done while the replica was stopped");
  static char js[1 << 16];
  int64_t need = 0;
  MUST_OK(kylix_stats_json(nc, js, sizeof js, &need));
  long long won = json_count(js, "\"copies_won\":");
  CHECK(won > 0, "racing copies won on the shrunk comm: %lld, want > 0", won);
  if (won > 0) PASS("race stats: %lld copies won", won);
  kylix_plan_free(p);
  MUST_OK(kylix_finalize(nc));
  MUST_OK(kylix_finalize(c));
  return check_finish();
}
