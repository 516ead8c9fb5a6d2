/* kylix_allreduce.c — kylix_allreduce timed like mpi_allreduce.c (run under kylixrun). */
#define _POSIX_C_SOURCE 200809L
#include "kylix.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  kylix_comm *c;
  if (kylix_init("", &c) != KYLIX_OK) {
    fprintf(stderr, "kylix_init: %s\n", kylix_errmsg(NULL));
    return 1;
  }
  long n = argc > 1 ? atol(argv[1]) : 16L << 20;
  int iters = argc > 2 ? atoi(argv[2]) : 5;
  float *buf = malloc(n * sizeof(float));
  for (long i = 0; i < n; i++) buf[i] = (float)(i % 7);
  int st = kylix_allreduce(c, buf, buf, n, KYLIX_F32, KYLIX_SUM); /* warm-up */
  if (st == KYLIX_OK) st = kylix_barrier(c);
  double t0 = now();
  for (int i = 0; st == KYLIX_OK && i < iters; i++)
    st = kylix_allreduce(c, buf, buf, n, KYLIX_F32, KYLIX_SUM);
  double dt = (now() - t0) / iters;
  if (st != KYLIX_OK) {
    fprintf(stderr, "kylix_allreduce: %s: %s\n", kylix_strerror(st), kylix_errmsg(c));
    return 1;
  }
  if (kylix_rank(c) == 0)
    printf("kylix ranks=%d count=%ld: %.1f ms per allreduce\n", kylix_size(c), n, dt * 1e3);
  free(buf);
  kylix_finalize(c);
  return 0;
}
