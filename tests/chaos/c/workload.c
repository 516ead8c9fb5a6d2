/*
 * workload.c - the checked program of the chaos harness (tests/chaos): one
 * process of an elastic job under `kylixrun --elastic --restarts R`, or a
 * joiner started by kylixrun (a relaunch) or by `kylixrun --join`.
 *
 * Every step runs, on the current comm, a sparse config_reduce (I64 SUM,
 * width 2, repeated out indices), a reduce on the plan kept since the last
 * change of membership (F64 SUM of integer values: exact), a dense allreduce
 * (I64 SUM), a dense allreduce with KYLIX_RSUM and a bcast from node
 * step % nodes. Each node's data is a function of (step, node) only (or
 * (epoch, node) for the kept plan's index sets), so every rank recomputes
 * every node's contribution from the membership of that step and checks each
 * answer against it; RSUM is checked bitwise against the same multiset of
 * contributions reduced by a private one-rank comm (RSUM promises the same
 * bits whatever the number of ranks). Replicas of a node compute the same
 * data, as replication requires.
 *
 * After every change of membership, every member checks that all have the
 * same digest of kylix_members (an allreduce of it); the first node whose
 * replicas all survived broadcasts (step, epoch), and every member takes the
 * smallest of the copies the ranks got (a node's replicas can be a step
 * apart: sync_comm). A call
 * that fails with PEER or TIMEOUT (or STATE on a broken comm) makes the
 * process call kylix_resize and redo the step on the new comm; every
 * RESIZE_EVERY steps the members resize anyway, which admits joiners.
 *
 * What the harness reads: this process's state record, a fixed-size line
 * rewritten in place in $CHAOS_STATE/p<pid> after every phase and step
 * (counts of checks, wrong answers, calls past their bound, unexpected
 * statuses, resizes; fds, threads and RSS), what its descriptors were warm and
 * at its end ($CHAOS_STATE/fds-<pid>), and "CHAOS WRONG|LATE|BAD ..." lines on
 * stdout for each problem.
 *
 * Environment (set by the harness; kylixrun adds the KYLIX_ variables):
 *   CHAOS_STATE      directory of the state records (required)
 *   CHAOS_END        file holding the last step; the job ends after it
 *   CHAOS_BOUND_MS   a call taking longer than this is past its bound
 *   CHAOS_RV         rendezvous (members) or join (joiners) address to use
 *                    instead of kylixrun's, for ranks in network namespaces
 *   CHAOS_NETNS      "nsA,nsB": the process moves itself into one of them
 *                    (by launch rank, or pid for joiners) and re-executes
 *   CHAOS_REPL       the job's replication (joiners are not told it)
 *   CHAOS_RESIZE_EVERY, CHAOS_SLEEP_MS   pacing (32, 10)
 * SIGUSR1 asks the process to leave: at the next step it finalizes its comm
 * and exits with status 3.
 *
 * usage: workload TOKEN   (TOKEN names the harness's job in the process list)
 */
#define _GNU_SOURCE 1
#include <kylix.h>

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "../../c/procstat.h"

#define UNIV 8192 /* sparse index universe */
#define WIDTH 2
#define MAXR 256
#define RSUM_N 64
#define MAX_DENSE 3000
#define MAX_BCAST 70000
/* On one host a bcast goes up to 600 kB: from 256 KiB a message between ranks of a host goes by
   reference (the peer copies it out of the sender's memory), so kills, stops and resizes also
   meet copies in flight. Across the namespaces 70 kB, so that a link held to 2 Mbit/s stays
   within the calls' bounds. */
#define MAX_BCAST_HOST 600000
static int64_t max_bcast = MAX_BCAST;

enum { K_SPARSE, K_PLAN, K_DENSE, K_RSUM, K_BCAST, K_MEMBERS, NKIND };
static const char *kind_name[NKIND] = {"sparse", "plan", "dense", "rsum", "bcast", "members"};

/* exit statuses the harness tells apart */
enum { EXIT_LEFT = 3, EXIT_GAVE_UP = 4, EXIT_NOT_ADMITTED = 5, EXIT_SETUP = 6 };

