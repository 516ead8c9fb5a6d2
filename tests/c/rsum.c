/*
 * rsum.c - KYLIX_RSUM over real processes: the same multiset of (index,
 * value) contributions, dealt among however many ranks the job has, gives the
 * same bits.
 *
 * usage: rsum [SEED]
 *
 * Every rank regenerates the whole multiset from SEED: NC contributions over
 * NK indices (a few hot), values with exponents over +-60 and random 53-bit
 * significands, a quarter cancelling an earlier one. Contribution i goes to
 * node hash(i, nodes) % nodes, so a 2-rank and a 4-rank job split (and
 * order) it differently; a rank's repeated indices are contributions like
 * others. With replication s, rank r is a replica of node r % (size/s) and
 * has that node's data.
 * Each rank asks for every index and one nobody sends, then checks:
 *   - kylix_reduce, kylix_config_reduce and kylix_ireduce give the same bits;
 *   - every result is within the error bound of include/kylix.h against the
 *     exact sum (__float128), and, on a second multiset whose values all fit
 *     the window (exponents +-5, 20-bit significands), equals the exact sum
 *     correctly rounded; an index nobody sends gets +0;
 *   - KYLIX_RSUM on an integer dtype is KYLIX_ERR_ARG naming the op.
 * It prints "DIGEST rsum-<dtype>-w<width>-<set> <fnv1a of the results>"; the
 * Go driver compares the digests of jobs of different sizes.
 */
#include "check.h"

#define NC 40000
#define NK 3000

typedef struct {
  int64_t idx;
  double v[3];
} contrib;

/* the multiset: narrow keeps every value within 32 bits of the largest */
static contrib *multiset(uint64_t seed, int narrow) {
  contrib *cs = xmalloc(NC * sizeof *cs);
  rng_t g = rng_seed(seed, (uint64_t)narrow, 0, 0);
  for (int i = 0; i < NC; i++) {
    cs[i].idx = rng_below(&g, 4) == 0 ? (int64_t)rng_below(&g, 30) : (int64_t)rng_below(&g, NK);
    for (int k = 0; k < 3; k++) {
      double m = rng_unit(&g);
      int e = narrow ? (int)rng_below(&g, 11) - 5 : (int)rng_below(&g, 121) - 60;
      if (narrow) m = ldexp(floor(ldexp(m, 20)), -20);
      double v = ldexp(m, e);
      cs[i].v[k] = rng_below(&g, 2) ? -v : v;
    }
    if (i > 0 && rng_below(&g, 4) == 0) { /* cancel an earlier contribution */
      int j = (int)rng_below(&g, (uint64_t)i);
      cs[i].idx = cs[j].idx;
      for (int k = 0; k < 3; k++) cs[i].v[k] = -cs[j].v[k];
    }
  }
  return cs;
}

static int g_nodes = 1, g_node = 0;

static int owner(int i, int size) { return (int)(sm64_mix((uint64_t)i * 2654435761u + 17) % (uint64_t)size); }

static void put(int d, void *buf, size_t i, double v) {
  if (d == KYLIX_F64) ((double *)buf)[i] = v;
  else ((float *)buf)[i] = (float)v;
}
static double get(int d, const void *buf, size_t i) {
  return d == KYLIX_F64 ? ((const double *)buf)[i] : (double)((const float *)buf)[i];
}

