/*
 * express.c - kylix_allreduce's express path (capi/express.c): small allreduces between the
 * ranks of one host run in C, and every other call takes the comm back into Go first.
 *
 * usage: express check SEED ITERS
 *          a sequence of calls drawn from SEED (the same on every rank): small allreduces of
 *          every dtype and built-in op but RSUM, counts 1..352 bytes, in place or not,
 *          unaligned or not, with zeros (of both signs for PROD, MIN and MAX) and for MIN
 *          and MAX infinities and NaNs among the floats (most of them: the express path), with other calls between them
 *          that enter Go (a vector past the lanes, a count of 0, kylix_iallreduce +
 *          kylix_wait, a barrier, kylix_stats_json, kylix_rank). Every result against every
 *          rank's regenerated vector combined in rank order from the op's identity (the same
 *          bits), the bytes around the result untouched. Prints the allreduces made and the
 *          lane allreduces among them ("INFO counts"), and the stats.
 *        express sigkill|hang VICTIM TIMEOUT_MS
 *          small Sums in a loop (the express path); at the 2000th the victim dies (SIGKILL) or
 *          is stopped for 2*TIMEOUT_MS + 2 s. The survivors' call fails with KYLIX_ERR_PEER or
 *          KYLIX_ERR_TIMEOUT within TIMEOUT_MS + 3 s, naming the victim ("INFO
 *          names-victim=yes"); the next call fails as promptly.
 *        express mismatch
 *          small Sums in a loop; at the 1000th rank 0 passes one more element: every rank's
 *          call fails with KYLIX_ERR_MISMATCH.
 */
#include "check.h"

#define LANE_BYTES 352 /* a lane's payload: the largest vector of the express path */
#define GUARD 64

static int64_t esize(int d) { return d == KYLIX_F32 || d == KYLIX_I32 ? 4 : 8; }

/* value i of rank r's vector in call it (dtype d), written at p */
static void value(int d, int op, uint64_t seed, int it, int r, int64_t i, unsigned char *p) {
  rng_t g = rng_seed(seed, (uint64_t)it, (uint64_t)r, (uint64_t)i);
  uint64_t x = rng_next(&g);
  /* One float in 16 is special: for MIN and MAX zeros of both signs, infinities and the quiet
     NaN; for PROD signed zeros; for SUM +0. (Which NaN an arithmetic op passes on when two meet
     is the hardware's, and not promised. A SUM starts from +0 on more than one rank, so -0s
     alone sum to +0 there, and to -0 on one rank, which only copies: not promised either.) */
  static const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN};
  int sp = (x >> 60) == 0, nsp = op == KYLIX_MIN || op == KYLIX_MAX ? 5 : op == KYLIX_PROD ? 2 : 1;
  switch (d) {
    case KYLIX_F32: { float v = sp ? (float)special[x % nsp] : (float)((int64_t)(x % 2000001) - 1000000) / 7.0f; memcpy(p, &v, 4); break; }
    case KYLIX_F64: { double v = sp ? special[x % nsp] : (double)((int64_t)(x % 2000001) - 1000000) / 3.0; memcpy(p, &v, 8); break; }
    case KYLIX_I32: { uint32_t v = (uint32_t)x; memcpy(p, &v, 4); break; } /* sums and products wrap */
    default: memcpy(p, &x, 8);
  }
}

/* what the library promises of each op, written out here: a NaN already in the result stays and
   one coming in replaces a number; MIN takes -0 over +0 and MAX +0 over -0; integers wrap */
#define NAN_FIRST(a, b) (isnan(a) ? (a) : (b))
static double fpick(int op, double a, double b) {
  if (isnan(a) || isnan(b)) return NAN_FIRST(a, b);
  if (a == 0 && b == 0) return (op == KYLIX_MIN) == (signbit(a) != 0) ? a : b;
  return op == KYLIX_MIN ? (b < a ? b : a) : (b > a ? b : a);
}
static float fpick32(int op, float a, float b) {
  if (isnan(a) || isnan(b)) return NAN_FIRST(a, b);
  if (a == 0 && b == 0) return (op == KYLIX_MIN) == (signbit(a) != 0) ? a : b;
  return op == KYLIX_MIN ? (b < a ? b : a) : (b > a ? b : a);
}
static uint64_t ibits(int op, uint64_t a, uint64_t b) {
  return op == KYLIX_SUM ? a + b : op == KYLIX_PROD ? a * b : op == KYLIX_BAND ? (a & b) : op == KYLIX_BOR ? (a | b) : (a ^ b);
}