static kylix_comm *C, *L; /* the job's comm; a private one-rank comm for RSUM references */
static int rank_ = -1, size_, repl = 1, nodes, node;
static int64_t step, epoch, end_step = -1, last_resize = -1;
static int joiner;
static const char *end_file;
static double bound_ms = 1e12;
static volatile sig_atomic_t leave_asked;

static struct {
  int64_t checks[NKIND], wrong, late, bad, resizes, resets, maxms;
  long fd0, fd1, thr0, thr1, rss0, rss1;
} S;
static int state_fd = -1;
static const char *phase = "start";

/* ---------------------------------------------------------------- data */

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static uint64_t h4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return mix(mix(mix(mix(a) ^ b) ^ c) ^ d);
}

enum { S_OUT = 1, S_IN, S_VAL, S_POUT, S_PIN, S_PVAL, S_DENSE, S_RSUM, S_BCAST, S_COUNT };

/* node n's out indices at step (or epoch, for the plan): unsorted, repeats allowed */
static int64_t n_out_of(uint64_t stream, int64_t t, int n) { return 40 + (int64_t)(h4(stream, t, n, 0) % 200); }
static int64_t out_idx(uint64_t stream, int64_t t, int n, int64_t e) { return (int64_t)(h4(stream, t, n, e + 1) % UNIV); }
static int64_t sval(int64_t t, int n, int64_t e, int w) { return (int64_t)(h4(S_VAL, t, n, e * 4 + w) % 2001) - 1000; }
static double pval(int64_t t, int n, int64_t e) { return (double)((int64_t)(h4(S_PVAL, t, n, e) % 4001) - 2000); }
static int64_t dval(int64_t t, int n, int64_t i) { return (int64_t)(h4(S_DENSE, t, n, i) % (1u << 20)) - (1 << 19); }
static double rval(int64_t t, int n, int64_t i) {
  uint64_t h = h4(S_RSUM, t, n, i);
  return ldexp((double)(h >> 11) / 9007199254740992.0 - 0.5, (int)(h % 61) - 30);
}
static int64_t dense_count(int64_t t) { return 1 + (int64_t)(h4(S_COUNT, t, 0, 0) % MAX_DENSE); }
static int64_t bcast_len(int64_t t) { return 1 + (int64_t)(h4(S_COUNT, t, 1, 0) % (uint64_t)max_bcast); }
static unsigned char bbyte(int64_t t, int root, int64_t i) { return (unsigned char)h4(S_BCAST, t, root, i / 8) >> (i % 8); }

/* ---------------------------------------------------------------- state record */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void save_state(void) {
  char b[512];
  int n = snprintf(b, sizeof b,
                   "pid=%d ppid=%d phase=%s rank=%d size=%d repl=%d epoch=%" PRId64 " step=%" PRId64
                   " sparse=%" PRId64 " plan=%" PRId64 " dense=%" PRId64 " rsum=%" PRId64 " bcast=%" PRId64
                   " members=%" PRId64 " wrong=%" PRId64 " late=%" PRId64 " bad=%" PRId64 " resizes=%" PRId64
                   " resets=%" PRId64 " maxms=%" PRId64 " fd0=%ld fd1=%ld thr0=%ld thr1=%ld rss0=%ld rss1=%ld",
                   (int)getpid(), (int)getppid(), phase, rank_, size_, repl, epoch, step, S.checks[K_SPARSE],
                   S.checks[K_PLAN], S.checks[K_DENSE], S.checks[K_RSUM], S.checks[K_BCAST], S.checks[K_MEMBERS],
                   S.wrong, S.late, S.bad, S.resizes, S.resets, S.maxms, S.fd0, S.fd1, S.thr0, S.thr1, S.rss0, S.rss1);
  if (n < 0 || n >= (int)sizeof b - 1) n = (int)sizeof b - 2;
  memset(b + n, ' ', sizeof b - 1 - (size_t)n); /* fixed size: a reader never sees a shorter old tail */
  b[sizeof b - 1] = '\n';
  if (state_fd >= 0 && pwrite(state_fd, b, sizeof b, 0) < 0) perror("workload: state record");
}

static void set_phase(const char *p) {
  phase = p;
  save_state();
}

