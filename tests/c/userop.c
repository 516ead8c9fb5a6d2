/*
 * userop.c - kylix_op_create ops against a brute-force reference.
 *
 * usage: userop SEED
 *
 * Two user ops, both associative and, on ties, not commutative:
 *   absmax  inout = |inout| > |in| ? inout : in  (a tie takes the later value:
 *           3 and -3, or +0 and -0, tell the combining order apart)
 *   far     the same with the distance from ctx->center instead of |x|: the
 *           op's behaviour is keyed on its ctx
 * Values mix small integers (many ties), signed zeros and random magnitudes,
 * full range for the integer dtypes. Every rank regenerates every rank's
 * contributions and folds them the documented way: first contribution copied,
 * later ones combined into it, in rank order and then the caller's order; an
 * index nobody contributes reads as zero bytes. The reference calls the same
 * element function as the callback, so results must match bitwise.
 *
 * Sections:
 *   create   op ids, NULL arguments, an unknown op id, ranks disagreeing on the op
 *   dense    kylix_allreduce, every dtype x op, counts 1..200000 (in place on
 *            odd ranks)
 *   sparse   kylix_reduce over a plan and kylix_config_reduce (plan kept and
 *            not), every dtype x op, widths 1 and 3; a rank that contributes
 *            nothing; nobody's indices; repeated out and in indices
 *   chunks   a large sparse reduce; the callbacks saw count > 1 (batched, not
 *            one call per element), never more than 65536, only valid dtypes,
 *            and their own ctx
 */
#include "check.h"

static uint64_t g_seed = 1;

static const int all_dtypes[] = {KYLIX_F32, KYLIX_F64, KYLIX_I32, KYLIX_I64, KYLIX_U64};
static const char *dt_name(int dt) {
  static const char *n[] = {"?", "F32", "F64", "I32", "I64", "U64"};
  return dt >= 1 && dt <= 5 ? n[dt] : "?";
}
static size_t dt_size(int dt) { return (dt == KYLIX_F32 || dt == KYLIX_I32) ? 4 : 8; }

/* ---------------------------------------------------------------- the ops */

typedef struct {
  uint64_t magic;
  double center;        /* far: distance from here */
  int64_t calls;        /* updated atomically: the callback may run on any library thread */
  int64_t max_count;
  int64_t bad;          /* calls that broke a promise of the header */
} op_ctx;

#define CTX_MAGIC 0x6b796c6978ull

static op_ctx g_abs_ctx = {CTX_MAGIC, 0, 0, 0, 0};
static op_ctx g_far_ctx = {CTX_MAGIC, 5, 0, 0, 0};
static int g_op_abs = -1, g_op_far = -1;

/* magnitude of a - c for integers, exact in uint64 (the true difference is below 2^64) */
static uint64_t dist_i64(int64_t a, int64_t c) {
  return a >= c ? (uint64_t)a - (uint64_t)c : (uint64_t)c - (uint64_t)a;
}
static uint64_t dist_u64(uint64_t a, uint64_t c) { return a >= c ? a - c : c - a; }

/* one element: keep *a when strictly farther from center than *b, else take *b */
static void comb_elem(int dt, double center, void *a, const void *b) {
  switch (dt) {
  case KYLIX_F32: {
    float x, y;
    memcpy(&x, a, 4), memcpy(&y, b, 4);
    if (!(fabs((double)x - center) > fabs((double)y - center))) memcpy(a, b, 4);
    break;
  }
  case KYLIX_F64: {
    double x, y;
    memcpy(&x, a, 8), memcpy(&y, b, 8);
    if (!(fabs(x - center) > fabs(y - center))) memcpy(a, b, 8);
    break;
  }
  case KYLIX_I32: {
    int32_t x, y;
    memcpy(&x, a, 4), memcpy(&y, b, 4);
    if (!(dist_i64(x, (int64_t)center) > dist_i64(y, (int64_t)center))) memcpy(a, b, 4);
    break;
  }
  case KYLIX_I64: {
    int64_t x, y;
    memcpy(&x, a, 8), memcpy(&y, b, 8);
    if (!(dist_i64(x, (int64_t)center) > dist_i64(y, (int64_t)center))) memcpy(a, b, 8);
    break;
  }
  case KYLIX_U64: {
    uint64_t x, y;
    memcpy(&x, a, 8), memcpy(&y, b, 8);
    if (!(dist_u64(x, (uint64_t)center) > dist_u64(y, (uint64_t)center))) memcpy(a, b, 8);
    break;
  }
  }
}

