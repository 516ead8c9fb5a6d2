/*
 * launch_check.c - one small, complete job for the launcher tests (tests/launchers_test.go):
 * whatever started it (kylixrun, mpirun, srun, ssh), it joins with kylix_init("") or the
 * options given, then checks a sparse config + reduce, a config_reduce and two dense
 * allreduces against references every rank computes itself.
 *
 * usage: launch_check [N_FEATURES [OPTIONS]]      (defaults: 20000, "")
 *
 * Besides the usual check.h lines it prints, before the collectives,
 *   r<rank> INFO where launcher=<name> launcher_rank=<r> netns=<net:[inode]> host=<hostname>
 * so the driver can tell which launcher's variables gave the rank and in which network
 * namespace each rank ran.
 */
#include "check.h"

static int64_t g_nfeat = 20000;

/* The launcher's own idea of this rank, or -1. */
static int launcher_rank(const char **name) {
  static const char *vars[][2] = {{"KYLIX_RANK", "kylix"},
                                  {"OMPI_COMM_WORLD_RANK", "openmpi"},
                                  {"PMI_RANK", "pmi"},
                                  {"SLURM_PROCID", "slurm"}};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i][0]);
    if (v && *v) {
      *name = vars[i][1];
      return atoi(v);
    }
  }
  *name = "none";
  return -1;
}

/* Rank s contributes to index i (some indices twice), and wants index i. */
static uint64_t h2(uint64_t i, uint64_t s, uint64_t salt) {
  return sm64_mix(sm64_mix(i + 0x1234567ull * salt) ^ (s + 1) * 0x9E3779B97F4A7C15ull);
}
static int out_mult(int s, int64_t i) {
  uint64_t h = h2((uint64_t)i, (uint64_t)s, 1) % 100;
  return h < 2 ? 2 : h < 10 ? 1 : 0;
}
static int wants(int r, int64_t i) { return h2((uint64_t)i, (uint64_t)r, 2) % 100 < 15; }
static int64_t ival(int s, int64_t i, int k) { return (int64_t)s * 1000003 + i * 3 + k; }
static double dval(int s, int64_t i) { return (double)(s * 10 + (int)(i % 10)); }
static float fval(int s, int64_t i) { return (float)((s + 1) * (1 + (i % 5))); }

