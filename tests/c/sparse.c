/*
 * sparse.c - sparse allreduce against a brute-force reference.
 *
 * usage: sparse SEED N_FEATURES DENSITY WIDTHS [--reps K] [--quick] [--many-plans K]
 *   --quick: a third of the dtype x op combos per width and rep in "plans"
 *   WIDTHS is a comma list such as "1,3".
 *
 * Every rank generates its out/in index sets and values from (seed, plan tag,
 * rank), so every rank can regenerate all ranks' contributions and compute the
 * expected in_vals itself: op over every contribution (in rank order), the
 * op's identity where nobody contributes. Results are compared bitwise; the
 * values are chosen so that every result is exact in its dtype (small integers
 * for float SUM, products bounded to a few powers of two, full-range values
 * only for MIN/MAX/bit ops), so the reference cannot disagree by rounding.
 *
 * Sections:
 *   plans      three live plans (normal, normal, some ranks empty), every
 *              dtype x op, each width, several reductions per plan with new
 *              values (a plan is configured once and reduced many times),
 *              freed in a different order than created
 *   empty      a plan nobody contributes to (all identities) and an empty one
 *   cfgred     kylix_config_reduce with and without keeping the plan
 *   many       (--many-plans K) K plans live at once, reduced in a shuffled
 *              order, freed in another, each reduced again before it goes
 *   determ     inexact float sums over a common index set: same value on every
 *              rank (bcast compare), same value twice in a row, close to the
 *              reference, and a digest the driver compares across runs
 */
#include "check.h"

static uint64_t g_seed = 1;
static int64_t g_nfeat = 1000;
static double g_density = 0.05;
static int g_widths[8] = {1, 3};
static int g_nwidths = 2;
static int g_reps = 2;
static int g_quick = 0;
static int g_many = 0; /* --many-plans K */

enum { SHAPE_NORMAL, SHAPE_EMPTYISH, SHAPE_NOBODY_OUT, SHAPE_ALL_EMPTY, SHAPE_COMMON_IN };

static const int all_dtypes[] = {KYLIX_F32, KYLIX_F64, KYLIX_I32, KYLIX_I64, KYLIX_U64};
static const char *dt_name(int dt) {
  static const char *n[] = {"?", "F32", "F64", "I32", "I64", "U64"};
  return dt >= 1 && dt <= 5 ? n[dt] : "?";
}
static const char *op_name(int op) {
  static const char *n[] = {"?", "SUM", "PROD", "MIN", "MAX", "BAND", "BOR", "BXOR"};
  return op >= 1 && op <= 7 ? n[op] : "?";
}
static size_t dt_size(int dt) { return (dt == KYLIX_F32 || dt == KYLIX_I32) ? 4 : 8; }
static int dt_float(int dt) { return dt == KYLIX_F32 || dt == KYLIX_F64; }

/* ---------------------------------------------------------------- index sets */

typedef struct {
  int64_t *out, n_out;
  uint8_t *first; /* first[k]: out[k] does not occur at a smaller position */
  int64_t *in, n_in;
} rank_sets;

typedef struct {
  int64_t idx;
  int32_t rank;
  int64_t pos;
} contrib;

typedef struct {
  int tag, shape;
  rank_sets *rs; /* [g_size] */
  int64_t nc;
  contrib *c;         /* every rank's contributions, sorted by (idx, rank, pos) */
  int64_t nseg;       /* distinct contributed indices */
  int64_t *seg_start; /* [nseg+1] into c */
  int64_t *seg_idx;   /* [nseg] */
  int64_t *in_seg;    /* this rank's in[j] -> segment or -1 */
  int64_t *common;    /* SHAPE_COMMON_IN: the common set, canonical order */
  int64_t ncommon;
  int64_t *in_common; /* this rank's in[j] -> position in common */
} plandata;

static int64_t pick_idx(rng_t *g) {
  uint64_t k = rng_below(g, 64);
  if (k < 30) return (int64_t)rng_below(g, (uint64_t)g_nfeat); /* uniform */
  if (k < 52) {                                                  /* power-law-ish */
    double u = rng_unit(g);
    int64_t i = (int64_t)(u * u * u * u * (double)g_nfeat);
    return i < g_nfeat ? i : g_nfeat - 1;
  }
  if (k < 61) return (int64_t)rng_below(g, g_nfeat < 16 ? (uint64_t)g_nfeat : 16); /* hot */
  if (k < 63) return ((int64_t)1 << 40) + (int64_t)rng_below(g, 32); /* far away */
  return INT64_MAX - (int64_t)rng_below(g, 3);                      /* the very end */
}