static void report(const char *kind, const char *fmt, ...) {
  char m[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  printf("CHAOS %s pid=%d rank=%d size=%d epoch=%" PRId64 " step=%" PRId64 ": %s\n", kind, (int)getpid(), rank_,
         size_, epoch, step, m);
  fflush(stdout);
}

static double wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* timed runs a library call and counts it past its bound when it took longer; the LATE line
   says when the call ran (Unix ms), so the harness can tell which faults were in flight. */
#define timed(what, call)                                                                      \
  ({                                                                                           \
    double t0_ = now_ms(), w0_ = wall_ms();                                                    \
    int st_ = (call);                                                                          \
    double dt_ = now_ms() - t0_;                                                               \
    if (dt_ > S.maxms) S.maxms = (int64_t)dt_;                                                 \
    if (dt_ > bound_ms) {                                                                      \
      S.late++;                                                                                \
      report("LATE", "%s took %.0f ms (bound %.0f ms), returned %s: %s [wall %.0f %.0f]", what, \
             dt_, bound_ms, kylix_strerror(st_), st_ ? kylix_errmsg(C) : "", w0_, w0_ + dt_);   \
    }                                                                                          \
    st_;                                                                                       \
  })

static void wrong(int kind, const char *fmt, ...) {
  char m[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  S.wrong++;
  report("WRONG", "%s: %s", kind_name[kind], m);
}

/* ---------------------------------------------------------------- membership */

static void refresh(void) {
  rank_ = kylix_rank(C);
  size_ = kylix_size(C);
  nodes = size_ / repl;
  node = rank_ % nodes;
}

static uint64_t members_digest(int32_t *prev, int32_t n) {
  uint64_t h = mix((uint64_t)n);
  for (int i = 0; i < n; i++) h = mix(h ^ (uint64_t)(uint32_t)prev[i]);
  return h;
}

/* status of a collective: OK, or a failure the process recovers from by resizing */
static int failed(int st, const char *what) {
  if (st == KYLIX_OK) return 0;
  if (st != KYLIX_ERR_PEER && st != KYLIX_ERR_TIMEOUT && st != KYLIX_ERR_STATE) {
    S.bad++;
    report("BAD", "%s returned %s: %s", what, kylix_strerror(st), kylix_errmsg(C));
  }
  return 1;
}

static kylix_plan *plan;
static int resizes_in_a_row; /* since the last step that went through */
static int64_t on_comm;      /* steps on the current comm */
static long base_fd[MAXR], base_rss[MAXR];
static char *base_fdlist[MAXR];

/* socket_name finds socket inode ino in one of this process's socket tables (its network
   namespace's): "tcp 0100007F:9C40 0100007F:A0B2 st 01" (addresses and state as the kernel
   prints them), "unix path", or "" when it is in none. */
static void socket_name(const char *ino, char *out, size_t n) {
  static const char *tables[] = {"tcp", "tcp6", "udp", "udp6", "unix"};
  out[0] = 0;
  for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/self/net/%s", tables[t]);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    while (fgets(line, sizeof line, f)) {
      char *tok[12];
      int k = 0;
      for (char *sv, *w = strtok_r(line, " \n", &sv); w && k < 12; w = strtok_r(NULL, " \n", &sv)) tok[k++] = w;
      if (t == 4) { /* unix: Num RefCount Protocol Flags Type St Inode [Path] */
        if (k >= 7 && !strcmp(tok[6], ino)) snprintf(out, n, "unix type %s st %s %s", tok[4], tok[5], k > 7 ? tok[7] : "");
      } else if (k >= 10 && !strcmp(tok[9], ino)) {
        snprintf(out, n, "%s %s %s st %s", tables[t], tok[1], tok[2], tok[3]);
      }
      if (out[0]) break;
    }
    fclose(f);
    if (out[0]) return;
  }
}

/* fd_list lists this process's descriptors, one "fd target [what]" a line (malloc'd): what a
   descriptor is, so that a count that grew says which kind did (a socket and its peer, an
   eventfd, a memfd's name). */
