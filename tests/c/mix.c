/*
 * mix.c - kylix_mix (butterfly mixing) through the C ABI.
 *
 * usage: mix DEGREES [SEED]
 *
 * DEGREES is the job's degrees option as given to kylixrun ("" or "auto" for
 * the default): the program derives the butterfly kylix.h documents for
 * mixing (fixed degrees, else binary) and
 * simulates every rank's vectors itself, so it knows each step's exact
 * result.
 *
 * converge: F64 and F32 vectors from (SEED, rank); L steps starting at step
 *   7. After each step buf must equal, bit for bit, its group's average
 *   summed in member order and divided by the group size (so the members of
 *   a group agree bitwise); after L steps every rank holds the global mean
 *   within float tolerance. Nothing outside buf is written. Prints
 *   "DIGEST mix_f64"/"mix_f32" of the final vectors: equal on every rank.
 * badargs: integer and unknown dtypes, step < 0, count < 0, NULL buf with
 *   count > 0, NULL comm: KYLIX_ERR_ARG naming the argument, buf untouched;
 *   count 0 with NULL buf is fine; the comm stays usable.
 * mismatch: one rank passes another step (same layer, other layer), another
 *   count or dtype: every rank returns within 5 s, the odd rank and its
 *   butterfly neighbours with KYLIX_ERR_MISMATCH, the rest with
 *   KYLIX_ERR_MISMATCH or KYLIX_OK; then a barrier and a correct step.
 */
#include "check.h"

#define MAXR 64
#define MAXL 16
#define N 1001

static int L, deg[MAXL], stride[MAXL];

/* topo: the mixing butterfly for m ranks and the degrees option spec. */
static int topo(const char *spec, int m) {
  int ds[MAXL], nd = 0;
  if (!spec[0] || !strcmp(spec, "auto")) spec = "binary";
  if (!strcmp(spec, "direct")) {
    ds[nd++] = m;
  } else if (!strcmp(spec, "binary")) {
    int r = m;
    while (r % 2 == 0 && r > 1) ds[nd++] = 2, r /= 2;
    if (r > 1) ds[nd++] = r;
  } else {
    for (const char *p = spec; *p && nd < MAXL;) {
      ds[nd++] = (int)strtol(p, (char **)&p, 10);
      if (*p == 'x') p++;
    }
  }
  int prod = 1;
  L = 0;
  for (int i = 0; i < nd; i++) {
    prod *= ds[i];
    if (ds[i] > 1) deg[L] = ds[i], stride[L] = prod / ds[i], L++;
  }
  return prod == m;
}
static int digit(int r, int i) { return r / stride[i] % deg[i]; }
static int member(int r, int i, int g) { return r + (g - digit(r, i)) * stride[i]; }

static double val(uint64_t seed, int r, int i) {
  rng_t g = rng_seed(seed, 5, (uint64_t)r, (uint64_t)i);
  return (rng_unit(&g) * 2 - 1) * (1 + r % 3) * 100;
}

/* one simulated step on every rank's vector, at layer i */
static void sim_f64(double v[][N], int m, int i) {
  static double nv[MAXR][N];
  for (int r = 0; r < m; r++)
    for (int k = 0; k < N; k++) {
      double acc = v[member(r, i, 0)][k];
      for (int g = 1; g < deg[i]; g++) acc += v[member(r, i, g)][k];
      nv[r][k] = acc / (double)deg[i];
    }
  memcpy(v, nv, sizeof(double) * N * (size_t)m);
}
static void sim_f32(float v[][N], int m, int i) {
  static float nv[MAXR][N];
  for (int r = 0; r < m; r++)
    for (int k = 0; k < N; k++) {
      float acc = v[member(r, i, 0)][k];
      for (int g = 1; g < deg[i]; g++) acc += v[member(r, i, g)][k];
      nv[r][k] = acc / (float)deg[i];
    }
  memcpy(v, nv, sizeof(float) * N * (size_t)m);
}

static double sd[MAXR][N];
static float sf[MAXR][N];