static void note_call(op_ctx *x, void *inout, const void *in, int64_t count, int dtype) {
  __atomic_add_fetch(&x->calls, 1, __ATOMIC_RELAXED);
  int64_t m = __atomic_load_n(&x->max_count, __ATOMIC_RELAXED);
  while (count > m && !__atomic_compare_exchange_n(&x->max_count, &m, count, 0, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED)) {
  }
  int ok = dtype >= KYLIX_F32 && dtype <= KYLIX_U64 && count >= 1 && count <= 65536 && inout && in;
  if (ok) {
    size_t sz = dt_size(dtype);
    uintptr_t a = (uintptr_t)inout, b = (uintptr_t)in, n = (uintptr_t)count * sz;
    ok = a % sz == 0 && b % sz == 0 && (a + n <= b || b + n <= a);
  }
  if (!ok) __atomic_add_fetch(&x->bad, 1, __ATOMIC_RELAXED);
}

static void user_absmax(void *inout, const void *in, int64_t count, int dtype, void *ctx) {
  op_ctx *x = ctx;
  if (x != &g_abs_ctx || x->magic != CTX_MAGIC) {
    __atomic_add_fetch(&g_abs_ctx.bad, 1, __ATOMIC_RELAXED);
    return;
  }
  note_call(x, inout, in, count, dtype);
  size_t sz = dt_size(dtype);
  for (int64_t i = 0; i < count; i++) comb_elem(dtype, 0, (char *)inout + i * sz, (const char *)in + i * sz);
}

static void user_far(void *inout, const void *in, int64_t count, int dtype, void *ctx) {
  op_ctx *x = ctx;
  if (x != &g_far_ctx || x->magic != CTX_MAGIC) {
    __atomic_add_fetch(&g_far_ctx.bad, 1, __ATOMIC_RELAXED);
    return;
  }
  note_call(x, inout, in, count, dtype);
  size_t sz = dt_size(dtype);
  for (int64_t i = 0; i < count; i++)
    comb_elem(dtype, x->center, (char *)inout + i * sz, (const char *)in + i * sz);
}

static double op_center(int op) { return op == g_op_far ? g_far_ctx.center : 0; }
static const char *op_label(int op) { return op == g_op_far ? "far" : "absmax"; }

/* ---------------------------------------------------------------- data */

static void gen_elem(rng_t *g, int dt, void *p) {
  uint64_t k = rng_below(g, 8);
  int64_t small = (int64_t)rng_below(g, 9) - 4; /* ties: 3 and -3, 4 and -4 (and 1 and 9 for far) */
  switch (dt) {
  case KYLIX_F32: {
    float v = k < 3 ? (float)small : k == 3 ? (rng_below(g, 2) ? 0.0f : -0.0f)
                                            : (float)((rng_unit(g) * 2 - 1) * ldexp(1, (int)rng_below(g, 40) - 20));
    memcpy(p, &v, 4);
    break;
  }
  case KYLIX_F64: {
    double v = k < 3 ? (double)small : k == 3 ? (rng_below(g, 2) ? 0.0 : -0.0)
                                             : (rng_unit(g) * 2 - 1) * ldexp(1, (int)rng_below(g, 80) - 40);
    memcpy(p, &v, 8);
    break;
  }
  case KYLIX_I32: {
    int32_t v = k < 4 ? (int32_t)small : (int32_t)(uint32_t)rng_next(g);
    memcpy(p, &v, 4);
    break;
  }
  case KYLIX_I64: {
    int64_t v = k < 4 ? small : (int64_t)rng_next(g);
    memcpy(p, &v, 8);
    break;
  }
  case KYLIX_U64: {
    uint64_t v = k < 4 ? (uint64_t)(small + 4) : rng_next(g);
    memcpy(p, &v, 8);
    break;
  }
  }
}

/* n elements of rank r's values for (tag, dtype) */
static void *gen_vals(uint64_t tag, int r, int dt, int64_t n) {
  rng_t g = rng_seed(g_seed, 100 + tag, (uint64_t)r, (uint64_t)dt);
  size_t sz = dt_size(dt);
  char *v = xmalloc((size_t)n * sz);
  for (int64_t i = 0; i < n; i++) gen_elem(&g, dt, v + i * sz);
  return v;
}