static char *fd_list(void) {
  size_t cap = 1 << 14, len = 0;
  char *out = malloc(cap);
  if (!out) return NULL;
  out[0] = 0;
  /* the numbers first: looking a socket up opens files, which must not join the listing */
  int fds[1024], nfd = 0;
  DIR *d = opendir("/proc/self/fd");
  struct dirent *e;
  while (d && (e = readdir(d)) && nfd < 1024)
    if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d)) fds[nfd++] = atoi(e->d_name);
  if (d) closedir(d);
  for (int i = 0; i < nfd; i++) {
    char path[64], target[300] = "", what[300] = "";
    snprintf(path, sizeof path, "/proc/self/fd/%d", fds[i]);
    ssize_t k = readlink(path, target, sizeof target - 1);
    if (k < 0) continue;
    target[k] = 0;
    if (!strncmp(target, "socket:[", 8)) {
      char ino[32];
      snprintf(ino, sizeof ino, "%.*s", (int)strcspn(target + 8, "]"), target + 8);
      socket_name(ino, what, sizeof what);
    } else if (!strcmp(target, "anon_inode:[pidfd]") || !strcmp(target, "anon_inode:[eventfd]")) {
      /* which process a pidfd pins (-1: exited), which eventfd object (the same id in both
         processes of a shared-memory pair) */
      char line[128];
      snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fds[i]);
      FILE *f = fopen(path, "r");
      while (f && fgets(line, sizeof line, f)) {
        long v;
        if (sscanf(line, "Pid: %ld", &v) == 1) snprintf(what, sizeof what, "pid %ld", v);
        if (sscanf(line, "eventfd-id: %ld", &v) == 1) snprintf(what, sizeof what, "id %ld", v);
      }
      if (f) fclose(f);
    }
    if (len + 700 > cap) {
      char *b = realloc(out, cap *= 2);
      if (!b) break;
      out = b;
    }
    len += (size_t)snprintf(out + len, cap - len, "%d %s%s%s\n", fds[i], target, what[0] ? " " : "", what);
  }
  /* a segment's fd is closed once both sides mapped it: its mappings are what is left of it */
  FILE *m = fopen("/proc/self/maps", "r");
  char line[512];
  int segs = 0;
  while (m && fgets(line, sizeof line, m)) segs += strstr(line, "/memfd:kylix-shm") != NULL;
  if (m) fclose(m);
  if (len + 100 < cap) snprintf(out + len, cap - len, "maps %d memfd:kylix-shm\n", segs);
  return out;
}

/* save_fd_lists writes the warm and the final descriptor lists to $CHAOS_STATE/fds-<pid>, for
   the harness to name what a process that grew holds. */
static void save_fd_lists(const char *warm, const char *end) {
  const char *dir = getenv("CHAOS_STATE");
  char path[4096];
  snprintf(path, sizeof path, "%s/fds-%d", dir, (int)getpid());
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "warm:\n%sdone:\n%s", warm ? warm : "", end ? end : "");
  fclose(f);
}

/* the members of C that are not known dead: with replication, dead replicas stay members */
static int live_members(void) {
  int32_t failed[MAXR], nf = 0;
  if (kylix_failed_ranks(C, failed, MAXR, &nf) != KYLIX_OK) nf = 0;
  int live = size_ - nf;
  return live > 0 && live < MAXR ? live : 0;
}
static int64_t plan_out[512], plan_in[512], plan_nout, plan_nin;

/* After a change of comm: rank 0 says where the job is and which membership it has; then the
   plan of this membership. Returns 0 when a collective failed. */