static void section_converge(kylix_comm *c, uint64_t seed) {
  int f0 = g_fail, m = g_size;
  const int64_t s0 = 7;
  double mean[N];
  for (int k = 0; k < N; k++) {
    mean[k] = 0;
    for (int r = 0; r < m; r++) {
      sd[r][k] = val(seed, r, k);
      sf[r][k] = (float)sd[r][k];
      mean[k] += sd[r][k];
    }
    mean[k] /= m;
  }
  gbuf bd = gbuf_new(N * sizeof(double), 0), bf = gbuf_new(N * sizeof(float), 0);
  double *d = gbuf_ptr(bd);
  float *f = gbuf_ptr(bf);
  memcpy(d, sd[g_rank], sizeof(double) * N);
  memcpy(f, sf[g_rank], sizeof(float) * N);
  int steps = L > 0 ? L : 1;
  for (int s = 0; s < steps; s++) {
    int64_t step = s0 + s;
    MUST_OK(kylix_mix(c, d, N, KYLIX_F64, step));
    MUST_OK(kylix_mix(c, f, N, KYLIX_F32, step));
    if (L > 0) {
      sim_f64(sd, m, (int)(step % L));
      sim_f32(sf, m, (int)(step % L));
    }
    if (memcmp(d, sd[g_rank], sizeof(double) * N) != 0)
      FAILF("step %" PRId64 " F64: buf is not the group's member-order average", step);
    if (memcmp(f, sf[g_rank], sizeof(float) * N) != 0)
      FAILF("step %" PRId64 " F32: buf is not the group's member-order average", step);
  }
  for (int k = 0; k < N; k++) {
    if (fabs(d[k] - mean[k]) > 1e-12 * 300) { FAILF("F64 [%d] = %.17g, global mean %.17g", k, d[k], mean[k]); break; }
    if (fabs(f[k] - mean[k]) > 2e-6 * 300) { FAILF("F32 [%d] = %.9g, global mean %.17g", k, f[k], mean[k]); break; }
  }
  CHECK(gbuf_guards_ok(bd) && gbuf_guards_ok(bf), "kylix_mix wrote outside buf");
  say("DIGEST", "mix_f64 %016" PRIx64, fnv1a(d, sizeof(double) * N));
  say("DIGEST", "mix_f32 %016" PRIx64, fnv1a(f, sizeof(float) * N));
  gbuf_free(bd);
  gbuf_free(bf);
  if (g_fail == f0) PASS("converge: exact group averages each step, global mean after %d steps (F64, F32)", steps);
}

static void section_badargs(kylix_comm *c) {
  int f0 = g_fail;
  double d[8], keep[8];
  for (int k = 0; k < 8; k++) d[k] = keep[k] = g_rank + k;
  /* every rank makes the same bad calls in the same order: each is rejected locally and
     still takes its collective's slot, so the ranks stay in step */
#define BAD(what, word, call)                                                              \
  do {                                                                                     \
    int st_ = (call);                                                                      \
    CHECK(st_ == KYLIX_ERR_ARG && contains_ci(kylix_errmsg(c), word),                      \
          "%s returned %s, want KYLIX_ERR_ARG naming %s: %s", what, status_name(st_), word, \
          errmsg_of(c));                                                                   \
  } while (0)
  BAD("I32", "dtype", kylix_mix(c, d, 8, KYLIX_I32, 0));
  BAD("I64", "dtype", kylix_mix(c, d, 8, KYLIX_I64, 0));
  BAD("U64", "dtype", kylix_mix(c, d, 8, KYLIX_U64, 0));
  BAD("dtype 0", "dtype", kylix_mix(c, d, 8, 0, 0));
  BAD("dtype 257", "dtype", kylix_mix(c, d, 8, 257, 0));
  BAD("step -1", "step", kylix_mix(c, d, 8, KYLIX_F64, -1));
  BAD("step INT64_MIN", "step", kylix_mix(c, d, 8, KYLIX_F32, INT64_MIN));
  BAD("count -1", "count", kylix_mix(c, d, -1, KYLIX_F64, 0));
  BAD("NULL buf", "buf", kylix_mix(c, NULL, 8, KYLIX_F64, 0));
#undef BAD
  int st;
  st = kylix_mix(NULL, d, 8, KYLIX_F64, 0);
  CHECK(st == KYLIX_ERR_ARG, "NULL comm returned %s, want KYLIX_ERR_ARG", status_name(st));
  CHECK(memcmp(d, keep, sizeof d) == 0, "a rejected kylix_mix changed buf");
  CHECK_ST(kylix_mix(c, NULL, 0, KYLIX_F32, 3), KYLIX_OK);
  CHECK_ST(kylix_barrier(c), KYLIX_OK);
  if (g_fail == f0) PASS("badargs: KYLIX_ERR_ARG naming the argument; comm stays usable");
}

