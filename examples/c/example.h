/*
 * example.h — helpers shared by the C examples (pagerank.c, minibatch.c,
 * logreg.c): error exit, the CHECK macro for kylix_* calls, checked
 * allocation, a monotonic clock, and a small deterministic RNG.
 *
 * Header-only on purpose: every example stays a single translation unit that
 * builds with one compiler command (the Makefile and the Go tests compile
 * examples/c/<name>.c alone). The functions are static inline so that an
 * example which does not use one of them gets no -Wunused-function warning.
 *
 * The including file must
 *   - define _POSIX_C_SOURCE 200809L before its first #include (clock_gettime,
 *     and popen in pagerank.c, are POSIX, hidden under -std=c11), and
 *   - define EXAMPLE_PROG, the program name die() prints, before including
 *     this header.
 * It sets g_rank once it knows its rank; until then die() prints rank -1.
 */
#ifndef KYLIX_EXAMPLE_H
#define KYLIX_EXAMPLE_H

#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 200809L
#error "define _POSIX_C_SOURCE 200809L before the first #include"
#endif
#ifndef EXAMPLE_PROG
#error "define EXAMPLE_PROG (the program name for error messages) before including example.h"
#endif

#include "kylix.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int g_rank = -1;

/* Print "<prog>[<rank>]: <message>" to stderr and exit(1). */
static inline void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s[%d]: ", EXAMPLE_PROG, g_rank);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

/* Every kylix_* call goes through CHECK: on failure print the status name and
   the comm's detail message, then exit non-zero (kylixrun stops the others). */
#define CHECK(comm, call)                                                       \
  do {                                                                          \
    int st_ = (call);                                                           \
    if (st_ != KYLIX_OK) {                                                      \
      const char *msg_ = kylix_errmsg(comm);                                    \
      die("%s failed: %s (%d): %s", #call, kylix_strerror(st_), st_,            \
          msg_ ? msg_ : "(no detail)");                                         \
    }                                                                           \
  } while (0)

/* malloc/calloc/realloc that die instead of returning NULL; a zero size
   still returns a valid (non-NULL) pointer. */
static inline void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die("out of memory (%zu bytes)", n);
  return p;
}
static inline void *xcalloc(size_t n, size_t sz) {
  void *p = calloc(n ? n : 1, sz ? sz : 1);
  if (!p) die("out of memory (%zu x %zu bytes)", n, sz);
  return p;
}
static inline void *xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) die("out of memory (%zu bytes)", n);
  return p;
}

static inline double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline uint64_t mix64(uint64_t x) { /* splitmix64 finaliser */
  x ^= x >> 30;
  x *= UINT64_C(0xbf58476d1ce4e5b9);
  x ^= x >> 27;
  x *= UINT64_C(0x94d049bb133111eb);
  x ^= x >> 31;
  return x;
}

/* splitmix64: the same seed gives the same stream on every machine. */
typedef struct { uint64_t s; } rng;
static inline uint64_t rng_next(rng *r) { return mix64(r->s += UINT64_C(0x9e3779b97f4a7c15)); }
static inline double rng_unif(rng *r) { return (rng_next(r) >> 11) * 0x1.0p-53; } /* [0, 1) */

/* The integer value of option name's argument s, which must lie in lo..hi. */
static inline long parse_long(const char *name, const char *s, long lo, long hi) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == 0 || *end != 0 || v < lo || v > hi)
    die("%s: want an integer in %ld..%ld, got \"%s\"", name, lo, hi, s);
  return v;
}

/* The number value of option name's argument s, which must lie in (lo, hi]. */
static inline double parse_double(const char *name, const char *s, double lo, double hi) {
  char *end;
  double v = strtod(s, &end);
  if (*end || !(v > lo && v <= hi)) die("%s: want a number in (%g, %g]", name, lo, hi);
  return v;
}

/* Replication (kylixrun --replication S sets KYLIX_REPLICATION): the job runs size/S nodes,
   each as S replicas given the same data; rank r is replica r / (size/S) of node r % (size/S).
   A program shards its data by node, and a replica that dies costs nothing (kylix.h). */
static int g_replicas = 1, g_nodes = 1;

/* kylix_init from the launcher's environment; sets g_rank for die(). *shard and *nshards are
   this rank's node and the number of nodes: the rank and the size without replication. */
static inline kylix_comm *example_init(int *shard, int *nshards) {
  kylix_comm *comm = NULL;
  CHECK(NULL, kylix_init("", &comm));
  int rank = kylix_rank(comm), size = kylix_size(comm);
  if (rank < 0 || size < 1) die("kylix_rank/kylix_size returned %d/%d", rank, size);
  g_rank = rank;
  const char *s = getenv("KYLIX_REPLICATION");
  g_replicas = s && atoi(s) > 0 ? atoi(s) : 1;
  if (size % g_replicas) die("size %d is not a multiple of KYLIX_REPLICATION=%d", size, g_replicas);
  g_nodes = size / g_replicas;
  *shard = rank % g_nodes;
  *nshards = g_nodes;
  return comm;
}

/* example_reporter: 1 on the one rank that prints the job's output: the live replica of
   node 0 with the lowest rank (rank 0 unless it died; kylix_failed_ranks is local). */
static inline int example_reporter(kylix_comm *comm) {
  if (g_rank % g_nodes != 0) return 0;
  int32_t failed[256], n = 0;
  if (kylix_failed_ranks(comm, failed, 256, &n) != KYLIX_OK) n = 0;
  for (int k = 0; k < g_rank / g_nodes; k++) { /* a lower replica of node 0 that lives prints */
    int dead = 0;
    for (int i = 0; i < n && i < 256; i++) dead |= failed[i] == k * g_nodes;
    if (!dead) return 0;
  }
  return 1;
}

#endif /* KYLIX_EXAMPLE_H */