static int sync_comm(int32_t old_rank) {
  int32_t prev[MAXR], n = -1;
  if (kylix_members(C, prev, MAXR, &n) != KYLIX_OK || n != size_) {
    wrong(K_MEMBERS, "kylix_members gave %d entries for size %d", n, size_);
    return 0;
  }
  if (prev[rank_] != old_rank)
    wrong(K_MEMBERS, "kylix_members says rank %d was %d before, this process was %d", rank_, prev[rank_], old_rank);
  int32_t last = -1;
  for (int i = 0; i < n; i++) {
    if (prev[i] < 0) continue;
    if (prev[i] <= last) wrong(K_MEMBERS, "kylix_members: survivors out of order at rank %d (%d after %d)", i, prev[i], last);
    last = prev[i];
  }
  /* Every member has the same membership: the largest and the smallest digest are its own. */
  uint64_t mine = members_digest(prev, n);
  int64_t dg[2] = {(int64_t)(mine >> 1), -(int64_t)(mine >> 1)}, dr[2];
  if (failed(timed("allreduce(members)", kylix_allreduce(C, dg, dr, 2, KYLIX_I64, KYLIX_MAX)), "allreduce(members)"))
    return 0;
  if (dr[0] != dg[0] || dr[1] != dg[1])
    wrong(K_MEMBERS, "members digests range over [%016" PRIx64 ", %016" PRIx64 "], this rank's %016" PRIx64,
          (uint64_t)-dr[1] << 1, (uint64_t)dr[0] << 1, mine);
  S.checks[K_MEMBERS]++;

  /* The state comes from the first node all of whose replicas are survivors: replicas send
     the same data, and a joiner in a dead replica's place knows nothing yet. With none, the
     job's state is lost and everyone starts again from step 0. */
  int root = -1;
  for (int j = 0; j < nodes && root < 0; j++) {
    root = j;
    for (int k = 0; k < repl; k++)
      if (prev[k * nodes + j] < 0) root = -1;
  }
  int64_t hdr[3] = {0x6368616f73, step, epoch};
  if (root < 0) {
    hdr[1] = hdr[2] = 0;
    S.resets++;
    report("INFO", "every node has a joiner: the state starts again from step 0");
  } else if (failed(timed("bcast(state)", kylix_bcast(C, hdr, sizeof hdr, root)), "bcast(state)")) {
    return 0;
  }
  if (hdr[0] != 0x6368616f73) wrong(K_MEMBERS, "the state from node %d has magic %" PRIx64, root, (uint64_t)hdr[0]);
  /* The replicas of that node may hold different steps: one finished a step whose last call
     failed on the other (a failure is each rank's own; with replication the racing copies let
     one replica's call through), and each rank took one replica's copy of the bcast. Every
     member then gave its replica's step, and replicas gave different index lists at every step
     after (seed 52501 of run_chaos.sh: 30 resizes, each followed by MISMATCH, then GAVEUP). The
     smallest is one every member can redo. */
  int64_t se[2] = {hdr[1], hdr[2]}, least[2];
  if (failed(timed("allreduce(state)", kylix_allreduce(C, se, least, 2, KYLIX_I64, KYLIX_MIN)), "allreduce(state)"))
    return 0;
  step = least[0];
  epoch = least[1];
  last_resize = step; /* a membership made at this step needs no periodic resize here */

  if (plan) kylix_plan_free(plan);
  plan = NULL;
  plan_nout = n_out_of(S_POUT, epoch, node);
  plan_nin = 1 + (int64_t)(h4(S_PIN, epoch, node, 0) % 300);
  for (int64_t e = 0; e < plan_nout; e++) plan_out[e] = out_idx(S_POUT, epoch, node, e);
  for (int64_t e = 0; e < plan_nin; e++) plan_in[e] = (int64_t)(h4(S_PIN, epoch, node, e + 1) % UNIV);
  if (failed(timed("config", kylix_config(C, plan_out, plan_nout, plan_in, plan_nin, &plan)), "config")) return 0;
  return 1;
}

/* kylix_resize until it succeeds, then the sync on the new comm; exits when this process was
   left out (the others went on without it) or keeps failing. */
static void resize(void) {
  if (++resizes_in_a_row > 30) {
    report("GAVEUP", "%d resizes in a row without a step going through", resizes_in_a_row - 1);
    set_phase("gaveup");
    exit(EXIT_GAVE_UP);
  }
  for (int attempt = 0;; attempt++) {
    set_phase("resize");
    kylix_comm *next = NULL;
    int st = timed("resize", kylix_resize(C, 0, &next));
    if (st == KYLIX_OK) {
      int32_t old = rank_;
      if (plan) kylix_plan_free(plan);
      plan = NULL;
      kylix_finalize(C);
      C = next;
      refresh();
      on_comm = 0;
      epoch++;
      S.resizes++;
      set_phase("member");
      if (sync_comm(old)) return;
      continue; /* a failure right after: resize the new comm */
    }
    const char *m = kylix_errmsg(C);
    if (st != KYLIX_ERR_PEER && st != KYLIX_ERR_TIMEOUT && st != KYLIX_ERR_NET) {
      S.bad++;
      report("BAD", "resize returned %s: %s", kylix_strerror(st), m);
    }
    if (attempt >= 8 || (m && strstr(m, "more than half"))) {
      report("GAVEUP", "resize attempt %d: %s: %s", attempt, kylix_strerror(st), m ? m : "");
      set_phase("gaveup");
      exit(EXIT_GAVE_UP);
    }
  }
}

