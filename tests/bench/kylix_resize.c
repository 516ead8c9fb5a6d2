/* kylix_resize.c — what a change of membership costs: kylix_resize with 0 and with J joiners,
 * against kylix_shrink (a resize that admits nobody) and a fresh kylix_init of the same ranks.
 * Run by run_resize.sh; results in results-elastic.md.
 *
 *   kylixrun -n N --elastic --job-file F kylix_resize base REPS
 *       REPS each of: resize(0) of a healthy comm, shrink of a healthy comm, and a fresh
 *       kylix_init of N ranks from a static peers table (ports picked by the ranks, exchanged
 *       over the running comm), each followed by kylix_finalize of the comm it replaced
 *   kylixrun -n N --elastic --job-file F kylix_resize join REPS J   and, alongside,
 *   kylixrun --join F -n J kylix_resize join REPS J
 *       REPS resizes that admit the J joiners (they wait at the join port when it starts), after
 *       which the joiners finalize and join again, and the members drop them with a shrink
 *       (not timed)
 *
 * Each timed call starts after a barrier and counts as the slowest rank's time (an allreduce
 * MAX on the comm it made). Rank 0 prints one line per case:
 *   case=resize0 ranks=4 joiners=0 reps=20 median_ms=1.234 min_ms=1.0 max_ms=2.0
 */
#define _POSIX_C_SOURCE 200809L
#include "kylix.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static kylix_comm *comm; /* for must's message */

static void must(int st, const char *what) {
  if (st == KYLIX_OK) return;
  fprintf(stderr, "kylix_resize: %s: %s: %s\n", what, kylix_strerror(st), kylix_errmsg(comm));
  exit(1);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double slowest_ms(kylix_comm *c, double t0, double t1) {
  double dt = (t1 - t0) * 1e3;
  must(kylix_allreduce(c, &dt, &dt, 1, KYLIX_F64, KYLIX_MAX), "allreduce max");
  return dt;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void report(const char *name, int ranks, int joiners, double *ms, int reps) {
  if (kylix_rank(comm) != 0) return;
  qsort(ms, (size_t)reps, sizeof *ms, cmp);
  double med = reps % 2 ? ms[reps / 2] : (ms[reps / 2 - 1] + ms[reps / 2]) / 2;
  printf("case=%s ranks=%d joiners=%d reps=%d median_ms=%.3f min_ms=%.3f max_ms=%.3f\n", name,
         ranks, joiners, reps, med, ms[0], ms[reps - 1]);
  fflush(stdout);
}

/* a free loopback port (bound, read, closed: the usual small race, fine on a quiet host) */
static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || getsockname(s, (struct sockaddr *)&a, &len)) {
    perror("free_port");
    exit(1);
  }
  close(s);
  return ntohs(a.sin_port);
}

/* one fresh kylix_init of the comm's ranks from a static table; returns the slowest rank's ms */
static double fresh_init(int rep) {
  int rank = kylix_rank(comm), size = kylix_size(comm);
  int64_t *ports = calloc((size_t)size, sizeof *ports);
  ports[rank] = free_port();
  must(kylix_allreduce(comm, ports, ports, size, KYLIX_I64, KYLIX_MAX), "allreduce ports");
  char *opts = malloc(64 + (size_t)size * 24);
  int n = sprintf(opts, "rank=%d;size=%d;elastic=0;secret=bench%d;peers=", rank, size, rep);
  for (int i = 0; i < size; i++) n += sprintf(opts + n, "%s127.0.0.1:%lld", i ? "," : "", (long long)ports[i]);
  kylix_comm *f = NULL;
  must(kylix_barrier(comm), "barrier");
  double t0 = now();
  must(kylix_init(opts, &f), "fresh kylix_init");
  double t1 = now();
  must(kylix_barrier(f), "barrier on the fresh comm");
  must(kylix_finalize(f), "finalize the fresh comm");
  free(opts), free(ports);
  return slowest_ms(comm, t0, t1);
}

