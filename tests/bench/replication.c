/* replication.c — the cost of replication and the gain of packet racing ("Kylix: A Sparse
 * Allreduce for Commodity Clusters", §V and Table I), on the Poisson power-law data of
 * powerlaw.h, through the C ABI. Run under `kylixrun -n N [--replication S]`; run_replication.sh
 * runs every case and makes the table.
 *
 * Rank r is a replica of node r % (N/S) and its data are the node's (stream 2*node): a job of
 * N/S ranks without replication computes the same sums on the same data.
 *
 * Timing. With replication a collective is done when one replica of every node has its result:
 * packet racing never waits for the slower replica, so the replicas of a node drift apart, and a
 * replica that lags finds its inputs already buffered and returns at once. Neither a barrier
 * (which waits for one replica per node) nor a rank's own call time measures the job, then.
 * All ranks run on one host and read the same CLOCK_MONOTONIC, so every rank prints when each
 * of K back-to-back calls returned, and run_replication.sh takes for iteration i the time C_i at
 * which every node had a replica done (max over nodes of the min over the node's live replicas)
 * and reports the median of C_i - C_{i-1}: the steady per-iteration time of the job. Without
 * replication that is the usual max over ranks.
 *
 * Options (key=value, or BENCH_<KEY>): n, density, alpha, seed (powerlaw.h); configs=K and
 * reduces=K (timed calls, default 6 and 12); dead=R,R,... (ranks that SIGKILL themselves after
 * the warm-up, before timing; the survivors wait until kylix_failed_ranks lists them);
 * slow=R (rank R is stopped, SIGSTOP, for stop_ms of every period_ms by a child process,
 * defaults 20 and 100, from the warm-up on); check=0|1 (the warm-up reduce and the last timed
 * reduce against a brute force over the node data); enddir=DIR (an empty directory where the
 * survivors meet before they finalize).
 *
 * Prints, per surviving rank, to enddir/times.R (stdout without enddir): "TS rank=R node=J
 * phase=config|reduce t=T0,T1,...,TK" (T0: the loop's start, after a barrier; Ti: return of
 * call i; seconds) and "CHECK rank=R bad=B".
 */
#define _POSIX_C_SOURCE 200809L
#include "powerlaw.h"
#include "kylix.h"
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static kylix_comm *comm;