int main(int argc, char **argv) {
  check_init("launch_check", 100);
  if (argc > 1) g_nfeat = strtoll(argv[1], NULL, 0);
  const char *options = argc > 2 ? argv[2] : "";
  const char *lname;
  int lrank = launcher_rank(&lname);
  if (g_rank < 0) g_rank = lrank;

  kylix_comm *c = init_comm(options);
  const int r = g_rank, n = g_size;
  CHECK(lrank < 0 || lrank == r, "kylix_rank=%d but the %s launcher says rank %d", r, lname, lrank);

  char ns[128] = "?";
  ssize_t k = readlink("/proc/self/ns/net", ns, sizeof ns - 1);
  ns[k > 0 ? k : 1] = 0;
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = 0;
  INFO("where launcher=%s launcher_rank=%d netns=%s host=%s", lname, lrank, ns, host);

  /* ---- sparse: out indices with repeats, in indices plus one nobody contributes to */
  int64_t *out = xmalloc(sizeof(int64_t) * (size_t)(2 * g_nfeat));
  int64_t *in = xmalloc(sizeof(int64_t) * (size_t)(g_nfeat + 1));
  int64_t nout = 0, nin = 0;
  for (int64_t i = 0; i < g_nfeat; i++) {
    for (int m = out_mult(r, i); m > 0; m--) out[nout++] = i;
    if (wants(r, i)) in[nin++] = i;
  }
  in[nin++] = g_nfeat + 5 + r; /* nobody contributes: the identity */
  /* a permutation, so neither side is sorted */
  rng_t g = rng_seed(99, 1, (uint64_t)r, 0);
  for (int64_t j = nout - 1; j > 0; j--) {
    int64_t t = (int64_t)rng_below(&g, (uint64_t)j + 1), x = out[j];
    out[j] = out[t];
    out[t] = x;
  }

  int64_t *ov = xmalloc(sizeof(int64_t) * (size_t)(2 * nout + 1));
  int64_t *iv = xmalloc(sizeof(int64_t) * (size_t)(2 * nin));
  double *od = xmalloc(sizeof(double) * (size_t)(nout + 1));
  double *id = xmalloc(sizeof(double) * (size_t)nin);
  float *of = xmalloc(sizeof(float) * (size_t)(nout + 1));
  float *iF = xmalloc(sizeof(float) * (size_t)nin);
  for (int64_t j = 0; j < nout; j++) {
    ov[2 * j] = ival(r, out[j], 0);
    ov[2 * j + 1] = ival(r, out[j], 1);
    od[j] = dval(r, out[j]);
    of[j] = fval(r, out[j]);
  }

  double t0 = now_s();
  kylix_plan *p = NULL;
  MUST_OK(kylix_config(c, out, nout, in, nin, &p));
  MUST_OK(kylix_reduce(p, ov, iv, KYLIX_I64, KYLIX_SUM, 2));
  MUST_OK(kylix_reduce(p, od, id, KYLIX_F64, KYLIX_MAX, 1));
  MUST_OK(kylix_config_reduce(c, out, nout, of, in, nin, iF, KYLIX_F32, KYLIX_SUM, 1, NULL));
  double t_sparse = now_s() - t0;

  int bad = 0;
  for (int64_t j = 0; j < nin; j++) {
    int64_t i = in[j];
    int64_t want0 = 0, want1 = 0;
    double wmax = -INFINITY;
    float wsum = 0;
    for (int s = 0; s < n; s++) {
      int m = i < g_nfeat ? out_mult(s, i) : 0;
      if (!m) continue;
      want0 += m * ival(s, i, 0);
      want1 += m * ival(s, i, 1);
      if (dval(s, i) > wmax) wmax = dval(s, i);
      wsum += (float)m * fval(s, i);
    }
    if (iv[2 * j] != want0 || iv[2 * j + 1] != want1 || id[j] != wmax || iF[j] != wsum) {
      if (bad++ < 5)
        FAILF("sparse: index %" PRId64 ": got %" PRId64 ",%" PRId64 " max %g sum %g; want %" PRId64
              ",%" PRId64 " max %g sum %g",
              i, iv[2 * j], iv[2 * j + 1], id[j], (double)iF[j], want0, want1, wmax, (double)wsum);
    }
  }
  if (!bad)
    PASS("sparse: %" PRId64 " out, %" PRId64 " in, i64 sum w2, f64 max, f32 config_reduce over %d ranks (%.3f s)",
         nout, nin, n, t_sparse);
  kylix_plan_free(p);

  /* ---- dense */
  enum { DN = 10000 };
  double *dsend = xmalloc(sizeof(double) * DN), *drecv = xmalloc(sizeof(double) * DN);
  int32_t *isend = xmalloc(sizeof(int32_t) * DN), *irecv = xmalloc(sizeof(int32_t) * DN);
  for (int i = 0; i < DN; i++) {
    dsend[i] = r + i % 13;
    isend[i] = (int32_t)((r * 7919 + i) % 1000);
  }
  MUST_OK(kylix_allreduce(c, dsend, drecv, DN, KYLIX_F64, KYLIX_SUM));
  MUST_OK(kylix_allreduce(c, isend, irecv, DN, KYLIX_I32, KYLIX_MAX));
  bad = 0;
  for (int i = 0; i < DN; i++) {
    double want = (double)n * (i % 13) + (double)n * (n - 1) / 2;
    int32_t imax = INT32_MIN;
    for (int s = 0; s < n; s++) {
      int32_t v = (int32_t)((s * 7919 + i) % 1000);
      if (v > imax) imax = v;
    }
    if (drecv[i] != want || irecv[i] != imax) {
      if (bad++ < 5) FAILF("allreduce: element %d: got %g, %d; want %g, %d", i, drecv[i], irecv[i], want, imax);
    }
  }
  if (!bad) PASS("allreduce: %d f64 sum, %d i32 max over %d ranks", DN, DN, n);

  MUST_OK(kylix_barrier(c));
  CHECK_ST(kylix_finalize(c), KYLIX_OK);
  g_comm = NULL;
  free(out), free(in), free(ov), free(iv), free(od), free(id), free(of), free(iF);
  free(dsend), free(drecv), free(isend), free(irecv);
  return check_finish();
}