/* one dtype, width, multiset: the three calls, the exactness checks, the digest */
static void one(kylix_comm *c, const contrib *cs, int narrow, int d, int w) {
  const char *dn = d == KYLIX_F64 ? "f64" : "f32";
  size_t es = d == KYLIX_F64 ? 8 : 4;
  int64_t *out = xmalloc(NC * sizeof *out), nin = NK + 1;
  int64_t *in = xmalloc((size_t)nin * sizeof *in);
  void *vals = xmalloc((size_t)NC * w * es);
  int64_t n = 0;
  for (int i = 0; i < NC; i++) {
    if (owner(i, g_nodes) != g_node) continue;
    out[n] = cs[i].idx;
    for (int k = 0; k < w; k++) put(d, vals, (size_t)(n * w + k), cs[i].v[k]);
    n++;
  }
  for (int64_t k = 0; k < nin; k++) in[k] = k; /* index NK: nobody sends it */
  size_t bytes = (size_t)nin * w * es;
  void *r1 = xmalloc(bytes), *r2 = xmalloc(bytes), *r3 = xmalloc(bytes);
  kylix_plan *p = NULL;
  MUST_OK(kylix_config(c, out, n, in, nin, &p));
  MUST_OK(kylix_reduce(p, vals, r1, d, KYLIX_RSUM, w));
  MUST_OK(kylix_config_reduce(c, out, n, vals, in, nin, r2, d, KYLIX_RSUM, w, NULL));
  kylix_request *req = NULL;
  MUST_OK(kylix_ireduce(p, vals, r3, d, KYLIX_RSUM, w, &req));
  MUST_OK(kylix_wait(req));
  MUST_OK(kylix_plan_free(p));
  CHECK(memcmp(r1, r2, bytes) == 0, "%s w%d: config_reduce differs from reduce", dn, w);
  CHECK(memcmp(r1, r3, bytes) == 0, "%s w%d: ireduce differs from reduce", dn, w);

  /* the exact sums: __float128 holds every narrow sum exactly (about 36 bits); for the
     wide set its own error is far below the bound checked */
  __float128 *ex = xmalloc((size_t)nin * w * sizeof *ex);
  double *mx = xmalloc((size_t)nin * w * sizeof *mx);
  int *cnt = xmalloc((size_t)nin * sizeof *cnt);
  memset(ex, 0, (size_t)nin * w * sizeof *ex);
  memset(mx, 0, (size_t)nin * w * sizeof *mx);
  memset(cnt, 0, (size_t)nin * sizeof *cnt);
  for (int i = 0; i < NC; i++) {
    cnt[cs[i].idx]++;
    for (int k = 0; k < w; k++) {
      double v = d == KYLIX_F64 ? cs[i].v[k] : (double)(float)cs[i].v[k];
      ex[cs[i].idx * w + k] += v;
      if (fabs(v) > mx[cs[i].idx * w + k]) mx[cs[i].idx * w + k] = fabs(v);
    }
  }
  int bad = 0;
  for (int64_t j = 0; j < nin * w && bad < 3; j++) {
    double got = get(d, r1, (size_t)j);
    double want = d == KYLIX_F64 ? (double)ex[j] : (double)(float)ex[j];
    if (narrow || cnt[j / w] == 0) {
      if (got != want || (cnt[j / w] == 0 && signbit(got))) {
        FAILF("%s w%d narrow: index %" PRId64 " = %a, want the exact sum rounded, %a", dn, w, j / w, got, want);
        bad++;
      }
      continue;
    }
    double ulp = d == KYLIX_F64 ? nextafter(fabs(got), INFINITY) - fabs(got)
                                : (double)(nextafterf((float)fabs(got), INFINITY) - (float)fabs(got));
    __float128 bound = (__float128)ulp / 2 + (__float128)cnt[j / w] * mx[j] * (d == KYLIX_F64 ? 0x1p-64 : 0x1p-32);
    __float128 err = (__float128)got - ex[j];
    if (err < 0) err = -err;
    if (err > bound) {
      FAILF("%s w%d wide: index %" PRId64 " = %a, %g from the exact sum, beyond the bound %g", dn, w, j / w, got,
            (double)err, (double)bound);
      bad++;
    }
  }
  if (!bad) PASS("rsum %s w%d %s: reduce = config_reduce = ireduce, against __float128", dn, w, narrow ? "narrow" : "wide");
  say("DIGEST", "rsum-%s-w%d-%s %016" PRIx64, dn, w, narrow ? "narrow" : "wide", fnv1a(r1, bytes));
  free(out), free(in), free(vals), free(r1), free(r2), free(r3), free(ex), free(mx), free(cnt);
}

int main(int argc, char **argv) {
  check_init("rsum", 110);
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 5;
  kylix_comm *c = init_comm("timeout_ms=30000");
  g_nodes = g_size / (getenv("KYLIX_REPLICATION") ? atoi(getenv("KYLIX_REPLICATION")) : 1);
  g_node = g_rank % g_nodes;
  for (int narrow = 0; narrow < 2; narrow++) {
    contrib *cs = multiset(seed, narrow);
    one(c, cs, narrow, KYLIX_F64, 1);
    one(c, cs, narrow, KYLIX_F32, 1);
    one(c, cs, narrow, KYLIX_F64, 3);
    free(cs);
  }
  /* integer dtypes: refused on every rank, naming the op and the dtype */
  int64_t idx = g_node, v = 1, r = 0; /* replicas are given the same data */
  kylix_plan *p = NULL;
  MUST_OK(kylix_config(c, &idx, 1, &idx, 1, &p));
  if (CHECK_ST(kylix_reduce(p, &v, &r, KYLIX_I64, KYLIX_RSUM, 1), KYLIX_ERR_ARG) == KYLIX_ERR_ARG) {
    const char *m = errmsg_of(c);
    CHECK(contains_ci(m, "rsum") && contains_ci(m, "i64"), "the message names neither rsum nor i64: %s", m);
  }
  MUST_OK(kylix_plan_free(p));
  if (!g_fail) PASS("rsum: every check");
  MUST_OK(kylix_finalize(c));
  return check_finish();
}
