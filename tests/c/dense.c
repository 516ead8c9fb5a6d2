/*
 * dense.c - kylix_allreduce over real sockets against exact expected values.
 *
 * usage: dense [SEED]
 *
 * Counts 0, 1, 7, 1000, 65537 and 2^20; every dtype x op (BAND/BOR/BXOR on
 * the integer dtypes); out of place and in place (send == recv) for the small
 * counts, alternating for 2^20 (it is there for the chunked butterfly path,
 * 8 MB a call). Rank r's element i is a small integer of (seed, r, i), so the
 * expected value, the op over ranks 0..m-1 in the dtype's own arithmetic, is
 * exact in any order (PROD sees only -1, 1 and 2; unsigned values wrap the
 * same way whatever the order). Results are compared bit for bit, guard bytes
 * around recv must stay untouched, and send must be unchanged out of place.
 */
#include "check.h"

static const int dtypes[] = {KYLIX_F32, KYLIX_F64, KYLIX_I32, KYLIX_I64, KYLIX_U64};
static const char *dnames[] = {"", "f32", "f64", "i32", "i64", "u64"};
static const char *onames[] = {"", "sum", "prod", "min", "max", "band", "bor", "bxor"};

static size_t esize(int d) { return d == KYLIX_F32 || d == KYLIX_I32 ? 4 : 8; }

/* value of rank r at element i, as op o sees it */
static int64_t val(uint64_t seed, int r, size_t i, int o) {
  uint64_t h = sm64_mix(seed * 1000003u + (uint64_t)r * 7919u + i);
  if (o == KYLIX_PROD) {
    static const int64_t p[] = {1, 1, 2, -1};
    return p[h % 4];
  }
  return (int64_t)(h % 9) - 4; /* -4..4 */
}

static void put(int d, void *buf, size_t i, int64_t v) {
  switch (d) {
  case KYLIX_F32: ((float *)buf)[i] = (float)v; break;
  case KYLIX_F64: ((double *)buf)[i] = (double)v; break;
  case KYLIX_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
  case KYLIX_I64: ((int64_t *)buf)[i] = v; break;
  default: ((uint64_t *)buf)[i] = (uint64_t)v; break;
  }
}

#define FOLD(T, acc, x, o)                                                      \
  do {                                                                          \
    T a_ = (acc), x_ = (x);                                                     \
    switch (o) {                                                                \
    case KYLIX_SUM: a_ = (T)(a_ + x_); break;                                   \
    case KYLIX_PROD: a_ = (T)(a_ * x_); break;                                  \
    case KYLIX_MIN: a_ = x_ < a_ ? x_ : a_; break;                              \
    case KYLIX_MAX: a_ = x_ > a_ ? x_ : a_; break;                              \
    }                                                                           \
    (acc) = a_;                                                                 \
  } while (0)

#define FOLDI(T, acc, x, o)                                                     \
  do {                                                                          \
    if ((o) == KYLIX_BAND) (acc) &= (x);                                        \
    else if ((o) == KYLIX_BOR) (acc) |= (x);                                    \
    else if ((o) == KYLIX_BXOR) (acc) ^= (x);                                   \
    else FOLD(T, acc, x, o);                                                    \
  } while (0)