/* report the first differing element */
static int compare(const char *what, int dt, const void *got, const void *want, int64_t n,
                   const int64_t *idx, int width) {
  size_t sz = dt_size(dt);
  for (int64_t i = 0; i < n; i++) {
    if (memcmp((const char *)got + i * sz, (const char *)want + i * sz, sz) != 0) {
      uint64_t g = 0, w = 0;
      memcpy(&g, (const char *)got + i * sz, sz);
      memcpy(&w, (const char *)want + i * sz, sz);
      FAILF("%s %s: element %" PRId64 " (index %" PRId64 ") = %#" PRIx64 ", want %#" PRIx64, what,
            dt_name(dt), i, idx ? idx[i / width] : i, g, w);
      return 0;
    }
  }
  return 1;
}

/* ---------------------------------------------------------------- create */

static void section_create(kylix_comm *c) {
  int f0 = g_fail;
  MUST_OK(kylix_op_create(user_absmax, &g_abs_ctx, &g_op_abs));
  MUST_OK(kylix_op_create(user_far, &g_far_ctx, &g_op_far));
  CHECK(g_op_abs >= 64 && g_op_far == g_op_abs + 1, "op ids %d, %d", g_op_abs, g_op_far);
  int op = 77;
  CHECK_ST(kylix_op_create(NULL, &g_abs_ctx, &op), KYLIX_ERR_ARG);
  CHECK(op == 0, "op=%d after a failed create", op);
  CHECK(contains_ci(kylix_errmsg(NULL), "fn"), "errmsg(NULL)=\"%s\"", kylix_errmsg(NULL));
  CHECK_ST(kylix_op_create(user_absmax, NULL, NULL), KYLIX_ERR_ARG);

  /* an id nobody created: an argument error on every rank; the comm still works */
  double x[4] = {1, 2, 3, 4}, y[4];
  int st = kylix_allreduce(c, x, y, 4, KYLIX_F64, 60000);
  CHECK(st == KYLIX_ERR_ARG && contains_ci(kylix_errmsg(c), "op"), "unknown op: %s: %s", status_name(st),
        errmsg_of(c));
  /* ranks that disagree on the op fail together */
  if (g_size > 1) {
    st = kylix_allreduce(c, x, y, 4, KYLIX_F64, g_rank == 0 ? g_op_abs : g_op_far);
    CHECK(st == KYLIX_ERR_MISMATCH, "ops differ between ranks: %s: %s", status_name(st), errmsg_of(c));
  }
  CHECK_ST(kylix_barrier(c), KYLIX_OK);
  if (g_fail == f0) PASS("create: ids %d, %d; NULL fn/op, unknown id and disagreeing ranks refused", g_op_abs, g_op_far);
}

/* ---------------------------------------------------------------- dense */

static void section_dense(kylix_comm *c) {
  int f0 = g_fail;
  static const int64_t counts[] = {1, 7, 1000, 200000};
  const int ops[] = {g_op_abs, g_op_far};
  for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
    int64_t n = counts[ci];
    for (size_t di = 0; di < 5; di++) {
      int dt = all_dtypes[di];
      if (n > 1000 && dt != KYLIX_F32 && dt != KYLIX_I64) continue; /* size checks chunking */
      size_t sz = dt_size(dt);
      for (int oi = 0; oi < 2; oi++) {
        int op = ops[oi];
        uint64_t tag = ci * 10 + (uint64_t)oi;
        void *want = gen_vals(tag, 0, dt, n);
        for (int r = 1; r < g_size; r++) {
          char *v = gen_vals(tag, r, dt, n);
          for (int64_t i = 0; i < n; i++) comb_elem(dt, op_center(op), (char *)want + i * sz, v + i * sz);
          free(v);
        }
        void *send = gen_vals(tag, g_rank, dt, n);
        void *recv = g_rank % 2 ? send : xmalloc((size_t)n * sz);
        int st = CHECK_ST(kylix_allreduce(c, send, recv, n, dt, op), KYLIX_OK);
        if (st == KYLIX_OK) {
          char what[64];
          snprintf(what, sizeof what, "allreduce %s n=%" PRId64, op_label(op), n);
          compare(what, dt, recv, want, n, NULL, 1);
        }
        if (recv != send) free(recv);
        free(send);
        free(want);
      }
    }
  }
  if (g_fail == f0) PASS("dense: kylix_allreduce with both user ops, every dtype, counts 1..200000");
}

/* ---------------------------------------------------------------- sparse */

typedef struct {
  int64_t *out, n_out, *in, n_in;
} sets;

