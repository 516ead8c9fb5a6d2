/*
 * check.h - shared helpers for the Kylix C test programs.
 *
 * Every program is self-checking: it prints one line per result,
 *   "r<rank> PASS <what>", "r<rank> FAIL <file>:<line>: <what>",
 *   "r<rank> INFO <what>", "r<rank> DIGEST <name> <hex>",
 * ends with "r<rank> DONE fails=<n>" and exits non-zero when n > 0. The Go
 * driver (the tests/ Go files) parses these lines; it does not depend on the
 * launcher's own output tags.
 *
 * The pseudo-random generator is splitmix64, seeded from a tuple such as
 * (seed, stream, rank), so every rank can regenerate every other rank's data
 * and compute reference results without the library.
 */
#ifndef KYLIX_TEST_CHECK_H
#define KYLIX_TEST_CHECK_H

#define _GNU_SOURCE 1
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include <kylix.h>

static int g_rank = -1;          /* this rank, -1 before init                   */
static int g_size = -1;
static int g_fail = 0;           /* failed checks so far                        */
static kylix_comm *g_comm = NULL; /* for kylix_errmsg in failure messages       */
static const char *g_prog = "";

/* ---------------------------------------------------------------- output */

static inline void say(const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void say(const char *kind, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  /* one write per line, so lines of ranks sharing a pipe never interleave */
  printf("r%d %s %s\n", g_rank, kind, buf);
  fflush(stdout);
}

#define PASS(...) say("PASS", __VA_ARGS__)
#define INFO(...) say("INFO", __VA_ARGS__)

static int g_fail_printed = 0;
#define MAX_FAIL_LINES 40

#define FAILF(...)                                                            \
  do {                                                                        \
    g_fail++;                                                                 \
    if (g_fail_printed++ < MAX_FAIL_LINES) {                                  \
      char _m[1600];                                                          \
      snprintf(_m, sizeof _m, __VA_ARGS__);                                   \
      say("FAIL", "%s:%d: %s", __FILE__, __LINE__, _m);                       \
    }                                                                         \
  } while (0)

/* CHECK(cond, fmt, ...): count and print a failure when cond is false. */
#define CHECK(cond, ...)                                                      \
  do {                                                                        \
    if (!(cond)) {                                                            \
      char _c[1200];                                                          \
      snprintf(_c, sizeof _c, __VA_ARGS__);                                   \
      FAILF("check (%s) failed: %s", #cond, _c);                              \
    }                                                                         \
  } while (0)

static inline const char *status_name(int st) {
  switch (st) {
  case KYLIX_OK: return "KYLIX_OK";
  case KYLIX_ERR_ARG: return "KYLIX_ERR_ARG";
  case KYLIX_ERR_STATE: return "KYLIX_ERR_STATE";
  case KYLIX_ERR_TIMEOUT: return "KYLIX_ERR_TIMEOUT";
  case KYLIX_ERR_PEER: return "KYLIX_ERR_PEER";
  case KYLIX_ERR_MISMATCH: return "KYLIX_ERR_MISMATCH";
  case KYLIX_ERR_AUTH: return "KYLIX_ERR_AUTH";
  case KYLIX_ERR_NET: return "KYLIX_ERR_NET";
  case KYLIX_ERR_NOMEM: return "KYLIX_ERR_NOMEM";
  case KYLIX_ERR_INTERNAL: return "KYLIX_ERR_INTERNAL";
  }
  return "KYLIX_status?";
}

/* The message for a failed call on comm c (or NULL); never NULL itself. */
static inline const char *errmsg_of(kylix_comm *c) {
  const char *m = kylix_errmsg(c);
  return m ? m : "(kylix_errmsg returned NULL)";
}

/* CHECK_ST(call, want): the call must return status want. */
#define CHECK_ST(call, want)                                                  \
  ({                                                                          \
    int _st = (call);                                                         \
    if (_st != (want))                                                        \
      FAILF("%s returned %s (%d), want %s: %s", #call, status_name(_st), _st, \
            status_name(want), _st ? errmsg_of(g_comm) : "");                 \
    _st;                                                                      \
  })

/* MUST_OK(call): a call that must succeed for the rest of the program to make
   sense (collectives stay in step only if it does): exit at once otherwise. */
#define MUST_OK(call)                                                         \
  do {                                                                        \
    int _st = (call);                                                         \
    if (_st != KYLIX_OK) {                                                    \
      FAILF("%s returned %s (%d): %s", #call, status_name(_st), _st,          \
            errmsg_of(g_comm));                                               \
      say("DONE", "fails=%d (aborted)", g_fail);                              \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

static inline void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    FAILF("out of memory (%zu bytes)", n);
    exit(2);
  }
  return p;
}

/* ---------------------------------------------------------------- time */

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline double wall_s(void) { /* comparable between processes on one host */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline void sleep_s(double s) {
  struct timespec ts;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* ---------------------------------------------------------------- watchdog */

static inline void watchdog_fired(int sig) {
  (void)sig;
  char buf[128];
  int n = snprintf(buf, sizeof buf, "r%d FAIL watchdog: %s still running, giving up\n",
                   g_rank, g_prog);
  if (n > 0) {
    ssize_t w = write(1, buf, (size_t)n);
    (void)w;
  }
  _exit(3);
}

/* check_init: line-buffered output, rank from the environment for early
   messages, and a watchdog so that a hang ends the process with a message. */
static inline void check_init(const char *prog, unsigned watchdog_seconds) {
  g_prog = prog;
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *r = getenv("KYLIX_RANK");
  if (r) g_rank = atoi(r);
  const char *s = getenv("KYLIX_SIZE");
  if (s) g_size = atoi(s);
  signal(SIGALRM, watchdog_fired);
  alarm(watchdog_seconds);
}

static inline int check_finish(void) {
  say("DONE", "fails=%d", g_fail);
  return g_fail ? 1 : 0;
}

/* ---------------------------------------------------------------- random */

static inline uint64_t sm64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

typedef struct {
  uint64_t s;
} rng_t;

/* rng_seed: a stream determined by up to four keys (seed, stream, rank, ...). */
static inline rng_t rng_seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  uint64_t h = sm64_mix(a + 0x9E3779B97F4A7C15ull);
  h = sm64_mix(h ^ (b + 0x632BE59BD9B4E019ull));
  h = sm64_mix(h ^ (c + 0x85157AF5ull));
  h = sm64_mix(h ^ (d + 0xD6E8FEB86659FD93ull));
  rng_t g = {h};
  return g;
}

static inline uint64_t rng_next(rng_t *g) {
  g->s += 0x9E3779B97F4A7C15ull;
  return sm64_mix(g->s);
}

/* uniform in [0, n), n >= 1 (tiny modulo bias is irrelevant here) */
static inline uint64_t rng_below(rng_t *g, uint64_t n) { return n ? rng_next(g) % n : 0; }

/* uniform in [0, 1) */
static inline double rng_unit(rng_t *g) { return (double)(rng_next(g) >> 11) * 0x1.0p-53; }

/* ---------------------------------------------------------------- bytes */

static inline uint64_t fnv1a(const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

/* Guarded buffers: GUARD bytes of a known pattern on both sides, to detect
   writes outside the documented buffer. */
#define GUARD 64
typedef struct {
  unsigned char *base;
  size_t n;
} gbuf;

static inline gbuf gbuf_new(size_t n, unsigned char fill) {
  gbuf b;
  b.n = n;
  b.base = (unsigned char *)xmalloc(n + 2 * GUARD);
  memset(b.base, 0xA5, GUARD);
  memset(b.base + GUARD, fill, n);
  memset(b.base + GUARD + n, 0x5A, GUARD);
  return b;
}
static inline void *gbuf_ptr(gbuf b) { return b.base + GUARD; }
static inline int gbuf_guards_ok(gbuf b) {
  for (size_t i = 0; i < GUARD; i++)
    if (b.base[i] != 0xA5 || b.base[GUARD + b.n + i] != 0x5A) return 0;
  return 1;
}
static inline void gbuf_free(gbuf b) { free(b.base); }

/* contains_ci: case-insensitive substring test */
static inline int contains_ci(const char *hay, const char *needle) {
  if (!hay || !needle) return 0;
  return strcasestr(hay, needle) != NULL;
}

/* names_rank: msg mentions rank r as a number of its own (not inside 13 for 3) */
static inline int names_rank(const char *msg, int r) {
  if (!msg) return 0;
  char num[16];
  snprintf(num, sizeof num, "%d", r);
  size_t k = strlen(num);
  for (const char *p = msg; (p = strstr(p, num)) != NULL; p++) {
    int before_ok = (p == msg) || !(p[-1] >= '0' && p[-1] <= '9');
    int after_ok = !(p[k] >= '0' && p[k] <= '9');
    if (before_ok && after_ok) return 1;
  }
  return 0;
}

/* init_comm: kylix_init with options (environment from kylixrun), exit on failure */
static inline kylix_comm *init_comm(const char *options) {
  kylix_comm *c = NULL;
  int st = kylix_init(options, &c);
  if (st != KYLIX_OK || !c) {
    FAILF("kylix_init(\"%s\") returned %s: %s", options, status_name(st), errmsg_of(NULL));
    say("DONE", "fails=%d (aborted)", g_fail);
    exit(1);
  }
  g_comm = c;
  int r = kylix_rank(c), s = kylix_size(c);
  if (g_rank >= 0 && r != g_rank) FAILF("kylix_rank=%d but KYLIX_RANK=%d", r, g_rank);
  if (g_size >= 0 && s != g_size) FAILF("kylix_size=%d but KYLIX_SIZE=%d", s, g_size);
  g_rank = r;
  g_size = s;
  return c;
}

/* ---------------------------------------------------------------- stopping */

/* stop_self: a child stops this process (SIGSTOP) for ms milliseconds, then resumes it; returns
   once the child has resumed us and exited. */
static inline void stop_self(int ms) {
  pid_t me = getpid();
  pid_t ch = fork();
  if (ch == 0) {
    kill(me, SIGSTOP);
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    kill(me, SIGCONT);
    _exit(0);
  }
  int st;
  waitpid(ch, &st, 0);
}

#endif /* KYLIX_TEST_CHECK_H */