static void must(int st, const char *what) {
  if (st == KYLIX_OK) return;
  fprintf(stderr, "replication: %s: %s: %s\n", what, kylix_strerror(st), kylix_errmsg(comm));
  exit(1);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void nap_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* A child stops its parent for stop_ms of every period_ms until the pipe's write end closes
 * (the parent is done, or died). The parent can only close it while running, that is while
 * the child waits in poll, so the parent is never left stopped. */
static pid_t start_stopper(int stop_ms, int period_ms, int *pipe_w) {
  int fd[2];
  if (pipe(fd) != 0) { perror("pipe"); exit(1); }
  pid_t parent = getpid(), ch = fork();
  if (ch < 0) { perror("fork"); exit(1); }
  if (ch == 0) { /* only async-signal-safe calls: the parent runs Go's threads */
    close(fd[1]);
    struct pollfd p = {fd[0], POLLIN, 0};
    for (;;) {
      kill(parent, SIGSTOP);
      nap_ms(stop_ms);
      kill(parent, SIGCONT);
      if (poll(&p, 1, period_ms - stop_ms) != 0) break;
    }
    kill(parent, SIGCONT);
    _exit(0);
  }
  close(fd[0]);
  *pipe_w = fd[1];
  return ch;
}

static int64_t opt_int(int argc, char **argv, const char *key, int64_t def) {
  char env[64];
  snprintf(env, sizeof env, "BENCH_%s", key);
  for (char *e = env; *e; e++) if (*e >= 'a' && *e <= 'z') *e -= 32;
  const char *v = getenv(env);
  size_t l = strlen(key);
  for (int i = 1; i < argc; i++)
    if (!strncmp(argv[i], key, l) && argv[i][l] == '=') v = argv[i] + l + 1;
  return v && *v ? (int64_t)atof(v) : def;
}

static const char *opt_str(int argc, char **argv, const char *key, const char *env) {
  const char *v = getenv(env);
  size_t l = strlen(key);
  for (int i = 1; i < argc; i++)
    if (!strncmp(argv[i], key, l) && argv[i][l] == '=') v = argv[i] + l + 1;
  return v ? v : "";
}

static void print_times(FILE *f, int rank, int node, const char *phase, const double *t, int k) {
  fprintf(f, "TS rank=%d node=%d phase=%s t=", rank, node, phase);
  for (int i = 0; i <= k; i++) fprintf(f, "%s%.6f", i ? "," : "", t[i]);
  fprintf(f, "\n");
}

int main(int argc, char **argv) {
  if (kylix_init("", &comm) != KYLIX_OK) {
    fprintf(stderr, "kylix_init: %s\n", kylix_errmsg(NULL));
    return 1;
  }
  int rank = kylix_rank(comm), size = kylix_size(comm);
  const char *sv = getenv("KYLIX_REPLICATION");
  int s = sv && *sv ? atoi(sv) : 1, m = size / s, node = rank % m;
  pl_opts o = pl_opts_parse(argc, argv);
  int configs = (int)opt_int(argc, argv, "configs", 6);
  int reduces = (int)opt_int(argc, argv, "reduces", 12);
  int slow = (int)opt_int(argc, argv, "slow", -1);
  int stop_ms = (int)opt_int(argc, argv, "stop_ms", 20);
  int period_ms = (int)opt_int(argc, argv, "period_ms", 100);
  int dead[64], ndead = 0, me_dead = 0;
  char deadbuf[256];
  snprintf(deadbuf, sizeof deadbuf, "%s", opt_str(argc, argv, "dead", "BENCH_DEAD"));
  for (char *tok = strtok(deadbuf, ","); tok && ndead < 64; tok = strtok(NULL, ",")) {
    dead[ndead] = atoi(tok);
    me_dead |= dead[ndead++] == rank;
  }

  double lambda = pl_solve_lambda(o.n, o.density, o.alpha);
  pl_set ids = pl_sample(o.n, lambda, o.alpha, o.seed, 2 * (uint64_t)node);
  float *ov = malloc((size_t)ids.len * sizeof(float) + 4);
  float *iv = malloc((size_t)ids.len * sizeof(float) + 4);
  double *tc = malloc((size_t)(configs + 1) * sizeof(double));
  double *tr = malloc((size_t)(reduces + 1) * sizeof(double));
  if (!ov || !iv || !tc || !tr) { fprintf(stderr, "replication: out of memory\n"); return 1; }
  for (int64_t j = 0; j < ids.len; j++) ov[j] = pl_value(node, ids.ids[j]);
  float *expect = o.check ? pl_brute_force(&o, lambda, m) : NULL; /* streams 2*node, node < m */
  int64_t bad = 0;

  int pipe_w = -1;
  pid_t stopper = -1;
  if (rank == slow) stopper = start_stopper(stop_ms, period_ms, &pipe_w);

  kylix_plan *p;
  must(kylix_config(comm, ids.ids, ids.len, ids.ids, ids.len, &p), "config"); /* warm-up */
  must(kylix_reduce(p, ov, iv, KYLIX_F32, KYLIX_SUM, 1), "reduce");
  if (expect) bad += pl_mismatches(expect, ids.ids, ids.len, iv);
  must(kylix_plan_free(p), "plan_free");
  must(kylix_barrier(comm), "barrier");
  if (me_dead) raise(SIGKILL);
  for (double until = now() + 10;;) { /* the deaths are seen before timing starts */
    int32_t n = 0;
    kylix_failed_ranks(comm, NULL, 0, &n);
    if (n >= ndead) break;
    if (now() > until) {
      fprintf(stderr, "replication: rank %d sees %d of %d deaths\n", rank, n, ndead);
      return 1;
    }
    nap_ms(5);
  }

  must(kylix_barrier(comm), "barrier");
  tc[0] = now();
  for (int i = 1; i <= configs; i++) {
    must(kylix_config(comm, ids.ids, ids.len, ids.ids, ids.len, &p), "config");
    tc[i] = now();
    if (i < configs) must(kylix_plan_free(p), "plan_free");
  }
  must(kylix_barrier(comm), "barrier");
  tr[0] = now();
  for (int i = 1; i <= reduces; i++) {
    must(kylix_reduce(p, ov, iv, KYLIX_F32, KYLIX_SUM, 1), "reduce");
    tr[i] = now();
  }
  if (expect) bad += pl_mismatches(expect, ids.ids, ids.len, iv);
  must(kylix_plan_free(p), "plan_free");
  if (stopper > 0) {
    close(pipe_w);
    waitpid(stopper, NULL, 0);
  }
  /* Lines of thousands of timestamps are longer than a pipe writes at once (PIPE_BUF): the
   * ranks' lines would interleave on a shared stdout, so with enddir each rank has a file. */
  const char *enddir = opt_str(argc, argv, "enddir", "BENCH_ENDDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/times.%d", enddir, rank);
  FILE *f = *enddir ? fopen(path, "w") : stdout;
  if (!f) { perror(path); return 1; }
  print_times(f, rank, node, "config", tc, configs);
  print_times(f, rank, node, "reduce", tr, reduces);
  fprintf(f, "CHECK rank=%d bad=%lld checked=%d keys=%lld\n", rank, (long long)bad,
          expect != NULL, (long long)ids.len);
  if (f == stdout) fflush(f); else fclose(f);
  /* Nobody finalizes before every survivor is done: a replica that lags (the slowed one does)
   * may still be reading the others' last messages, and a finalize closing under it can fail
   * its call (see results-replication.md). Collectives wait for one replica per node only, so
   * the survivors meet on files in enddir (given by run_replication.sh). */
  if (*enddir) {
    snprintf(path, sizeof path, "%s/done.%d", enddir, rank);
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
    for (double until = now() + 120; now() < until; nap_ms(10)) {
      int n = 0;
      for (int r = 0; r < size; r++) {
        snprintf(path, sizeof path, "%s/done.%d", enddir, r);
        n += access(path, F_OK) == 0;
      }
      if (n >= size - ndead) break;
    }
  }
  kylix_finalize(comm);
  return bad != 0;
}
