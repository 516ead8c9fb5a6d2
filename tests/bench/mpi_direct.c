/* mpi_direct.c — the "direct all-to-all" sparse allreduce of "Kylix: A Sparse Allreduce for
 * Commodity Clusters" (§VI, Table I), written as a plain Open MPI program, to measure Kylix
 * (kylix_sparse.c) against it on identical Poisson power-law data (powerlaw.h), in one run
 * (run_sparse.sh). f32 SUM, width 1.
 *
 * Every index has a home rank by a hash (splitmix64's finaliser, a bijection of 64-bit keys,
 * so the hash stands for the index: homes receive and sort hashes). Config: each rank
 * partitions its out and in lists by home (stable counting partition, streaming) and keeps
 * the destination of every position; MPI_Alltoall counts, MPI_Alltoallv the hashes; the home
 * radix-sorts what it received, builds the union and a map from every received position into
 * it. When in = out on every rank (same array), the in side reuses the out side's work, as a
 * careful hand-written program would. Reduce: values partitioned by the kept destinations,
 * MPI_Alltoallv to the homes, the home sums into its union in source order, gathers each
 * source's in list, MPI_Alltoallv back, and the rank un-partitions into caller order. A
 * reduce allocates nothing.
 *
 * Prints (rank 0) medians over iterations, each timed between barriers as the max over ranks:
 * config, reduce, one-shot config + reduce, and MPI_Allreduce of the densified n-vector.
 * Results are checked against a brute force (every rank regenerates every rank's set).
 * Options: n= density= alpha= seed= separate_in= check= keys= (or BENCH_<KEY>), see powerlaw.h.
 * lat=N (BENCH_LAT) runs the latency benchmark instead (run_latency.sh): N back-to-back
 * reduces of one kept plan and (unless BENCH_LAT_DENSE=0) N 8-float MPI_Allreduce calls, each figure the slowest rank's.
 * BENCH_PHASES=1 also prints where rank 0's time goes, phase by phase.
 */
#include "powerlaw.h"
#include <mpi.h>
#include <string.h>