/* ---------------------------------------------------------------- one step */

static int64_t sref[UNIV * WIDTH];
static double pref[UNIV];

static int sparse_step(void) {
  static int64_t out[256], in[512], ov[256 * WIDTH], iv[512 * WIDTH];
  int64_t n_out = n_out_of(S_OUT, step, node), n_in = 1 + (int64_t)(h4(S_IN, step, node, 0) % 500);
  for (int64_t e = 0; e < n_out; e++) {
    out[e] = out_idx(S_OUT, step, node, e);
    for (int w = 0; w < WIDTH; w++) ov[e * WIDTH + w] = sval(step, node, e, w);
  }
  for (int64_t e = 0; e < n_in; e++) in[e] = (int64_t)(h4(S_IN, step, node, e + 1) % UNIV);
  int st = timed("config_reduce", kylix_config_reduce(C, out, n_out, ov, in, n_in, iv, KYLIX_I64, KYLIX_SUM, WIDTH, NULL));
  if (failed(st, "config_reduce")) return 0;
  memset(sref, 0, sizeof sref);
  for (int n = 0; n < nodes; n++)
    for (int64_t e = 0, k = n_out_of(S_OUT, step, n); e < k; e++)
      for (int w = 0; w < WIDTH; w++) sref[out_idx(S_OUT, step, n, e) * WIDTH + w] += sval(step, n, e, w);
  for (int64_t j = 0; j < n_in * WIDTH; j++)
    if (iv[j] != sref[in[j / WIDTH] * WIDTH + j % WIDTH]) {
      wrong(K_SPARSE, "in[%" PRId64 "] (index %" PRId64 ") = %" PRId64 ", want %" PRId64 " over %d nodes", j / WIDTH,
            in[j / WIDTH], iv[j], sref[in[j / WIDTH] * WIDTH + j % WIDTH], nodes);
      break;
    }
  S.checks[K_SPARSE]++;
  return 1;
}

static int plan_step(void) {
  static double ov[512], iv[512];
  for (int64_t e = 0; e < plan_nout; e++) ov[e] = pval(step, node, e);
  if (failed(timed("reduce", kylix_reduce(plan, ov, iv, KYLIX_F64, KYLIX_SUM, 1)), "reduce")) return 0;
  memset(pref, 0, sizeof pref);
  for (int n = 0; n < nodes; n++)
    for (int64_t e = 0, k = n_out_of(S_POUT, epoch, n); e < k; e++) pref[out_idx(S_POUT, epoch, n, e)] += pval(step, n, e);
  for (int64_t j = 0; j < plan_nin; j++)
    if (iv[j] != pref[plan_in[j]]) {
      wrong(K_PLAN, "in[%" PRId64 "] (index %" PRId64 ") = %.17g, want %.17g over %d nodes", j, plan_in[j], iv[j],
            pref[plan_in[j]], nodes);
      break;
    }
  S.checks[K_PLAN]++;
  return 1;
}

static int dense_step(void) {
  static int64_t send[MAX_DENSE], recv[MAX_DENSE];
  int64_t cnt = dense_count(step);
  for (int64_t i = 0; i < cnt; i++) send[i] = dval(step, node, i);
  if (failed(timed("allreduce", kylix_allreduce(C, send, recv, cnt, KYLIX_I64, KYLIX_SUM)), "allreduce")) return 0;
  for (int64_t i = 0; i < cnt; i++) {
    int64_t want = 0;
    for (int n = 0; n < nodes; n++) want += dval(step, n, i);
    if (recv[i] != want) {
      wrong(K_DENSE, "element %" PRId64 " of %" PRId64 " = %" PRId64 ", want %" PRId64 " over %d nodes", i, cnt, recv[i],
            want, nodes);
      break;
    }
  }
  S.checks[K_DENSE]++;
  return 1;
}