/* comm becomes next; the comm it replaces is finalized */
static void adopt(kylix_comm *next) {
  kylix_comm *old = comm;
  comm = next;
  must(kylix_finalize(old), "finalize");
}

/* one timed change of comm (kylix_resize with min_size, or kylix_shrink when min_size < 0)
   between a barrier and the slowest rank's return; returns that rank's ms */
static double timed_change(int32_t min_size) {
  kylix_comm *next = NULL;
  must(kylix_barrier(comm), "barrier");
  double t0 = now();
  must(min_size < 0 ? kylix_shrink(comm, &next) : kylix_resize(comm, min_size, &next),
       min_size < 0 ? "shrink" : "resize");
  double t1 = now();
  adopt(next);
  return slowest_ms(comm, t0, t1);
}

static void base(int reps) {
  int size = kylix_size(comm);
  double *ms = calloc((size_t)reps, sizeof *ms);
  for (int k = 0; k < 2; k++) {         /* resize0, then shrink */
    for (int r = -1; r < reps; r++) { /* r = -1: a warm-up, not counted */
      double dt = timed_change(k == 0 ? 0 : -1);
      if (r >= 0) ms[r] = dt;
    }
    report(k == 0 ? "resize0" : "shrink", size, 0, ms, reps);
  }
  fresh_init(-1); /* a warm-up, not counted */
  for (int r = 0; r < reps; r++) ms[r] = fresh_init(r);
  report("init", size, 0, ms, reps);
  free(ms);
}

/* the members' side of the join case */
static void members_join(int reps, int joiners) {
  int size = kylix_size(comm);
  double *ms = calloc((size_t)reps, sizeof *ms);
  for (int r = -1; r < reps; r++) { /* r = -1: a warm-up (the joiners start late), not counted */
    nanosleep(&(struct timespec){0, 300 * 1000000}, NULL); /* the joiners are at the port */
    double dt = timed_change(size + joiners);
    if (r >= 0) ms[r] = dt;
    must(kylix_barrier(comm), "barrier with the joiners");
    /* the joiners leave; the members drop them once their byes are in */
    int32_t failed[64], n = 0;
    for (double end = now() + 10; n < joiners && now() < end;) {
      must(kylix_failed_ranks(comm, failed, 64, &n), "failed_ranks");
      if (n < joiners) nanosleep(&(struct timespec){0, 2 * 1000000}, NULL);
    }
    /* a shrink: a resize that admits nobody (the joiners are back at the port already) */
    kylix_comm *next = NULL;
    must(kylix_shrink(comm, &next), "shrink dropping the joiners");
    adopt(next);
    if (kylix_size(comm) != size) {
      fprintf(stderr, "kylix_resize: %d ranks after dropping the joiners, want %d\n", kylix_size(comm), size);
      exit(1);
    }
  }
  report("resize_join", size, joiners, ms, reps);
  free(ms);
}

static void joiner(int reps) {
  for (int r = -1; r < reps; r++) {
    must(kylix_init("", &comm), "kylix_init (join)");
    double dt = 0;
    must(kylix_allreduce(comm, &dt, &dt, 1, KYLIX_F64, KYLIX_MAX), "allreduce max");
    must(kylix_barrier(comm), "barrier with the members");
    must(kylix_finalize(comm), "finalize");
    comm = NULL;
  }
}

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[1], "base") && strcmp(argv[1], "join")) || atoi(argv[2]) < 1) {
    fprintf(stderr, "usage: kylix_resize base REPS | join REPS JOINERS\n");
    return 2;
  }
  int reps = atoi(argv[2]), joiners = argc > 3 ? atoi(argv[3]) : 0;
  if (!strcmp(argv[1], "join") && getenv("KYLIX_JOIN")) {
    joiner(reps);
    return 0;
  }
  must(kylix_init("", &comm), "kylix_init");
  if (!strcmp(argv[1], "base")) base(reps);
  else members_join(reps, joiners);
  must(kylix_finalize(comm), "finalize");
  return 0;
}
