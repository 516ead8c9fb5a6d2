/* kylix_timing.h — the timing helpers of the Kylix benchmark programs (kylix_sparse.c,
 * kylix_net.c): every timed call runs between kylix_barrier calls and counts as the slowest
 * rank's time. The program defines `static kylix_comm *comm;` before including this. */
#ifndef KYLIX_BENCH_TIMING_H
#define KYLIX_BENCH_TIMING_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void must(int st, const char *what) {
  if (st == KYLIX_OK) return;
  fprintf(stderr, "%s: %s: %s\n", what, kylix_strerror(st), kylix_errmsg(comm));
  exit(1);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double t_start(void) { must(kylix_barrier(comm), "barrier"); return now(); }
static double t_stop(double t0) { /* max over ranks, in ms */
  double dt = now() - t0;
  must(kylix_allreduce(comm, &dt, &dt, 1, KYLIX_F64, KYLIX_MAX), "allreduce max");
  return dt * 1e3;
}

#endif