/* the op's identity at acc */
static void start(int d, int op, unsigned char *acc) {
  int mn = op == KYLIX_MIN, mx = op == KYLIX_MAX;
  switch (d) {
    case KYLIX_F32: { float v = mn ? INFINITY : mx ? -INFINITY : op == KYLIX_PROD ? 1 : 0; memcpy(acc, &v, 4); break; }
    case KYLIX_F64: { double v = mn ? INFINITY : mx ? -INFINITY : op == KYLIX_PROD ? 1 : 0; memcpy(acc, &v, 8); break; }
    case KYLIX_I32: { int32_t v = mn ? INT32_MAX : mx ? INT32_MIN : op == KYLIX_PROD ? 1 : op == KYLIX_BAND ? -1 : 0; memcpy(acc, &v, 4); break; }
    case KYLIX_I64: { int64_t v = mn ? INT64_MAX : mx ? INT64_MIN : op == KYLIX_PROD ? 1 : op == KYLIX_BAND ? -1 : 0; memcpy(acc, &v, 8); break; }
    default: { uint64_t v = mn || op == KYLIX_BAND ? UINT64_MAX : op == KYLIX_PROD ? 1 : 0; memcpy(acc, &v, 8); }
  }
}

/* combine v into acc with op, element by element */
static void combine(int d, int op, unsigned char *acc, const unsigned char *v) {
  int pick = op == KYLIX_MIN || op == KYLIX_MAX;
  switch (d) {
    case KYLIX_F32: { float a, b; memcpy(&a, acc, 4); memcpy(&b, v, 4); a = pick ? fpick32(op, a, b) : op == KYLIX_SUM ? a + b : a * b; memcpy(acc, &a, 4); break; }
    case KYLIX_F64: { double a, b; memcpy(&a, acc, 8); memcpy(&b, v, 8); a = pick ? fpick(op, a, b) : op == KYLIX_SUM ? a + b : a * b; memcpy(acc, &a, 8); break; }
    case KYLIX_I32: { int32_t a, b; memcpy(&a, acc, 4); memcpy(&b, v, 4); a = op == KYLIX_MIN ? (b < a ? b : a) : op == KYLIX_MAX ? (b > a ? b : a) : (int32_t)(uint32_t)ibits(op, (uint32_t)a, (uint32_t)b); memcpy(acc, &a, 4); break; }
    case KYLIX_I64: { int64_t a, b; memcpy(&a, acc, 8); memcpy(&b, v, 8); a = op == KYLIX_MIN ? (b < a ? b : a) : op == KYLIX_MAX ? (b > a ? b : a) : (int64_t)ibits(op, (uint64_t)a, (uint64_t)b); memcpy(acc, &a, 8); break; }
    default: { uint64_t a, b; memcpy(&a, acc, 8); memcpy(&b, v, 8); a = op == KYLIX_MIN ? (b < a ? b : a) : op == KYLIX_MAX ? (b > a ? b : a) : ibits(op, a, b); memcpy(acc, &a, 8); }
  }
}

/* one allreduce of count values of d with op, checked against every rank's vector combined in
   rank order (SUM from zero, as the library adds); false on a failed check */