/* An index no rank ever contributes: just above the feature range. */
static int64_t nobody_idx(rng_t *g) {
  uint64_t k = rng_below(g, 4);
  if (k == 0) return ((int64_t)1 << 40) + 32 + (int64_t)rng_below(g, 32);
  return g_nfeat + (int64_t)rng_below(g, (uint64_t)(g_nfeat / 8 + 1));
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static int cmp_contrib(const void *a, const void *b) {
  const contrib *x = a, *y = b;
  if (x->idx != y->idx) return x->idx < y->idx ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int64_t jitter_count(rng_t *g, double base) {
  if (base <= 0) return 0;
  int64_t n = (int64_t)(base * (0.25 + 1.5 * rng_unit(g)) + 0.5);
  return n < 1 ? 1 : n;
}

/* The common index set of SHAPE_COMMON_IN: the same on every rank. */
static int64_t *gen_common(int tag, int64_t *n_out) {
  rng_t g = rng_seed(g_seed, 5000 + (uint64_t)tag, 0, 0);
  int64_t m = (int64_t)(g_density * (double)g_nfeat * 2);
  if (m < 16) m = 16;
  int64_t *c = xmalloc((size_t)m * sizeof *c);
  for (int64_t i = 0; i < m; i++) c[i] = pick_idx(&g);
  qsort(c, (size_t)m, sizeof *c, cmp_i64);
  int64_t u = 0;
  for (int64_t i = 0; i < m; i++)
    if (u == 0 || c[u - 1] != c[i]) c[u++] = c[i];
  for (int64_t i = u - 1; i > 0; i--) { /* canonical order: shuffled, not sorted */
    int64_t j = (int64_t)rng_below(&g, (uint64_t)i + 1);
    int64_t t = c[i];
    c[i] = c[j];
    c[j] = t;
  }
  *n_out = u;
  return c;
}

static void gen_sets(rank_sets *s, int tag, int shape, int r, const int64_t *common,
                     int64_t ncommon, int64_t **in_common) {
  rng_t g = rng_seed(g_seed, 1000 + (uint64_t)tag, (uint64_t)r, 0);
  double base = g_density * (double)g_nfeat;
  int64_t n_out = jitter_count(&g, base), n_in = jitter_count(&g, base);
  switch (shape) {
  case SHAPE_EMPTYISH:
    if (r % 3 == 0) n_out = 0;
    if (r % 3 == 1) n_in = 0;
    if (r % 3 == 2) n_out = n_in = 0;
    break;
  case SHAPE_NOBODY_OUT:
    n_out = 0;
    break;
  case SHAPE_ALL_EMPTY:
    n_out = n_in = 0;
    break;
  }
  s->n_out = n_out;
  s->out = xmalloc((size_t)n_out * sizeof(int64_t));
  for (int64_t k = 0; k < n_out; k++) {
    if (k > 0 && rng_below(&g, 10) == 0)
      s->out[k] = s->out[rng_below(&g, (uint64_t)k)]; /* a repeat */
    else
      s->out[k] = pick_idx(&g);
  }
  /* first occurrences */
  s->first = xmalloc((size_t)n_out);
  {
    contrib *t = xmalloc((size_t)n_out * sizeof *t);
    for (int64_t k = 0; k < n_out; k++) t[k] = (contrib){s->out[k], 0, k};
    qsort(t, (size_t)n_out, sizeof *t, cmp_contrib);
    for (int64_t k = 0; k < n_out; k++) s->first[t[k].pos] = (k == 0 || t[k - 1].idx != t[k].idx);
    free(t);
  }
  if (shape == SHAPE_COMMON_IN) {
    /* every element of the common set, in a rank-specific order, ~10% twice */
    int64_t extra = ncommon / 10 + 1;
    s->n_in = ncommon + extra;
    s->in = xmalloc((size_t)s->n_in * sizeof(int64_t));
    *in_common = xmalloc((size_t)s->n_in * sizeof(int64_t));
    for (int64_t i = 0; i < ncommon; i++) (*in_common)[i] = i;
    for (int64_t i = 0; i < extra; i++) (*in_common)[ncommon + i] = (int64_t)rng_below(&g, (uint64_t)ncommon);
    for (int64_t i = s->n_in - 1; i > 0; i--) {
      int64_t j = (int64_t)rng_below(&g, (uint64_t)i + 1);
      int64_t t = (*in_common)[i];
      (*in_common)[i] = (*in_common)[j];
      (*in_common)[j] = t;
    }
    for (int64_t i = 0; i < s->n_in; i++) s->in[i] = common[(*in_common)[i]];
    return;
  }
  s->n_in = n_in;
  s->in = xmalloc((size_t)n_in * sizeof(int64_t));
  for (int64_t k = 0; k < n_in; k++) {
    uint64_t w = rng_below(&g, 20);
    if (k > 0 && w < 2)
      s->in[k] = s->in[rng_below(&g, (uint64_t)k)]; /* requested twice */
    else if (w < 5)
      s->in[k] = nobody_idx(&g); /* nobody contributes */
    else if (w < 10 && n_out > 0)
      s->in[k] = s->out[rng_below(&g, (uint64_t)n_out)]; /* one of our own */
    else
      s->in[k] = pick_idx(&g); /* maybe others', maybe nobody's */
  }
}

static plandata *plan_new(int tag, int shape) {
  plandata *pd = calloc(1, sizeof *pd);
  pd->tag = tag;
  pd->shape = shape;
  pd->rs = calloc((size_t)g_size, sizeof *pd->rs);
  if (shape == SHAPE_COMMON_IN) pd->common = gen_common(tag, &pd->ncommon);
  for (int r = 0; r < g_size; r++) {
    int64_t *ic = NULL;
    gen_sets(&pd->rs[r], tag, shape, r, pd->common, pd->ncommon, &ic);
    if (r == g_rank)
      pd->in_common = ic;
    else
      free(ic);
  }
  pd->nc = 0;
  for (int r = 0; r < g_size; r++) pd->nc += pd->rs[r].n_out;
  pd->c = xmalloc((size_t)pd->nc * sizeof *pd->c);
  int64_t k = 0;
  for (int r = 0; r < g_size; r++)
    for (int64_t p = 0; p < pd->rs[r].n_out; p++) pd->c[k++] = (contrib){pd->rs[r].out[p], r, p};
  qsort(pd->c, (size_t)pd->nc, sizeof *pd->c, cmp_contrib);
  pd->seg_start = xmalloc((size_t)(pd->nc + 1) * sizeof(int64_t));
  pd->seg_idx = xmalloc((size_t)(pd->nc + 1) * sizeof(int64_t));
  pd->nseg = 0;
  for (int64_t i = 0; i < pd->nc; i++)
    if (i == 0 || pd->c[i].idx != pd->c[i - 1].idx) {
      pd->seg_start[pd->nseg] = i;
      pd->seg_idx[pd->nseg++] = pd->c[i].idx;
    }
  pd->seg_start[pd->nseg] = pd->nc;
  rank_sets *me = &pd->rs[g_rank];
  pd->in_seg = xmalloc((size_t)me->n_in * sizeof(int64_t));
  for (int64_t j = 0; j < me->n_in; j++) {
    int64_t lo = 0, hi = pd->nseg;
    while (lo < hi) {
      int64_t mid = (lo + hi) / 2;
      if (pd->seg_idx[mid] < me->in[j]) lo = mid + 1; else hi = mid;
    }
    pd->in_seg[j] = (lo < pd->nseg && pd->seg_idx[lo] == me->in[j]) ? lo : -1;
  }
  return pd;
}

static void plan_data_free(plandata *pd) {
  for (int r = 0; r < g_size; r++) {
    free(pd->rs[r].out);
    free(pd->rs[r].first);
    free(pd->rs[r].in);
  }
  free(pd->rs);
  free(pd->c);
  free(pd->seg_start);
  free(pd->seg_idx);
  free(pd->in_seg);
  free(pd->common);
  free(pd->in_common);
  free(pd);
}

/* ---------------------------------------------------------------- values */

/* Exact values (see the header comment); `first` marks an index's first
   occurrence on this rank, which bounds products to one factor per rank. */
static void gen_elem(int dt, int op, rng_t *g, int first, void *dst) {
  uint64_t r = rng_next(g);
  switch (op) {
  case KYLIX_SUM:
    switch (dt) {
    case KYLIX_F32: { float v = (float)((int64_t)(r % 33) - 16) * 0.5f; memcpy(dst, &v, 4); return; }
    case KYLIX_F64: { double v = (double)((int64_t)(r % 33) - 16) * 0.25; memcpy(dst, &v, 8); return; }
    case KYLIX_I32: { int32_t v = (int32_t)(r % (1u << 21)) - (1 << 20); memcpy(dst, &v, 4); return; }
    case KYLIX_I64: { int64_t v = (int64_t)(r % (1ull << 41)) - ((int64_t)1 << 40); memcpy(dst, &v, 8); return; }
    case KYLIX_U64: { uint64_t v = r % (1ull << 50); memcpy(dst, &v, 8); return; }
    }
    break;
  case KYLIX_PROD: {
    double f = 1;
    uint64_t k = r % 8;
    if (first) {
      if (k == 0) f = 2;
      else if (k == 1) f = -1;
      else if (k == 2) f = dt_float(dt) ? 0.5 : 3;
    } else if (k < 2) {
      f = -1;
    }
    if (dt == KYLIX_U64 && f < 0) f = 1;
    switch (dt) {
    case KYLIX_F32: { float v = (float)f; memcpy(dst, &v, 4); return; }
    case KYLIX_F64: { double v = f; memcpy(dst, &v, 8); return; }
    case KYLIX_I32: { int32_t v = (int32_t)f; memcpy(dst, &v, 4); return; }
    case KYLIX_I64: { int64_t v = (int64_t)f; memcpy(dst, &v, 8); return; }
    case KYLIX_U64: { uint64_t v = (uint64_t)f; memcpy(dst, &v, 8); return; }
    }
    break;
  }
  case KYLIX_MIN:
  case KYLIX_MAX:
    switch (dt) {
    case KYLIX_F32: { float v = (float)((int64_t)(r % 4001) - 2000) * 0.5f; memcpy(dst, &v, 4); return; }
    case KYLIX_F64: { double v = (double)((int64_t)(r % 4000001) - 2000000) * 0.125; memcpy(dst, &v, 8); return; }
    case KYLIX_I32: { uint32_t v = (uint32_t)r; memcpy(dst, &v, 4); return; }
    default: memcpy(dst, &r, 8); return; /* I64 and U64: all 64 bits */
    }
  case KYLIX_BAND: r |= rng_next(g) | rng_next(g) | rng_next(g); break;
  case KYLIX_BOR: r &= rng_next(g) & rng_next(g); break;
  case KYLIX_BXOR: break;
  }
  memcpy(dst, &r, dt_size(dt)); /* little-endian: low bytes for I32 */
}

static unsigned char *gen_vals(plandata *pd, int r, int rep, int dt, int op, int width) {
  rank_sets *s = &pd->rs[r];
  size_t es = dt_size(dt);
  unsigned char *v = xmalloc((size_t)s->n_out * (size_t)width * es);
  rng_t g = rng_seed(g_seed, (uint64_t)pd->tag * 1000003u + (uint64_t)rep, (uint64_t)r,
                     (uint64_t)(dt * 16 + op) + (uint64_t)width * 256);
  for (int64_t k = 0; k < s->n_out; k++)
    for (int w = 0; w < width; w++)
      gen_elem(dt, op, &g, s->first[k], v + ((size_t)k * (size_t)width + (size_t)w) * es);
  return v;
}

#define ACC_CASE(T)                                                        \
  {                                                                        \
    T x, y;                                                                \
    memcpy(&x, a, sizeof x);                                               \
    memcpy(&y, b, sizeof y);                                               \
    switch (op) {                                                          \
    case KYLIX_SUM: x = (T)(x + y); break;                                 \
    case KYLIX_PROD: x = (T)(x * y); break;                                \
    case KYLIX_MIN: x = y < x ? y : x; break;                              \
    case KYLIX_MAX: x = y > x ? y : x; break;                              \
    }                                                                      \
    memcpy(a, &x, sizeof x);                                               \
    return;                                                                \
  }

#define BIT_CASE(T)                                                        \
  {                                                                        \
    T x, y;                                                                \
    memcpy(&x, a, sizeof x);                                               \
    memcpy(&y, b, sizeof y);                                               \
    if (op == KYLIX_BAND) x &= y;                                          \
    if (op == KYLIX_BOR) x |= y;                                           \
    if (op == KYLIX_BXOR) x ^= y;                                          \
    memcpy(a, &x, sizeof x);                                               \
    return;                                                                \
  }

/* a = a op b for one element */
static void acc_elem(int dt, int op, void *a, const void *b) {
  if (op >= KYLIX_BAND) {
    if (dt_size(dt) == 4) BIT_CASE(uint32_t) else BIT_CASE(uint64_t)
  }
  switch (dt) {
  case KYLIX_F32: ACC_CASE(float)
  case KYLIX_F64: ACC_CASE(double)
  case KYLIX_I32: ACC_CASE(int32_t)
  case KYLIX_I64: ACC_CASE(int64_t)
  case KYLIX_U64: ACC_CASE(uint64_t)
  }
}

static void ident_elem(int dt, int op, void *dst) {
  union { float f; double d; int32_t i; int64_t l; uint64_t u; } v;
  memset(&v, 0, sizeof v);
  switch (op) {
  case KYLIX_SUM: case KYLIX_BOR: case KYLIX_BXOR: break; /* zero */
  case KYLIX_PROD:
    if (dt == KYLIX_F32) v.f = 1; else if (dt == KYLIX_F64) v.d = 1; else if (dt == KYLIX_I32) v.i = 1; else v.u = 1;
    break;
  case KYLIX_MIN:
    if (dt == KYLIX_F32) v.f = INFINITY; else if (dt == KYLIX_F64) v.d = INFINITY;
    else if (dt == KYLIX_I32) v.i = INT32_MAX; else if (dt == KYLIX_I64) v.l = INT64_MAX; else v.u = UINT64_MAX;
    break;
  case KYLIX_MAX:
    if (dt == KYLIX_F32) v.f = -INFINITY; else if (dt == KYLIX_F64) v.d = -INFINITY;
    else if (dt == KYLIX_I32) v.i = INT32_MIN; else if (dt == KYLIX_I64) v.l = INT64_MIN; else v.u = 0;
    break;
  case KYLIX_BAND:
    v.u = UINT64_MAX;
    break;
  }
  memcpy(dst, &v, dt_size(dt));
}

static void fmt_elem(int dt, const void *p, char *buf, size_t n) {
  switch (dt) {
  case KYLIX_F32: { float v; uint32_t b; memcpy(&v, p, 4); memcpy(&b, p, 4); snprintf(buf, n, "%.9g(0x%08" PRIx32 ")", v, b); return; }
  case KYLIX_F64: { double v; uint64_t b; memcpy(&v, p, 8); memcpy(&b, p, 8); snprintf(buf, n, "%.17g(0x%016" PRIx64 ")", v, b); return; }
  case KYLIX_I32: { int32_t v; memcpy(&v, p, 4); snprintf(buf, n, "%" PRId32, v); return; }
  case KYLIX_I64: { int64_t v; memcpy(&v, p, 8); snprintf(buf, n, "%" PRId64, v); return; }
  case KYLIX_U64: { uint64_t v; memcpy(&v, p, 8); snprintf(buf, n, "%" PRIu64 "(0x%" PRIx64 ")", v, v); return; }
  }
  snprintf(buf, n, "?");
}

/* expected in_vals of this rank for values vals[r] of every rank */
static unsigned char *reference(plandata *pd, unsigned char **vals, int dt, int op, int width) {
  size_t es = dt_size(dt), row = es * (size_t)width;
  unsigned char *seg = xmalloc((size_t)pd->nseg * row);
  for (int64_t s = 0; s < pd->nseg; s++) {
    unsigned char *acc = seg + (size_t)s * row;
    for (int64_t i = pd->seg_start[s]; i < pd->seg_start[s + 1]; i++) {
      const unsigned char *src = vals[pd->c[i].rank] + (size_t)pd->c[i].pos * row;
      if (i == pd->seg_start[s])
        memcpy(acc, src, row);
      else
        for (int w = 0; w < width; w++) acc_elem(dt, op, acc + (size_t)w * es, src + (size_t)w * es);
    }
  }
  rank_sets *me = &pd->rs[g_rank];
  unsigned char *exp = xmalloc((size_t)me->n_in * row);
  for (int64_t j = 0; j < me->n_in; j++) {
    if (pd->in_seg[j] >= 0)
      memcpy(exp + (size_t)j * row, seg + (size_t)pd->in_seg[j] * row, row);
    else
      for (int w = 0; w < width; w++) ident_elem(dt, op, exp + (size_t)j * row + (size_t)w * es);
  }
  free(seg);
  return exp;
}

/* compare got with exp bitwise; print the first few differences */
static int compare(const char *what, plandata *pd, int dt, int op, int width, const unsigned char *got,
                   const unsigned char *exp) {
  rank_sets *me = &pd->rs[g_rank];
  size_t es = dt_size(dt);
  int64_t bad = 0;
  for (int64_t j = 0; j < me->n_in; j++)
    for (int w = 0; w < width; w++) {
      size_t off = ((size_t)j * (size_t)width + (size_t)w) * es;
      if (memcmp(got + off, exp + off, es) != 0) {
        if (bad < 3) {
          char g[64], e[64];
          fmt_elem(dt, got + off, g, sizeof g);
          fmt_elem(dt, exp + off, e, sizeof e);
          FAILF("%s plan%d %s %s w%d: in_idx[%" PRId64 "]=%" PRId64 " component %d: got %s want %s (%s)",
                what, pd->tag, dt_name(dt), op_name(op), width, j, me->in[j], w, g, e,
                pd->in_seg[j] < 0 ? "nobody contributes" : "contributed");
        }
        bad++;
      }
    }
  if (bad > 3)
    FAILF("%s plan%d %s %s w%d: %" PRId64 " wrong values of %" PRId64, what, pd->tag, dt_name(dt),
          op_name(op), width, bad, me->n_in * width);
  return bad == 0;
}

/* ---------------------------------------------------------------- one reduce */

typedef struct {
  int dt, op;
} combo;
static combo g_combos[64];
static int g_ncombos = 0;

static void make_combos(void) {
  for (size_t i = 0; i < sizeof all_dtypes / sizeof all_dtypes[0]; i++) {
    int dt = all_dtypes[i];
    int last = dt_float(dt) ? KYLIX_MAX : KYLIX_BXOR;
    for (int op = KYLIX_SUM; op <= last; op++) g_combos[g_ncombos++] = (combo){dt, op};
  }
}

/* Reduce pd's plan (or config_reduce when cr is set) with the values of rep;
   check the result and that nothing else was written. Returns 1 when right. */
static int do_reduce(const char *what, plandata *pd, kylix_plan *plan, int rep, int dt, int op, int width,
                     int cr, kylix_plan **keep) {
  size_t es = dt_size(dt), row = es * (size_t)width;
  unsigned char **vals = xmalloc((size_t)g_size * sizeof *vals);
  for (int r = 0; r < g_size; r++) vals[r] = gen_vals(pd, r, rep, dt, op, width);
  rank_sets *me = &pd->rs[g_rank];
  unsigned char *exp = reference(pd, vals, dt, op, width);

  size_t out_bytes = (size_t)me->n_out * row, in_bytes = (size_t)me->n_in * row;
  gbuf ob = gbuf_new(out_bytes, 0);
  memcpy(gbuf_ptr(ob), vals[g_rank], out_bytes);
  gbuf ib = gbuf_new(in_bytes, 0xCD); /* garbage: an unwritten result shows */
  /* NULL is allowed for empty buffers: use it on every other rank */
  const void *outp = (out_bytes == 0 && g_rank % 2 == 1) ? NULL : gbuf_ptr(ob);
  void *inp = (in_bytes == 0 && g_rank % 2 == 0) ? NULL : gbuf_ptr(ib);
  int64_t *out_copy = xmalloc((size_t)me->n_out * sizeof(int64_t));
  int64_t *in_copy = xmalloc((size_t)me->n_in * sizeof(int64_t));
  memcpy(out_copy, me->out, (size_t)me->n_out * sizeof(int64_t));
  memcpy(in_copy, me->in, (size_t)me->n_in * sizeof(int64_t));

  int st;
  if (cr) {
    const int64_t *oi = (me->n_out == 0 && g_rank % 2 == 0) ? NULL : me->out;
    const int64_t *ii = (me->n_in == 0 && g_rank % 2 == 1) ? NULL : me->in;
    st = kylix_config_reduce(g_comm, oi, me->n_out, outp, ii, me->n_in, inp, dt, op, width, keep);
  } else {
    st = kylix_reduce(plan, outp, inp, dt, op, width);
  }
  int ok = 1;
  if (st != KYLIX_OK) {
    FAILF("%s plan%d %s %s w%d rep%d: %s returned %s: %s", what, pd->tag, dt_name(dt), op_name(op), width, rep,
          cr ? "kylix_config_reduce" : "kylix_reduce", status_name(st), errmsg_of(g_comm));
    say("DONE", "fails=%d (aborted: collectives are out of step now)", g_fail);
    exit(1);
  }
  if (!compare(what, pd, dt, op, width, gbuf_ptr(ib), exp)) ok = 0;
  if (!gbuf_guards_ok(ib)) { FAILF("%s plan%d %s %s w%d: wrote outside in_vals", what, pd->tag, dt_name(dt), op_name(op), width); ok = 0; }
  if (!gbuf_guards_ok(ob) || memcmp(gbuf_ptr(ob), vals[g_rank], out_bytes) != 0) {
    FAILF("%s plan%d %s %s w%d: out_vals or its surroundings were modified", what, pd->tag, dt_name(dt), op_name(op), width);
    ok = 0;
  }
  if (memcmp(out_copy, me->out, (size_t)me->n_out * sizeof(int64_t)) || memcmp(in_copy, me->in, (size_t)me->n_in * sizeof(int64_t))) {
    FAILF("%s plan%d: index arrays were modified", what, pd->tag);
    ok = 0;
  }
  free(out_copy);
  free(in_copy);
  gbuf_free(ob);
  gbuf_free(ib);
  free(exp);
  for (int r = 0; r < g_size; r++) free(vals[r]);
  free(vals);
  return ok;
}

static kylix_plan *config(plandata *pd) {
  rank_sets *me = &pd->rs[g_rank];
  kylix_plan *p = NULL;
  const int64_t *oi = (me->n_out == 0 && g_rank % 2 == 0) ? NULL : me->out;
  const int64_t *ii = (me->n_in == 0 && g_rank % 2 == 1) ? NULL : me->in;
  MUST_OK(kylix_config(g_comm, oi, me->n_out, ii, me->n_in, &p));
  CHECK(p != NULL, "kylix_config returned OK but no plan");
  return p;
}

/* ---------------------------------------------------------------- sections */

static void section_plans(void) {
  plandata *d1 = plan_new(1, SHAPE_NORMAL), *d2 = plan_new(2, SHAPE_NORMAL), *d3 = plan_new(3, SHAPE_EMPTYISH);
  kylix_plan *p1 = config(d1), *p2 = config(d2), *p3 = config(d3);
  int f0 = g_fail, n = 0;
  for (int wi = 0; wi < g_nwidths; wi++) {
    int w = g_widths[wi];
    for (int rep = 0; rep < g_reps; rep++)
      for (int ci = g_quick ? (rep + wi) % 3 : 0; ci < g_ncombos; ci += g_quick ? 3 : 1) { /* --quick: a third */
        combo c = g_combos[ci];
        do_reduce("plans", d1, p1, rep, c.dt, c.op, w, 0, NULL), n++;
        if (rep == 0 || !g_quick) do_reduce("plans", d2, p2, rep + 7, c.dt, c.op, w, 0, NULL), n++;
        if (rep == 0) do_reduce("plans", d3, p3, rep, c.dt, c.op, w, 0, NULL), n++;
      }
  }
  /* free the middle plan first; the others must keep working */
  CHECK_ST(kylix_plan_free(p2), KYLIX_OK);
  for (int ci = 0; ci < g_ncombos; ci += 3) {
    combo c = g_combos[ci];
    do_reduce("plans-after-free", d3, p3, 5, c.dt, c.op, g_widths[0], 0, NULL), n++;
    do_reduce("plans-after-free", d1, p1, 5, c.dt, c.op, g_widths[g_nwidths - 1], 0, NULL), n++;
  }
  CHECK_ST(kylix_plan_free(p3), KYLIX_OK);
  CHECK_ST(kylix_plan_free(p1), KYLIX_OK);
  if (g_fail == f0)
    PASS("plans: %d reductions over 3 live plans (out %" PRId64 "/%" PRId64 "/%" PRId64 ", in %" PRId64
         "/%" PRId64 "/%" PRId64 " here), %d dtype x op combos, bitwise equal to the reference",
         n, d1->rs[g_rank].n_out, d2->rs[g_rank].n_out, d3->rs[g_rank].n_out, d1->rs[g_rank].n_in,
         d2->rs[g_rank].n_in, d3->rs[g_rank].n_in, g_ncombos);
  {
    /* how much the data exercises: in indices by number of contributing ranks */
    int64_t none = 0, one = 0, many = 0;
    rank_sets *me = &d1->rs[g_rank];
    for (int64_t j = 0; j < me->n_in; j++) {
      int64_t sg = d1->in_seg[j];
      if (sg < 0) { none++; continue; }
      int nr = 1;
      for (int64_t i = d1->seg_start[sg] + 1; i < d1->seg_start[sg + 1]; i++) nr += d1->c[i].rank != d1->c[i - 1].rank;
      if (nr > 1) many++; else one++;
    }
    INFO("plan1 in indices here: %" PRId64 " nobody's, %" PRId64 " one rank's, %" PRId64 " several ranks'", none, one, many);
  }
  plan_data_free(d1);
  plan_data_free(d2);
  plan_data_free(d3);
}

static void section_empty(void) {
  int f0 = g_fail;
  plandata *d4 = plan_new(4, SHAPE_NOBODY_OUT), *d5 = plan_new(5, SHAPE_ALL_EMPTY);
  kylix_plan *p4 = config(d4), *p5 = config(d5);
  for (int ci = 0; ci < g_ncombos; ci++) {
    combo c = g_combos[ci];
    for (int wi = 0; wi < g_nwidths; wi++) {
      do_reduce("empty-nobody-contributes", d4, p4, 0, c.dt, c.op, g_widths[wi], 0, NULL);
      do_reduce("empty-all", d5, p5, 0, c.dt, c.op, g_widths[wi], 0, NULL);
    }
  }
  CHECK_ST(kylix_plan_free(p4), KYLIX_OK);
  CHECK_ST(kylix_plan_free(p5), KYLIX_OK);
  if (g_fail == f0) PASS("empty: identities where nobody contributes (%" PRId64 " in here), empty plans", d4->rs[g_rank].n_in);
  plan_data_free(d4);
  plan_data_free(d5);
}

static void section_config_reduce(void) {
  static const struct { int dt, op, w, keep; } cases[] = {
      {KYLIX_F32, KYLIX_SUM, 3, 0}, {KYLIX_F64, KYLIX_MIN, 1, 1}, {KYLIX_I32, KYLIX_PROD, 2, 0},
      {KYLIX_I64, KYLIX_BXOR, 1, 1}, {KYLIX_U64, KYLIX_MAX, 3, 1}, {KYLIX_U64, KYLIX_BAND, 1, 0},
      {KYLIX_I64, KYLIX_BOR, 2, 1}, {KYLIX_F64, KYLIX_PROD, 1, 0}, {KYLIX_I32, KYLIX_MAX, 1, 1},
  };
  int f0 = g_fail, n = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    /* a fresh mini-batch each time; every third one with some ranks empty */
    plandata *d = plan_new(10 + (int)i, i % 3 == 2 ? SHAPE_EMPTYISH : SHAPE_NORMAL);
    kylix_plan *kept = NULL;
    do_reduce("config_reduce", d, NULL, 0, cases[i].dt, cases[i].op, cases[i].w, 1, cases[i].keep ? &kept : NULL);
    n++;
    if (cases[i].keep) {
      CHECK(kept != NULL, "config_reduce did not return the plan asked for");
      if (kept) {
        /* the kept plan reduces again with new values and other ops */
        do_reduce("config_reduce-kept", d, kept, 1, cases[i].dt, cases[i].op, cases[i].w, 0, NULL);
        do_reduce("config_reduce-kept", d, kept, 2, cases[i].dt, KYLIX_SUM, 1, 0, NULL);
        do_reduce("config_reduce-kept", d, kept, 3, cases[i].dt, KYLIX_MAX, 2, 0, NULL);
        n += 3;
        CHECK_ST(kylix_plan_free(kept), KYLIX_OK);
      }
    }
    plan_data_free(d);
  }
  if (g_fail == f0) PASS("config_reduce: %d mini-batches and reuses of kept plans", n);
}

static void section_many(int k) {
  int f0 = g_fail;
  plandata **d = xmalloc((size_t)k * sizeof *d);
  kylix_plan **p = xmalloc((size_t)k * sizeof *p);
  int *order = xmalloc((size_t)k * sizeof *order);
  for (int i = 0; i < k; i++) {
    d[i] = plan_new(100 + i, i % 4 == 3 ? SHAPE_EMPTYISH : SHAPE_NORMAL);
    p[i] = config(d[i]);
    order[i] = i;
  }
  /* the same shuffle on every rank (seeded without the rank) */
  rng_t g = rng_seed(g_seed, 77, 0, 0);
  for (int round = 0; round < 2; round++) {
    for (int i = k - 1; i > 0; i--) {
      int j = (int)rng_below(&g, (uint64_t)i + 1), t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    for (int i = 0; i < k; i++) {
      combo c = g_combos[(size_t)(order[i] + round) % (size_t)g_ncombos];
      do_reduce("many", d[order[i]], p[order[i]], round, c.dt, c.op, 1 + order[i] % 3, 0, NULL);
    }
  }
  for (int i = 0; i < k; i++) { /* free in the last shuffled order; the rest keep working */
    int q = order[i];
    CHECK_ST(kylix_plan_free(p[q]), KYLIX_OK);
    if (i + 1 < k) {
      int q2 = order[k - 1];
      combo c = g_combos[(size_t)i % (size_t)g_ncombos];
      do_reduce("many-after-free", d[q2], p[q2], 9, c.dt, c.op, 1, 0, NULL);
    }
  }
  for (int i = 0; i < k; i++) plan_data_free(d[i]);
  free(d);
  free(p);
  free(order);
  if (g_fail == f0) PASS("many: %d plans live at once, reduced in shuffled order, freed one by one", k);
}

/* Inexact float reductions: determinism, not exactness. */
static void section_determinism(void) {
  int f0 = g_fail;
  plandata *d = plan_new(30, SHAPE_COMMON_IN);
  kylix_plan *p = config(d);
  rank_sets *me = &d->rs[g_rank];
  static const struct { int dt, op, w; } cases[] = {{KYLIX_F64, KYLIX_SUM, 2}, {KYLIX_F32, KYLIX_SUM, 1}, {KYLIX_F64, KYLIX_PROD, 1}};
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    int dt = cases[ci].dt, op = cases[ci].op, width = cases[ci].w;
    size_t es = dt_size(dt), row = es * (size_t)width;
    /* values of every rank: wide dynamic range so that the order of additions matters */
    double **dv = xmalloc((size_t)g_size * sizeof *dv);
    unsigned char *mine = NULL;
    for (int r = 0; r < g_size; r++) {
      rank_sets *s = &d->rs[r];
      rng_t g = rng_seed(g_seed, 9000 + ci, (uint64_t)r, 0);
      dv[r] = xmalloc((size_t)s->n_out * (size_t)width * sizeof(double));
      unsigned char *raw = xmalloc((size_t)s->n_out * row);
      for (int64_t k = 0; k < s->n_out * width; k++) {
        double x;
        if (op == KYLIX_SUM)
          x = (rng_unit(&g) * 2 - 1) * ldexp(1.0, (int)rng_below(&g, 30) - 15);
        else
          x = 0.9 + 0.2 * rng_unit(&g);
        if (dt == KYLIX_F32) { float f = (float)x; x = f; memcpy(raw + (size_t)k * es, &f, 4); }
        else memcpy(raw + (size_t)k * es, &x, 8);
        dv[r][k] = x;
      }
      if (r == g_rank) mine = raw; else free(raw);
    }
    unsigned char *a = xmalloc((size_t)me->n_in * row), *b = xmalloc((size_t)me->n_in * row);
    MUST_OK(kylix_reduce(p, mine, a, dt, op, width));
    MUST_OK(kylix_reduce(p, mine, b, dt, op, width));
    CHECK(memcmp(a, b, (size_t)me->n_in * row) == 0, "determ %s %s: two reductions of the same values differ", dt_name(dt), op_name(op));
    /* close to the reference computed in long double */
    int64_t far = 0;
    for (int64_t j = 0; j < me->n_in; j++) {
      int64_t sg = d->in_seg[j];
      for (int w = 0; w < width; w++) {
        long double ref = op == KYLIX_SUM ? 0 : 1, mag = 0;
        int64_t cnt = 0;
        if (sg >= 0)
          for (int64_t i = d->seg_start[sg]; i < d->seg_start[sg + 1]; i++) {
            double x = dv[d->c[i].rank][(size_t)d->c[i].pos * (size_t)width + (size_t)w];
            if (op == KYLIX_SUM) ref += x, mag += fabs(x); else ref *= x;
            cnt++;
          }
        double got;
        if (dt == KYLIX_F32) { float f; memcpy(&f, a + (size_t)j * row + (size_t)w * es, 4); got = f; }
        else memcpy(&got, a + (size_t)j * row + (size_t)w * es, 8);
        double eps = dt == KYLIX_F32 ? 1.2e-7 : 2.3e-16;
        double tol = op == KYLIX_SUM ? (double)(mag * (cnt + 1)) * eps : fabs((double)ref) * (double)(cnt + 1) * eps * 2;
        if (fabs(got - (double)ref) > tol) {
          if (far < 3) FAILF("determ %s %s: in_idx[%" PRId64 "]=%" PRId64 ": got %.17g want %.17Lg (tol %.3g)", dt_name(dt), op_name(op), j, me->in[j], got, ref, tol);
          far++;
        }
      }
    }
    /* canonical order: one row per element of the common set; duplicates agree */
    unsigned char *canon = xmalloc((size_t)d->ncommon * row), *seen = calloc((size_t)d->ncommon, 1);
    for (int64_t j = 0; j < me->n_in; j++) {
      int64_t c = d->in_common[j];
      if (seen[c]) CHECK(memcmp(canon + (size_t)c * row, a + (size_t)j * row, row) == 0, "determ: index %" PRId64 " requested twice got two values", me->in[j]);
      memcpy(canon + (size_t)c * row, a + (size_t)j * row, row);
      seen[c] = 1;
    }
    /* every rank holds the bitwise-same values: compare with rank 0's and the last rank's */
    int roots[2] = {0, g_size - 1};
    for (int k = 0; k < 2; k++) {
      unsigned char *theirs = xmalloc((size_t)d->ncommon * row);
      memcpy(theirs, canon, (size_t)d->ncommon * row);
      MUST_OK(kylix_bcast(g_comm, theirs, (int64_t)((size_t)d->ncommon * row), roots[k]));
      int64_t diff = 0;
      for (int64_t c = 0; c < d->ncommon; c++) diff += memcmp(theirs + (size_t)c * row, canon + (size_t)c * row, row) != 0;
      CHECK(diff == 0, "determ %s %s: %" PRId64 " of %" PRId64 " common indices differ from rank %d's", dt_name(dt), op_name(op), diff, d->ncommon, roots[k]);
      free(theirs);
    }
    say("DIGEST", "determ-%s-%s-w%d %016" PRIx64, dt_name(dt), op_name(op), width, fnv1a(canon, (size_t)d->ncommon * row));
    free(canon);
    free(seen);
    free(a);
    free(b);
    free(mine);
    for (int r = 0; r < g_size; r++) free(dv[r]);
    free(dv);
  }
  CHECK_ST(kylix_plan_free(p), KYLIX_OK);
  if (g_fail == f0) PASS("determinism: inexact sums equal on every rank, twice in a row, within rounding of the reference (%" PRId64 " common indices)", d->ncommon);
  plan_data_free(d);
}

int main(int argc, char **argv) {
  check_init("sparse", 110);
  if (argc < 5) {
    fprintf(stderr, "usage: %s SEED N_FEATURES DENSITY WIDTHS [--reps K] [--quick]\n", argv[0]);
    return 2;
  }
  g_seed = strtoull(argv[1], NULL, 0);
  g_nfeat = strtoll(argv[2], NULL, 0);
  g_density = strtod(argv[3], NULL);
  g_nwidths = 0;
  for (char *s = argv[4]; *s && g_nwidths < 8;) {
    g_widths[g_nwidths++] = (int)strtol(s, &s, 10);
    if (*s == ',') s++;
  }
  for (int i = 5; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) g_reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--quick")) g_quick = 1;
    else if (!strcmp(argv[i], "--many-plans") && i + 1 < argc) g_many = atoi(argv[++i]);
    else { fprintf(stderr, "unknown flag %s\n", argv[i]); return 2; }
  }
  if (g_nfeat < 1 || g_nwidths < 1 || g_reps < 1) { fprintf(stderr, "bad arguments\n"); return 2; }
  make_combos();
  kylix_comm *c = init_comm("");
  double t0 = now_s();
  double ts = now_s();
#define TIMED(name, call) call, INFO("time %s %.3f s", name, now_s() - ts), ts = now_s()
  TIMED("plans", section_plans());
  TIMED("empty", section_empty());
  TIMED("config_reduce", section_config_reduce());
  if (g_many > 0) TIMED("many", section_many(g_many));
  TIMED("determinism", section_determinism());
  INFO("sparse: %d ranks, seed %" PRIu64 ", n %" PRId64 ", density %g, %.2f s", g_size, g_seed, g_nfeat, g_density, now_s() - t0);
  MUST_OK(kylix_finalize(c));
  return check_finish();
}