/* expected: the op over ranks 0..m-1 in the dtype's arithmetic, starting from rank 0 */
static void expect(int d, int o, uint64_t seed, int m, size_t n, void *out) {
  for (size_t i = 0; i < n; i++) {
    int64_t v0 = val(seed, 0, i, o);
    switch (d) {
    case KYLIX_F32: { float a = (float)v0; for (int r = 1; r < m; r++) FOLD(float, a, (float)val(seed, r, i, o), o); ((float *)out)[i] = a; break; }
    case KYLIX_F64: { double a = (double)v0; for (int r = 1; r < m; r++) FOLD(double, a, (double)val(seed, r, i, o), o); ((double *)out)[i] = a; break; }
    case KYLIX_I32: { uint32_t a = (uint32_t)(int32_t)v0; for (int r = 1; r < m; r++) { int32_t s = (int32_t)a, x = (int32_t)val(seed, r, i, o); if (o >= KYLIX_BAND) FOLDI(uint32_t, a, (uint32_t)x, o); else if (o == KYLIX_SUM) a = a + (uint32_t)x; else if (o == KYLIX_PROD) a = a * (uint32_t)x; else { FOLD(int32_t, s, x, o); a = (uint32_t)s; } } ((uint32_t *)out)[i] = a; break; }
    case KYLIX_I64: { uint64_t a = (uint64_t)v0; for (int r = 1; r < m; r++) { int64_t s = (int64_t)a, x = val(seed, r, i, o); if (o >= KYLIX_BAND) FOLDI(uint64_t, a, (uint64_t)x, o); else if (o == KYLIX_SUM) a = a + (uint64_t)x; else if (o == KYLIX_PROD) a = a * (uint64_t)x; else { FOLD(int64_t, s, x, o); a = (uint64_t)s; } } ((uint64_t *)out)[i] = a; break; }
    default: { uint64_t a = (uint64_t)v0; for (int r = 1; r < m; r++) FOLDI(uint64_t, a, (uint64_t)val(seed, r, i, o), o); ((uint64_t *)out)[i] = a; break; }
    }
  }
}

int main(int argc, char **argv) {
  check_init("dense", 110);
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 11;
  kylix_comm *c = init_comm("timeout_ms=30000");
  static const size_t counts[] = {0, 1, 7, 1000, 65537, 1u << 20};
  int calls = 0, f0 = g_fail;
  for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
    size_t n = counts[ci];
    for (size_t di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++) {
      int d = dtypes[di], nops = d == KYLIX_F32 || d == KYLIX_F64 ? 4 : 7;
      for (int o = 1; o <= nops; o++) {
        for (int inplace = 0; inplace < 2; inplace++) {
          if (n == (1u << 20) && inplace != (o + (int)di) % 2) continue; /* one per dtype x op */
          size_t bytes = n * esize(d);
          gbuf send = gbuf_new(bytes, 0), recv = gbuf_new(bytes, 0xEE);
          void *want = xmalloc(bytes ? bytes : 1);
          for (size_t i = 0; i < n; i++) put(d, gbuf_ptr(send), i, val(seed, g_rank, i, o));
          void *sendcopy = xmalloc(bytes ? bytes : 1);
          memcpy(sendcopy, gbuf_ptr(send), bytes);
          expect(d, o, seed, g_size, n, want);
          void *rb = inplace ? gbuf_ptr(send) : gbuf_ptr(recv);
          int st = kylix_allreduce(c, gbuf_ptr(send), rb, (int64_t)n, d, o);
          calls++;
          if (st != KYLIX_OK) {
            FAILF("allreduce n=%zu %s %s %s: %s: %s", n, dnames[d], onames[o], inplace ? "in place" : "out of place",
                  status_name(st), errmsg_of(c));
            exit(check_finish());
          }
          if (memcmp(rb, want, bytes) != 0) {
            size_t i = 0;
            while (memcmp((char *)rb + i * esize(d), (char *)want + i * esize(d), esize(d)) == 0) i++;
            FAILF("allreduce n=%zu %s %s %s: element %zu differs from the expected value", n, dnames[d], onames[o],
                  inplace ? "in place" : "out of place", i);
          }
          CHECK(gbuf_guards_ok(send) && gbuf_guards_ok(recv), "allreduce n=%zu %s %s wrote outside its buffers", n,
                dnames[d], onames[o]);
          if (!inplace)
            CHECK(memcmp(gbuf_ptr(send), sendcopy, bytes) == 0, "allreduce n=%zu %s %s changed send", n, dnames[d],
                  onames[o]);
          free(want);
          free(sendcopy);
          gbuf_free(send);
          gbuf_free(recv);
        }
      }
    }
  }
  if (g_fail == f0) PASS("allreduce: %d calls over counts 0..2^20, every dtype x op, in place and not", calls);
  { /* how the bytes travelled (shared memory, single copy, write-back): the tests read it */
    static char js[1 << 16];
    int64_t need = 0;
    if (kylix_stats_json(c, js, sizeof js, &need) == KYLIX_OK) printf("r%d INFO stats %s\n", g_rank, js);
  }
  MUST_OK(kylix_finalize(c));
  return check_finish();
}