static void *xmalloc(size_t b) {
  void *p = malloc(b ? b : 1);
  if (!p) { fprintf(stderr, "mpi_direct: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
  return p;
}

static inline int home_of(uint64_t h, int m) { return (int)(((__uint128_t)h * m) >> 64); }

/* Where rank 0's time goes (BENCH_PHASES=1): seconds per phase, summed over timed calls. */
enum { PH_PART, PH_XCHG, PH_SORT, PH_UNION, PH_IN, PH_ALLOC, PH_PACK, PH_A2A_UP, PH_SUM,
       PH_GATHER, PH_A2A_DOWN, PH_UNPACK, PH_N };
static const char *ph_name[PH_N] = {"partition", "alltoallv keys", "radix sort", "union+maps",
                                    "in side", "buffers", "pack", "alltoallv up", "sum",
                                    "gather", "alltoallv down", "unpack"};
static double ph_acc[PH_N], ph_t;
static inline void ph(int i) { double t = MPI_Wtime(); if (i >= 0) ph_acc[i] += t - ph_t; ph_t = t; }

typedef struct { uint64_t k; uint64_t p; } kp; /* hashed key, received position */

/* LSD radix sort on the top ~log2(N)+1 bits in passes of <= 11 bits (bucket heads stay in
 * cache), then insertion sort, which on uniform keys has O(1) expected work per element. */
static void radix_sort(kp *a, kp *tmp, size_t N) {
  if (N < 2) return;
  int bits = 1;
  while (bits < 63 && (1ULL << bits) < N) bits++;
  bits++;
  int passes = (bits + 10) / 11, pb = (bits + passes - 1) / passes;
  int low = 64 - passes * pb;
  size_t cnt[1 << 11];
  for (int ps = 0; ps < passes; ps++) {
    int sh = low + ps * pb;
    size_t nb = (size_t)1 << pb, mask = nb - 1, s = 0;
    memset(cnt, 0, nb * sizeof(size_t));
    for (size_t i = 0; i < N; i++) cnt[(a[i].k >> sh) & mask]++;
    for (size_t b = 0; b < nb; b++) { size_t c = cnt[b]; cnt[b] = s; s += c; }
    for (size_t i = 0; i < N; i++) tmp[cnt[(a[i].k >> sh) & mask]++] = a[i];
    kp *t = a; a = tmp; tmp = t;
  }
  if (passes % 2) memcpy(tmp, a, N * sizeof(kp)), a = tmp; /* result back in the caller's a */
  for (size_t i = 1; i < N; i++) {
    kp x = a[i];
    size_t j = i;
    while (j > 0 && a[j - 1].k > x.k) { a[j] = a[j - 1]; j--; }
    a[j] = x;
  }
}

typedef struct {
  int m, same;
  int64_t n_out, n_in, r_out, r_in, nu;
  int32_t *dst_out, *dst_in;   /* caller position -> position in the partitioned buffer */
  int *sc_out, *sd_out, *rc_out, *rd_out, *sc_in, *sd_in, *rc_in, *rd_in;
  int32_t *umap_out, *umap_in; /* received position -> union slot (-1: no contribution) */
  float *sendv, *recvv, *u, *ans, *back;
} plan;

/* partition hashes idx by home: dst[j] and the partitioned hashes keys; counts in sc, sd */
static void partition(const int64_t *idx, int64_t n, int m, int32_t *dst, uint64_t *keys,
                      int *sc, int *sd) {
  memset(sc, 0, m * sizeof(int));
  for (int64_t j = 0; j < n; j++) sc[home_of(pl_mix64((uint64_t)idx[j]), m)]++;
  int s = 0;
  for (int g = 0; g < m; g++) { sd[g] = s; s += sc[g]; }
  int *head = xmalloc(m * sizeof(int));
  memcpy(head, sd, m * sizeof(int));
  for (int64_t j = 0; j < n; j++) {
    uint64_t h = pl_mix64((uint64_t)idx[j]);
    int d = head[home_of(h, m)]++;
    dst[j] = d;
    keys[d] = h;
  }
  free(head);
}

/* send the partitioned keys home; returns the received keys, fills rc, rd and *r */
static uint64_t *exchange(const uint64_t *keys, int *sc, int *sd, int *rc, int *rd,
                          int64_t *r, int m) {
  MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, MPI_COMM_WORLD);
  int64_t s = 0;
  for (int g = 0; g < m; g++) { rd[g] = (int)s; s += rc[g]; }
  *r = s;
  uint64_t *rk = xmalloc((size_t)s * sizeof(uint64_t));
  MPI_Alltoallv(keys, sc, sd, MPI_UINT64_T, rk, rc, rd, MPI_UINT64_T, MPI_COMM_WORLD);
  return rk;
}

static kp *sorted_pairs(const uint64_t *rk, int64_t r, kp **tmp) {
  kp *a = xmalloc((size_t)r * sizeof(kp));
  *tmp = xmalloc((size_t)r * sizeof(kp));
  for (int64_t p = 0; p < r; p++) a[p].k = rk[p], a[p].p = (uint64_t)p;
  radix_sort(a, *tmp, (size_t)r);
  return a;
}

static plan *config(const int64_t *out, int64_t n_out, const int64_t *in, int64_t n_in) {
  plan *P = calloc(1, sizeof(plan));
  int m;
  MPI_Comm_size(MPI_COMM_WORLD, &m);
  P->m = m, P->n_out = n_out, P->n_in = n_in;
  int same = in == out && n_in == n_out;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  P->same = same;
  ph(-1);
  int **cs[8] = {&P->sc_out, &P->sd_out, &P->rc_out, &P->rd_out,
                 &P->sc_in, &P->sd_in, &P->rc_in, &P->rd_in};
  for (int i = 0; i < 8; i++) *cs[i] = xmalloc(m * sizeof(int));

  P->dst_out = xmalloc((size_t)n_out * sizeof(int32_t));
  uint64_t *keys = xmalloc((size_t)n_out * sizeof(uint64_t));
  partition(out, n_out, m, P->dst_out, keys, P->sc_out, P->sd_out);
  ph(PH_PART);
  uint64_t *rk = exchange(keys, P->sc_out, P->sd_out, P->rc_out, P->rd_out, &P->r_out, m);
  free(keys);
  ph(PH_XCHG);
  kp *tmp, *a = sorted_pairs(rk, P->r_out, &tmp);
  free(rk);
  ph(PH_SORT);
  P->umap_out = xmalloc((size_t)P->r_out * sizeof(int32_t));
  uint64_t *ukeys = same ? NULL : xmalloc((size_t)P->r_out * sizeof(uint64_t));
  int64_t nu = 0;
  for (int64_t i = 0; i < P->r_out; i++) {
    if (i == 0 || a[i].k != a[i - 1].k) {
      if (ukeys) ukeys[nu] = a[i].k;
      nu++;
    }
    P->umap_out[a[i].p] = (int32_t)(nu - 1);
  }
  P->nu = nu;
  free(a), free(tmp);
  ph(PH_UNION);

  if (same) {
    P->dst_in = P->dst_out, P->umap_in = P->umap_out, P->r_in = P->r_out;
    memcpy(P->sc_in, P->sc_out, m * sizeof(int)), memcpy(P->sd_in, P->sd_out, m * sizeof(int));
    memcpy(P->rc_in, P->rc_out, m * sizeof(int)), memcpy(P->rd_in, P->rd_out, m * sizeof(int));
  } else {
    P->dst_in = xmalloc((size_t)n_in * sizeof(int32_t));
    keys = xmalloc((size_t)n_in * sizeof(uint64_t));
    partition(in, n_in, m, P->dst_in, keys, P->sc_in, P->sd_in);
    rk = exchange(keys, P->sc_in, P->sd_in, P->rc_in, P->rd_in, &P->r_in, m);
    free(keys);
    a = sorted_pairs(rk, P->r_in, &tmp);
    free(rk);
    P->umap_in = xmalloc((size_t)P->r_in * sizeof(int32_t));
    int64_t u = 0; /* merge the sorted in keys with the sorted union */
    for (int64_t i = 0; i < P->r_in; i++) {
      while (u < nu && ukeys[u] < a[i].k) u++;
      P->umap_in[a[i].p] = u < nu && ukeys[u] == a[i].k ? (int32_t)u : -1;
    }
    free(a), free(tmp);
  }
  free(ukeys);
  ph(PH_IN);
  P->sendv = xmalloc((size_t)n_out * sizeof(float));
  P->recvv = xmalloc((size_t)P->r_out * sizeof(float));
  P->u = xmalloc((size_t)nu * sizeof(float));
  P->ans = xmalloc((size_t)P->r_in * sizeof(float));
  P->back = xmalloc((size_t)n_in * sizeof(float));
  ph(PH_ALLOC);
  return P;
}

static void plan_free(plan *P) {
  if (!P->same) free(P->dst_in), free(P->umap_in);
  free(P->dst_out), free(P->umap_out);
  free(P->sc_out), free(P->sd_out), free(P->rc_out), free(P->rd_out);
  free(P->sc_in), free(P->sd_in), free(P->rc_in), free(P->rd_in);
  free(P->sendv), free(P->recvv), free(P->u), free(P->ans), free(P->back);
  free(P);
}

static void reduce(plan *P, const float *out_vals, float *in_vals) {
  ph(-1);
  for (int64_t j = 0; j < P->n_out; j++) P->sendv[P->dst_out[j]] = out_vals[j];
  ph(PH_PACK);
  MPI_Alltoallv(P->sendv, P->sc_out, P->sd_out, MPI_FLOAT, P->recvv, P->rc_out, P->rd_out,
                MPI_FLOAT, MPI_COMM_WORLD);
  ph(PH_A2A_UP);
  memset(P->u, 0, (size_t)P->nu * sizeof(float));
  for (int64_t p = 0; p < P->r_out; p++) P->u[P->umap_out[p]] += P->recvv[p]; /* source order */
  ph(PH_SUM);
  for (int64_t q = 0; q < P->r_in; q++) P->ans[q] = P->umap_in[q] >= 0 ? P->u[P->umap_in[q]] : 0;
  ph(PH_GATHER);
  MPI_Alltoallv(P->ans, P->rc_in, P->rd_in, MPI_FLOAT, P->back, P->sc_in, P->sd_in, MPI_FLOAT,
                MPI_COMM_WORLD);
  ph(PH_A2A_DOWN);
  for (int64_t j = 0; j < P->n_in; j++) in_vals[j] = P->back[P->dst_in[j]];
  ph(PH_UNPACK);
}

static void ph_print(int rank, const char *what, int calls, int lo, int hi) {
  if (rank != 0 || !getenv("BENCH_PHASES") || atoi(getenv("BENCH_PHASES")) == 0) return;
  printf("phases rank 0 %s (ms per call):", what);
  for (int i = lo; i < hi; i++) printf(" %s %.2f", ph_name[i], ph_acc[i] * 1e3 / calls);
  printf("\n");
}

static double t_start(void) { MPI_Barrier(MPI_COMM_WORLD); return MPI_Wtime(); }
static double t_stop(double t0) { /* max over ranks */
  double dt = MPI_Wtime() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return dt * 1e3;
}

/* ---- lat=N: the latency benchmark of run_latency.sh (back-to-back small exchanges) ---- */
typedef struct { plan *P; const float *ov; float *iv; } lat_job;
static int lat_reduce(void *a) { lat_job *j = a; reduce(j->P, j->ov, j->iv); return 0; }
static float lat_send[8], lat_recv[8];
static int lat_dense8(void *a) {
  (void)a;
  return MPI_Allreduce(lat_send, lat_recv, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS;
}

/* latency: config once, a checked warm-up reduce, then o->lat back-to-back reduces of the kept
 * plan and o->lat 8-float MPI_Allreduce calls; rank 0 prints two LAT lines (slowest rank). */
static int latency(const pl_opts *o, int rank, int m, pl_set out, pl_set in, const float *ov,
                   float *iv, const float *expect) {
  plan *P = config(out.ids, out.len, in.ids, in.len);
  reduce(P, ov, iv);
  int64_t bad = expect ? pl_mismatches(expect, in.ids, in.len, iv) : 0, n_out = out.len;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &n_out, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  const char *check = !expect ? "skipped" : bad ? "FAIL" : "OK";
  lat_job j = {P, ov, iv};
  double r[2];
  MPI_Barrier(MPI_COMM_WORLD);
  pl_lat_loop(o->lat, lat_reduce, &j, &r[0], &r[1]);
  MPI_Allreduce(MPI_IN_PLACE, r, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) pl_lat_report("mpi", m, "sparse", n_out / m, o->lat, r[0], r[1], check);
  plan_free(P);
  if (getenv("BENCH_LAT_DENSE") && !atoi(getenv("BENCH_LAT_DENSE"))) {
    MPI_Finalize();
    return bad != 0;
  }
  for (int i = 0; i < 8; i++) lat_send[i] = (float)(rank + i);
  lat_dense8(NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  pl_lat_loop(o->lat, lat_dense8, NULL, &r[0], &r[1]);
  MPI_Allreduce(MPI_IN_PLACE, r, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) pl_lat_report("mpi", m, "dense8", 8, o->lat, r[0], r[1], "skipped");
  MPI_Finalize();
  return bad != 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, m;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &m);
  pl_opts o = pl_opts_parse(argc, argv);
  double lambda = pl_solve_lambda(o.n, o.density, o.alpha);
  pl_set out = pl_sample(o.n, lambda, o.alpha, o.seed, 2 * (uint64_t)rank), in = out;
  if (o.separate_in) in = pl_sample(o.n, lambda, o.alpha, o.seed, 2 * (uint64_t)rank + 1);
  float *ov = xmalloc((size_t)out.len * sizeof(float)), *iv = xmalloc((size_t)in.len * sizeof(float));
  for (int64_t j = 0; j < out.len; j++) ov[j] = pl_value(rank, out.ids[j]);
  float *expect = o.check ? pl_brute_force(&o, lambda, m) : NULL;
  if (o.lat > 0) return latency(&o, rank, m, out, in, ov, iv, expect);
  int64_t bad = 0;
  pl_times t;

  plan *P = config(out.ids, out.len, in.ids, in.len); /* warm-up */
  plan_free(P);
  memset(ph_acc, 0, sizeof ph_acc);
  for (int i = 0; i < PL_CONFIGS; i++) {
    double t0 = t_start();
    P = config(out.ids, out.len, in.ids, in.len);
    t.config[i] = t_stop(t0);
    if (i < PL_CONFIGS - 1) plan_free(P);
  }
  ph_print(rank, "config", PL_CONFIGS, PH_PART, PH_PACK);
  reduce(P, ov, iv); /* warm-up, checked */
  if (expect) bad += pl_mismatches(expect, in.ids, in.len, iv);
  memset(ph_acc, 0, sizeof ph_acc);
  for (int i = 0; i < PL_REDUCES; i++) {
    double t0 = t_start();
    reduce(P, ov, iv);
    t.reduce[i] = t_stop(t0);
  }
  ph_print(rank, "reduce", PL_REDUCES, PH_PACK, PH_N);
  plan_free(P);
  for (int i = 0; i < PL_ONESHOTS; i++) {
    memset(iv, 0, (size_t)in.len * sizeof(float));
    double t0 = t_start();
    P = config(out.ids, out.len, in.ids, in.len);
    reduce(P, ov, iv);
    plan_free(P);
    t.oneshot[i] = t_stop(t0);
    if (expect && i == 0) bad += pl_mismatches(expect, in.ids, in.len, iv);
  }
  float *dense = calloc((size_t)o.n, sizeof(float)), *dsum = xmalloc((size_t)o.n * sizeof(float));
  for (int64_t j = 0; j < out.len; j++) dense[out.ids[j]] = ov[j];
  for (int i = -1; i < PL_DENSES; i++) { /* i = -1: warm-up, checked */
    double t0 = t_start();
    MPI_Allreduce(dense, dsum, (int)o.n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double dt = t_stop(t0);
    if (i >= 0) t.dense[i] = dt;
    if (expect && i < 0) bad += memcmp(dsum, expect, (size_t)o.n * sizeof(float)) != 0;
  }
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  int64_t n_out_total = out.len;
  MPI_Allreduce(MPI_IN_PLACE, &n_out_total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) pl_report("mpi", m, &o, n_out_total, &t, expect, bad);
  MPI_Finalize();
  return bad != 0;
}