static int allreduce_checked(kylix_comm *c, uint64_t seed, int it, int d, int op, int64_t count, int inplace,
                             int offset, int use_request) {
  int64_t es = esize(d), n = count * es;
  unsigned char *sbuf = xmalloc((size_t)(n + 2 * GUARD + 8)), *rbuf = xmalloc((size_t)(n + 2 * GUARD + 8));
  unsigned char *send = sbuf + GUARD + offset, *recv = inplace ? send : rbuf + GUARD + offset;
  unsigned char *want = xmalloc((size_t)n + 8), v[8];
  memset(sbuf, 0xA5, (size_t)(n + 2 * GUARD + 8));
  memset(rbuf, 0x5A, (size_t)(n + 2 * GUARD + 8));
  for (int64_t i = 0; i < count; i++) value(d, op, seed, it, g_rank, i, send + i * es);
  for (int64_t i = 0; i < count; i++) {
    start(d, op, want + i * es);
    for (int r = 0; r < g_size; r++) {
      value(d, op, seed, it, r, i, v);
      combine(d, op, want + i * es, v);
    }
  }
  int st;
  if (use_request) {
    kylix_request *q = NULL;
    st = kylix_iallreduce(c, send, recv, count, d, op, &q);
    if (st == KYLIX_OK) st = kylix_wait(q);
  } else {
    st = kylix_allreduce(c, send, recv, count, d, op);
  }
  int ok = st == KYLIX_OK;
  if (!ok) FAILF("call %d: allreduce of %lld values of dtype %d op %d returned %s: %s", it, (long long)count, d, op,
                 status_name(st), errmsg_of(c));
  if (ok && count > 0 && memcmp(recv, want, (size_t)n) != 0) {
    FAILF("call %d: allreduce of %lld values of dtype %d op %d (in place %d, offset %d): wrong result", it,
          (long long)count, d, op, inplace, offset);
    ok = 0;
  }
  unsigned char *lo = inplace ? sbuf : rbuf, *r0 = recv;
  for (unsigned char *p = lo; p < r0; p++)
    if (*p != (inplace ? 0xA5 : 0x5A)) { FAILF("call %d: a byte before recv changed", it); ok = 0; break; }
  for (unsigned char *p = r0 + n; p < lo + n + 2 * GUARD + 8; p++)
    if (*p != (inplace ? 0xA5 : 0x5A)) { FAILF("call %d: a byte after recv changed", it); ok = 0; break; }
  free(sbuf), free(rbuf), free(want);
  return ok;
}

static void print_stats(kylix_comm *c) {
  static char js[1 << 16];
  int64_t need = 0;
  if (kylix_stats_json(c, js, sizeof js, &need) == KYLIX_OK) printf("r%d INFO stats %s\n", g_rank, js);
  else FAILF("kylix_stats_json: %s", errmsg_of(c));
}

static int check(kylix_comm *c, uint64_t seed, int iters) {
  rng_t plan = rng_seed(seed, 0xE0, 0, 0); /* the same draws on every rank */
  unsigned long long allreduces = 0, lanes = 0, fails = 0;
  for (int it = 0; it < iters && fails < 5; it++) {
    uint64_t x = rng_next(&plan);
    int a = (int)(x % 100), d = 1 + (int)((x >> 8) % 5);
    int64_t count = 1 + (int64_t)((x >> 16) % (uint64_t)(LANE_BYTES / esize(d)));
    int inplace = (x >> 32) & 1, offset = (x >> 33) & 1 ? 4 + (int)((x >> 34) & 3) : 0;
    int ok = 1;
    if (a < 85) { /* the express path: every built-in op of the dtype but RSUM */
      int ops = d == KYLIX_F32 || d == KYLIX_F64 ? 4 : 7, op = KYLIX_SUM + (int)((x >> 40) % (uint64_t)ops);
      if (a < 40) op = KYLIX_SUM;
      ok = allreduce_checked(c, seed, it, d, op, count, inplace, offset, 0);
      allreduces++, lanes++;
    } else if (a < 88) { /* a vector past the lanes: messages */
      ok = allreduce_checked(c, seed, it, d, KYLIX_SUM, 1000, inplace, offset, 0);
      allreduces++;
    } else if (a < 90) { /* non-blocking, over the lanes in Go */
      ok = allreduce_checked(c, seed, it, d, KYLIX_SUM, count, inplace, offset, 1);
      allreduces++, lanes++;
    } else if (a < 92) {
      ok = allreduce_checked(c, seed, it, d, KYLIX_SUM, 0, inplace, offset, 0);
      allreduces++;
    } else if (a < 95) {
      ok = CHECK_ST(kylix_barrier(c), KYLIX_OK) == KYLIX_OK;
    } else if (a < 98) {
      static char js[1 << 16];
      int64_t need = 0;
      ok = CHECK_ST(kylix_stats_json(c, js, sizeof js, &need), KYLIX_OK) == KYLIX_OK;
    } else {
      ok = kylix_rank(c) == g_rank && kylix_size(c) == g_size;
      CHECK(ok, "call %d: kylix_rank/kylix_size changed", it);
    }
    fails += !ok;
  }
  if (!fails) PASS("express check: %d calls", iters);
  INFO("counts allreduces=%llu lanes=%llu", allreduces, lanes);
  print_stats(c);
  return 0;
}