/* rank r's index sets for plan tag: hot head (repeats within and across ranks), the rest
   uniform; rank 1 contributes nothing when there are 3+ ranks; in sets hold nobody's indices
   and repeats. */
static sets gen_sets(uint64_t tag, int r, int64_t nfeat, int64_t n_out, int64_t n_in) {
  rng_t g = rng_seed(g_seed, 200 + tag, (uint64_t)r, 0);
  sets s;
  s.n_out = (g_size >= 3 && r == 1) ? 0 : n_out + (int64_t)rng_below(&g, (uint64_t)n_out / 4 + 1);
  s.out = xmalloc((size_t)s.n_out * sizeof *s.out);
  for (int64_t i = 0; i < s.n_out; i++)
    s.out[i] = rng_below(&g, 3) == 0 ? (int64_t)rng_below(&g, (uint64_t)nfeat / 50 + 1)
                                     : (int64_t)rng_below(&g, (uint64_t)nfeat);
  s.n_in = n_in;
  s.in = xmalloc((size_t)s.n_in * sizeof *s.in);
  for (int64_t j = 0; j < s.n_in; j++) {
    uint64_t k = rng_below(&g, 20);
    if (k == 0) s.in[j] = nfeat + (int64_t)rng_below(&g, 100); /* nobody contributes */
    else if (k == 1 && j > 0) s.in[j] = s.in[rng_below(&g, (uint64_t)j)]; /* repeated */
    else s.in[j] = (int64_t)rng_below(&g, (uint64_t)nfeat);
  }
  return s;
}

static void free_sets(sets s) {
  free(s.out);
  free(s.in);
}

/* expected in-values of `mine` for op over every rank's (sets, values) */
static void *reference(uint64_t tag, int64_t nfeat, int64_t n_out, int64_t n_in, sets mine, int dt,
                       int op, int width, uint64_t vtag) {
  size_t es = dt_size(dt) * (size_t)width, sz = dt_size(dt);
  char *acc = xmalloc((size_t)nfeat * es);
  unsigned char *have = calloc((size_t)nfeat, 1);
  if (!have) exit(2);
  for (int r = 0; r < g_size; r++) {
    sets s = gen_sets(tag, r, nfeat, n_out, n_in);
    char *v = gen_vals(vtag, r, dt, s.n_out * width);
    for (int64_t p = 0; p < s.n_out; p++) {
      char *a = acc + s.out[p] * es;
      if (!have[s.out[p]]) {
        memcpy(a, v + p * es, es);
        have[s.out[p]] = 1;
      } else {
        for (int cc = 0; cc < width; cc++) comb_elem(dt, op_center(op), a + cc * sz, v + p * es + cc * sz);
      }
    }
    free(v);
    free_sets(s);
  }
  char *want = xmalloc((size_t)mine.n_in * es);
  for (int64_t j = 0; j < mine.n_in; j++) {
    int64_t k = mine.in[j];
    if (k < nfeat && have[k]) memcpy(want + j * es, acc + k * es, es);
    else memset(want + j * es, 0, es);
  }
  free(acc);
  free(have);
  return want;
}

