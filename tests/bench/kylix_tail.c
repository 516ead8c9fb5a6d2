/* kylix_tail.c — the 8-float allreduce timed call by call (run under kylixrun): the mean and
 * percentiles per call, and how much of the time the calls over 5 µs take, so that a mean
 * can be told apart from its tail. Prints rank 0's shared-memory stats at the end.
 *
 *   build/kylixrun -n 2 -- build/bench/kylix_tail [CALLS=50000]
 *   (gcc -O2 -Ibuild/include tests/bench/kylix_tail.c -Lbuild -lkylix -Wl,-rpath,$PWD/build
 *    -o build/bench/kylix_tail)
 */
#define _POSIX_C_SOURCE 200809L
#include "kylix.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  kylix_comm *c;
  if (kylix_init("", &c) != KYLIX_OK) {
    fprintf(stderr, "kylix_init: %s\n", kylix_errmsg(NULL));
    return 1;
  }
  int n = argc > 1 ? atoi(argv[1]) : 50000;
  if (n < 1) n = 1;
  float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  double *t = malloc((size_t)n * sizeof *t);
  int st = KYLIX_OK;
  for (int i = 0; st == KYLIX_OK && i < 1000; i++) st = kylix_allreduce(c, v, v, 8, KYLIX_F32, KYLIX_SUM);
  if (st == KYLIX_OK) st = kylix_barrier(c);
  double t0 = now_us();
  for (int i = 0; st == KYLIX_OK && i < n; i++) {
    double a = now_us();
    st = kylix_allreduce(c, v, v, 8, KYLIX_F32, KYLIX_SUM);
    t[i] = now_us() - a;
  }
  double total = now_us() - t0;
  if (st != KYLIX_OK) {
    fprintf(stderr, "kylix_allreduce: %s: %s\n", kylix_strerror(st), kylix_errmsg(c));
    return 1;
  }
  qsort(t, (size_t)n, sizeof *t, cmp);
  double sum = 0, slow = 0;
  int nslow = 0;
  for (int i = 0; i < n; i++) {
    sum += t[i];
    if (t[i] > 5) slow += t[i], nslow++;
  }
  printf("rank %d: %d calls, mean %.2f us, p50 %.2f p90 %.2f p99 %.2f p99.9 %.2f max %.1f; over 5 us: %d calls, %.1f%% of the time\n",
         kylix_rank(c), n, total / n, t[n / 2], t[n * 9 / 10], t[n * 99 / 100], t[n * 999 / 1000], t[n - 1], nslow,
         100 * slow / sum);
  static char js[1 << 16];
  int64_t need = 0;
  if (kylix_rank(c) == 0 && kylix_stats_json(c, js, sizeof js, &need) == KYLIX_OK) {
    const char *s = strstr(js, "\"shm\":{");
    if (s) printf("rank 0 %.*s\n", (int)(strchr(s, '}') - s + 1), s);
  }
  free(t);
  kylix_finalize(c);
  return 0;
}