static int neighbour(int a, int b) {
  for (int i = 0; i < L; i++)
    for (int g = 0; g < deg[i]; g++)
      if (member(a, i, g) == b) return 1;
  return a == b;
}

static void section_mismatch(kylix_comm *c) {
  int f0 = g_fail, odd = g_size > 2 ? 2 : g_size - 1;
  int me_odd = g_rank == odd;
  double d[16];
  float f[16];
  static const char *names[] = {"step (same layer)", "step (next layer)", "count", "dtype"};
  for (int k = 0; k < 4; k++) {
    for (int j = 0; j < 16; j++) d[j] = f[j] = (float)g_rank;
    double t0 = now_s();
    int st;
    int64_t base = 100;
    switch (k) {
    case 0: st = kylix_mix(c, d, 16, KYLIX_F64, me_odd ? base + (L > 0 ? L : 1) : base); break;
    case 1: st = kylix_mix(c, d, 16, KYLIX_F64, me_odd ? base + 1 : base); break;
    case 2: st = kylix_mix(c, d, me_odd ? 15 : 16, KYLIX_F64, base); break;
    default: st = me_odd ? kylix_mix(c, f, 16, KYLIX_F32, base) : kylix_mix(c, d, 16, KYLIX_F64, base); break;
    }
    double el = now_s() - t0;
    CHECK(el < 5.0, "%s: took %.1f s (a timeout, not detection)", names[k], el);
    if (neighbour(odd, g_rank))
      CHECK(st == KYLIX_ERR_MISMATCH, "%s: got %s, want KYLIX_ERR_MISMATCH: %s", names[k], status_name(st), errmsg_of(c));
    else
      CHECK(st == KYLIX_ERR_MISMATCH || st == KYLIX_OK, "%s: got %s: %s", names[k], status_name(st), errmsg_of(c));
    if (st == KYLIX_ERR_MISMATCH && !me_odd)
      CHECK(names_rank(kylix_errmsg(c), odd),
            "%s: message does not name rank %d: %s", names[k], odd, errmsg_of(c));
    MUST_OK(kylix_barrier(c));
  }
  for (int j = 0; j < 16; j++) d[j] = g_rank;
  for (int s = 0; s < (L > 0 ? L : 1); s++) MUST_OK(kylix_mix(c, d, 16, KYLIX_F64, 40 + s));
  double want = (g_size - 1) / 2.0;
  CHECK(fabs(d[5] - want) < 1e-12, "after the mismatches: mean %.17g, want %.17g", d[5], want);
  if (g_fail == f0) PASS("mismatch: step, count and dtype disagreements detected without a timeout");
}

int main(int argc, char **argv) {
  check_init("mix", 100);
  const char *spec = argc > 1 ? argv[1] : "";
  uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 11;
  kylix_comm *c = init_comm("timeout_ms=20000");
  if (g_size > MAXR || !topo(spec, g_size)) {
    FAILF("degrees \"%s\" do not fit %d ranks (this program handles up to %d)", spec, g_size, MAXR);
    return check_finish();
  }
  INFO("mixing butterfly: %d layer(s) on %d ranks", L, g_size);
  section_converge(c, seed);
  section_badargs(c);
  section_mismatch(c);
  CHECK_ST(kylix_finalize(c), KYLIX_OK);
  return check_finish();
}