static void sparse_case(kylix_comm *c, uint64_t tag, int64_t nfeat, int64_t n_out, int64_t n_in,
                        const int *dts, int ndt, const int *widths, int nw, int with_cfgred) {
  sets s = gen_sets(tag, g_rank, nfeat, n_out, n_in);
  kylix_plan *p = NULL;
  MUST_OK(kylix_config(c, s.out, s.n_out, s.in, s.n_in, &p));
  const int ops[] = {g_op_abs, g_op_far};
  for (int di = 0; di < ndt; di++) {
    int dt = dts[di];
    for (int wi = 0; wi < nw; wi++) {
      int width = widths[wi];
      size_t es = dt_size(dt) * (size_t)width;
      for (int oi = 0; oi < 2; oi++) {
        int op = ops[oi];
        uint64_t vtag = 1000 + tag * 100 + (uint64_t)(wi * 2 + oi);
        void *want = reference(tag, nfeat, n_out, n_in, s, dt, op, width, vtag);
        void *vals = gen_vals(vtag, g_rank, dt, s.n_out * width);
        gbuf got = gbuf_new((size_t)s.n_in * es, 0xEE);
        char what[96];
        snprintf(what, sizeof what, "reduce %s width %d tag %" PRIu64, op_label(op), width, tag);
        if (CHECK_ST(kylix_reduce(p, vals, gbuf_ptr(got), dt, op, width), KYLIX_OK) == KYLIX_OK)
          compare(what, dt, gbuf_ptr(got), want, s.n_in * width, s.in, width);
        CHECK(gbuf_guards_ok(got), "%s: wrote outside in_vals", what);
        if (with_cfgred) {
          kylix_plan *kept = NULL;
          memset(gbuf_ptr(got), 0xEE, got.n);
          snprintf(what, sizeof what, "config_reduce %s width %d tag %" PRIu64, op_label(op), width, tag);
          if (CHECK_ST(kylix_config_reduce(c, s.out, s.n_out, vals, s.in, s.n_in, gbuf_ptr(got), dt, op,
                                           width, oi ? &kept : NULL), KYLIX_OK) == KYLIX_OK)
            compare(what, dt, gbuf_ptr(got), want, s.n_in * width, s.in, width);
          CHECK(gbuf_guards_ok(got), "%s: wrote outside in_vals", what);
          if (kept) { /* the kept plan reduces like the configured one */
            memset(gbuf_ptr(got), 0xEE, got.n);
            if (CHECK_ST(kylix_reduce(kept, vals, gbuf_ptr(got), dt, op, width), KYLIX_OK) == KYLIX_OK)
              compare("reduce on a config_reduce plan", dt, gbuf_ptr(got), want, s.n_in * width, s.in, width);
            MUST_OK(kylix_plan_free(kept));
          }
        }
        gbuf_free(got);
        free(vals);
        free(want);
      }
    }
  }
  MUST_OK(kylix_plan_free(p));
  free_sets(s);
}

static void section_sparse(kylix_comm *c) {
  int f0 = g_fail;
  const int widths[] = {1, 3};
  sparse_case(c, 1, 4000, 900, 700, all_dtypes, 5, widths, 2, 1);
  sparse_case(c, 2, 40, 30, 50, all_dtypes, 5, widths, 2, 1); /* every index hot */
  if (g_fail == f0) PASS("sparse: kylix_reduce and kylix_config_reduce with both user ops, every dtype, widths 1 and 3");
}

static void section_chunks(kylix_comm *c) {
  int f0 = g_fail;
  const int dts[] = {KYLIX_F64};
  const int w1[] = {1};
  sparse_case(c, 3, 400000, 120000, 1000, dts, 1, w1, 1, 0);
  int64_t calls[2] = {__atomic_load_n(&g_abs_ctx.calls, __ATOMIC_RELAXED), __atomic_load_n(&g_far_ctx.calls, __ATOMIC_RELAXED)};
  int64_t maxc[2] = {__atomic_load_n(&g_abs_ctx.max_count, __ATOMIC_RELAXED), __atomic_load_n(&g_far_ctx.max_count, __ATOMIC_RELAXED)};
  int64_t bad = __atomic_load_n(&g_abs_ctx.bad, __ATOMIC_RELAXED) + __atomic_load_n(&g_far_ctx.bad, __ATOMIC_RELAXED);
  CHECK(bad == 0, "%" PRId64 " callback calls broke a promise (dtype, count, alignment, overlap, ctx)", bad);
  CHECK(maxc[0] <= 65536 && maxc[1] <= 65536, "largest calls %" PRId64 ", %" PRId64 " elements: above 65536", maxc[0], maxc[1]);
  /* many elements per call: a large reduce is batched, never one call per element (on one
     rank too: its repeated out indices are combined in batches) */
  CHECK(maxc[0] > 1000 && maxc[1] > 1000, "largest calls %" PRId64 ", %" PRId64 " elements: not batched", maxc[0], maxc[1]);
  INFO("callbacks: absmax %" PRId64 " calls (largest %" PRId64 "), far %" PRId64 " calls (largest %" PRId64 ")",
       calls[0], maxc[0], calls[1], maxc[1]);
  if (g_fail == f0) PASS("chunks: callbacks batched (largest %" PRId64 " elements), own ctx, valid arguments", maxc[0]);
}

int main(int argc, char **argv) {
  check_init("userop", 110);
  if (argc >= 2) g_seed = strtoull(argv[1], NULL, 0);
  kylix_comm *c = init_comm("");
  double t0 = now_s();
  section_create(c);
  section_dense(c);
  section_sparse(c);
  section_chunks(c);
  INFO("userop: %d ranks, seed %" PRIu64 ", %.2f s", g_size, g_seed, now_s() - t0);
  MUST_OK(kylix_finalize(c));
  return check_finish();
}
