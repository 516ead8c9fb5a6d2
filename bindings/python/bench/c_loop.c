/*
 * c_loop.c - the C side of bench_reduce.py: call kylix_reduce `iters` times in a C loop and
 * return the elapsed seconds (CLOCK_MONOTONIC). The function pointer is the very kylix_reduce
 * the Python process loaded (passed from ctypes), so both sides use one library, one plan and
 * the same buffers. Built by bench_reduce.py with: gcc -O2 -shared -fPIC.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <time.h>

#include "kylix.h"

typedef int (*reduce_fn)(kylix_plan *p, const void *out_vals, void *in_vals, int dtype, int op,
                         int32_t width);

/* Returns the elapsed seconds, or -(status) of the first failing call. */
double kylix_bench_c_loop(reduce_fn reduce, kylix_plan *p, const void *out_vals, void *in_vals,
                          int dtype, int op, int32_t width, int iters) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < iters; i++) {
    int st = reduce(p, out_vals, in_vals, dtype, op, width);
    if (st != KYLIX_OK) return -(double)st;
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
}

/* Same signature as kylix_reduce, does nothing: bench_reduce.py swaps it in for kylix_reduce to
   time everything the Python binding does around the C call (checks, pointers, the ctypes
   transition) without the collective's noise. */
int kylix_bench_noop(kylix_plan *p, const void *out_vals, void *in_vals, int dtype, int op,
                     int32_t width) {
  (void)p; (void)out_vals; (void)in_vals; (void)dtype; (void)op; (void)width;
  return KYLIX_OK;
}