static int rsum_step(void) {
  static double send[RSUM_N], recv[RSUM_N], all[MAXR * RSUM_N], ref[RSUM_N];
  static int64_t allidx[MAXR * RSUM_N], in[RSUM_N];
  for (int64_t i = 0; i < RSUM_N; i++) send[i] = rval(step, node, i);
  if (failed(timed("allreduce(RSUM)", kylix_allreduce(C, send, recv, RSUM_N, KYLIX_F64, KYLIX_RSUM)), "allreduce(RSUM)"))
    return 0;
  /* the same multiset of (element, value) contributions, reduced by one rank */
  int64_t k = 0;
  for (int n = nodes - 1; n >= 0; n--) /* another order than any butterfly's */
    for (int64_t i = 0; i < RSUM_N; i++, k++) {
      allidx[k] = (i * 7 + n) % RSUM_N;
      all[k] = rval(step, n, allidx[k]);
    }
  for (int64_t i = 0; i < RSUM_N; i++) in[i] = i;
  int st = kylix_config_reduce(L, allidx, k, all, in, RSUM_N, ref, KYLIX_F64, KYLIX_RSUM, 1, NULL);
  if (st != KYLIX_OK) {
    S.bad++;
    report("BAD", "the one-rank RSUM reference returned %s: %s", kylix_strerror(st), kylix_errmsg(L));
    return 1;
  }
  for (int64_t i = 0; i < RSUM_N; i++)
    if (memcmp(&recv[i], &ref[i], sizeof(double)) != 0) {
      wrong(K_RSUM, "element %" PRId64 " = %a, the one-rank reduction of the same contributions %a (%d nodes)", i,
            recv[i], ref[i], nodes);
      break;
    }
  S.checks[K_RSUM]++;
  return 1;
}

static int bcast_step(void) {
  static unsigned char buf[MAX_BCAST_HOST];
  int64_t len = bcast_len(step);
  int root = (int)(step % nodes);
  for (int64_t i = 0; i < len; i++) buf[i] = node == root ? bbyte(step, root, i) : 0xa5;
  if (failed(timed("bcast", kylix_bcast(C, buf, len, root)), "bcast")) return 0;
  for (int64_t i = 0; i < len; i++)
    if (buf[i] != bbyte(step, root, i)) {
      wrong(K_BCAST, "byte %" PRId64 " of %" PRId64 " from node %d = %d, want %d", i, len, root, buf[i],
            bbyte(step, root, i));
      break;
    }
  S.checks[K_BCAST]++;
  return 1;
}

static void read_end(void) {
  FILE *f = end_file ? fopen(end_file, "r") : NULL;
  long long e;
  if (f && fscanf(f, "%lld", &e) == 1) end_step = e;
  if (f) fclose(f);
}

/* ---------------------------------------------------------------- set-up */

/* Ranks of a job spread over two network namespaces: move into one, then run afresh there
   (the library's runtime threads were started in the namespace the process began in). */
static void enter_netns(char **argv) {
  const char *spec = getenv("CHAOS_NETNS");
  if (!spec || getenv("CHAOS_IN_NETNS")) return;
  char a[64], b[64];
  if (sscanf(spec, "%63[^,],%63s", a, b) != 2) {
    fprintf(stderr, "workload: CHAOS_NETNS=%s is not nsA,nsB\n", spec);
    exit(EXIT_SETUP);
  }
  const char *r = getenv("KYLIX_RANK");
  int side = (r && !getenv("KYLIX_JOIN")) ? atoi(r) % 2 : (int)(getpid() % 2);
  char path[128];
  snprintf(path, sizeof path, "/run/netns/%s", side ? b : a);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    perror(path);
    exit(EXIT_SETUP);
  }
  close(fd);
  setenv("CHAOS_IN_NETNS", side ? b : a, 1);
  execv("/proc/self/exe", argv);
  perror("workload: execv");
  exit(EXIT_SETUP);
}

static void on_usr1(int sig) {
  (void)sig;
  leave_asked = 1;
}