/* a run of small Sums in which the victim dies or stops at call 2000 */
static int fault(kylix_comm *c, const char *mode, int victim, int timeout_ms) {
  double v[8];
  for (int it = 0;; it++) {
    for (int i = 0; i < 8; i++) v[i] = g_rank + i;
    if (it == 2000 && g_rank == victim) {
      if (!strcmp(mode, "sigkill")) raise(SIGKILL);
      stop_self(2 * timeout_ms + 2000);
      INFO("victim resumed");
      kylix_finalize(c);
      return check_finish();
    }
    double t0 = now_s();
    int st = kylix_allreduce(c, v, v, 8, KYLIX_F64, KYLIX_SUM);
    double dt = now_s() - t0;
    if (st == KYLIX_OK) {
      double want = 0;
      for (int r = 0; r < g_size; r++) want += r;
      CHECK(v[0] == want, "call %d: sum %g, want %g", it, v[0], want);
      if (it > 2000) FAILF("call %d succeeded after the victim's call 2000", it);
      if (it > 2100) return check_finish();
      continue;
    }
    const char *m = errmsg_of(c);
    char name[32];
    snprintf(name, sizeof name, "rank %d", victim);
    INFO("call %d returned %s after %.3f s: %s", it, status_name(st), dt, m);
    INFO("names-victim=%s", strstr(m, name) ? "yes" : "no");
    CHECK(it == 2000, "call %d failed, want the call 2000 to", it);
    CHECK(st == KYLIX_ERR_PEER || st == KYLIX_ERR_TIMEOUT, "call %d returned %s, want PEER or TIMEOUT", it,
          status_name(st));
    CHECK(dt <= timeout_ms / 1000.0 + 3, "call %d took %.2f s to fail (timeout_ms %d)", it, dt, timeout_ms);
    t0 = now_s();
    st = kylix_allreduce(c, v, v, 8, KYLIX_F64, KYLIX_SUM);
    dt = now_s() - t0;
    CHECK(st != KYLIX_OK && dt <= timeout_ms / 1000.0 + 3, "the call after it returned %s after %.2f s",
          status_name(st), dt);
    if (!g_fail) PASS("express %s: failed at call %d with %s", mode, it, status_name(st));
    kylix_finalize(c);
    return check_finish();
  }
}

static int mismatch(kylix_comm *c) {
  float v[9] = {0};
  for (int it = 0; it < 1010; it++) {
    int64_t count = it == 1000 && g_rank == 0 ? 9 : 8;
    int st = kylix_allreduce(c, v, v, count, KYLIX_F32, KYLIX_SUM);
    if (it == 1000) {
      CHECK(st == KYLIX_ERR_MISMATCH, "call 1000 (counts differ) returned %s, want KYLIX_ERR_MISMATCH: %s",
            status_name(st), st ? errmsg_of(c) : "");
      if (!g_fail) PASS("express mismatch: %s", errmsg_of(c));
      break;
    }
    if (st != KYLIX_OK) {
      FAILF("call %d returned %s: %s", it, status_name(st), errmsg_of(c));
      break;
    }
  }
  kylix_finalize(c);
  return check_finish();
}

int main(int argc, char **argv) {
  check_init("express", 120);
  if (argc < 2) {
    fprintf(stderr, "usage: %s check SEED ITERS | sigkill|hang VICTIM TIMEOUT_MS | mismatch\n", argv[0]);
    return 2;
  }
  const char *mode = argv[1];
  if (!strcmp(mode, "check")) {
    kylix_comm *c = init_comm("");
    check(c, argc > 2 ? strtoull(argv[2], NULL, 10) : 1, argc > 3 ? atoi(argv[3]) : 3000);
    MUST_OK(kylix_finalize(c));
    return check_finish();
  }
  if (!strcmp(mode, "mismatch")) return mismatch(init_comm(""));
  int timeout_ms = argc > 3 ? atoi(argv[3]) : 2000;
  char opts[64];
  snprintf(opts, sizeof opts, "timeout_ms=%d", timeout_ms);
  kylix_comm *c = init_comm(opts);
  return fault(c, mode, argc > 2 ? atoi(argv[2]) : g_size - 1, timeout_ms);
}