int main(int argc, char **argv) {
  (void)argc;
  enter_netns(argv);
  if (!getenv("CHAOS_NETNS")) max_bcast = MAX_BCAST_HOST;
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *dir = getenv("CHAOS_STATE");
  if (!dir) {
    fprintf(stderr, "workload: CHAOS_STATE is not set\n");
    return EXIT_SETUP;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/p%d", dir, (int)getpid());
  state_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  end_file = getenv("CHAOS_END");
  if (getenv("CHAOS_BOUND_MS")) bound_ms = atof(getenv("CHAOS_BOUND_MS"));
  int resize_every = getenv("CHAOS_RESIZE_EVERY") ? atoi(getenv("CHAOS_RESIZE_EVERY")) : 32;
  int sleep_ms = getenv("CHAOS_SLEEP_MS") ? atoi(getenv("CHAOS_SLEEP_MS")) : 10;
  signal(SIGUSR1, on_usr1);
  joiner = getenv("KYLIX_JOIN") != NULL;
  /* kylixrun gives joiners no KYLIX_REPLICATION: the harness says it to everyone */
  if (getenv("CHAOS_REPL")) repl = atoi(getenv("CHAOS_REPL"));
  set_phase(joiner ? "joining" : "start");

  char opts[256] = "";
  const char *rv = getenv("CHAOS_RV");
  if (rv) snprintf(opts, sizeof opts, "%s=%s", joiner ? "join" : "rendezvous", rv);
  int st;
  /* A joiner waits to be admitted as long as it takes: with replication a resize admits
     nobody while fewer joiners wait than dead replicas are to be replaced. kylixrun stops
     the joiners still waiting at the job's end. */
  while ((st = timed("init", kylix_init(opts, &C))) == KYLIX_ERR_TIMEOUT && joiner) {}
  if (st != KYLIX_OK) {
    const char *m = kylix_errmsg(NULL);
    report(joiner ? "NOTADMITTED" : "GAVEUP", "kylix_init: %s: %s", kylix_strerror(st), m ? m : "");
    set_phase("gaveup");
    return joiner ? EXIT_NOT_ADMITTED : EXIT_GAVE_UP;
  }
  refresh();
  /* the job's KYLIX_ variables apply to it too, unless the string says otherwise */
  if ((st = kylix_init("rank=0;size=1;replication=1;elastic=0;join=;rendezvous=;degrees=auto;shm=off", &L)) != KYLIX_OK) {
    report("BAD", "the one-rank comm: %s: %s", kylix_strerror(st), kylix_errmsg(NULL));
    return EXIT_SETUP;
  }
  set_phase("member");
  if (!sync_comm(joiner ? -1 : rank_)) resize();

  int64_t done = 0;
  for (;;) {
    if (leave_asked) {
      set_phase("left");
      report("LEFT", "leaving on request");
      kylix_finalize(C);
      kylix_finalize(L);
      return EXIT_LEFT;
    }
    if (resize_every > 0 && step % resize_every == 0 && step != last_resize && step > 0) {
      last_resize = step;
      resize();
      continue;
    }
    if (!(sparse_step() && plan_step() && dense_step() && rsum_step() && bcast_step())) {
      resize();
      continue;
    }
    resizes_in_a_row = 0;
    /* Baselines once the process is warm: descriptors and RSS per number of live members (a
       comm holds a connection, shared memory and buffers for each live peer; a dead replica
       stays a member with none), threads once. */
    /* live_members() once: a failure found meanwhile must not file the counts under two */
    if (++on_comm == 30) {
      int lm = live_members();
      if (!base_fd[lm]) base_fd[lm] = count_fds(), base_rss[lm] = proc_status("VmRSS"), base_fdlist[lm] = fd_list();
    }
    if (++done == 30) S.thr0 = proc_status("Threads");
    read_end();
    set_phase("member");
    if (end_step >= 0 && step >= end_step) break;
    step++;
    if (sleep_ms > 0) nanosleep(&(struct timespec){0, (long)sleep_ms * 1000000L}, NULL);
  }
  /* The counts before the final barrier: no peer can be through it yet, so none has
     finalized and taken its connection and segment with it, and every process counts the
     same comm it had warm. */
  int lm = live_members();
  S.fd0 = base_fd[lm], S.rss0 = base_rss[lm], S.fd1 = count_fds(), S.thr1 = proc_status("Threads"), S.rss1 = proc_status("VmRSS");
  char *end_fds = fd_list();
  save_fd_lists(base_fdlist[lm], end_fds);
  free(end_fds);
  st = timed("barrier", kylix_barrier(C));
  if (st != KYLIX_OK) report("INFO", "the final barrier returned %s: %s", kylix_strerror(st), kylix_errmsg(C));
  if (plan) kylix_plan_free(plan);
  set_phase("done");
  report("DONE", "%" PRId64 " steps on this process, %" PRId64 " resizes", done, S.resizes);
  kylix_finalize(C);
  kylix_finalize(L);
  return 0;
}
