/* kylix_sparse.c — Kylix's sparse allreduce through the C ABI on the same Poisson power-law
 * data as mpi_direct.c (the "direct all-to-all" baseline of "Kylix: A Sparse Allreduce for
 * Commodity Clusters", §VI, Table I), timed the same way, so run_sparse.sh can put the two
 * side by side from one run. f32 SUM, width 1; in = out (the same array) unless separate_in=1.
 *
 * Prints (rank 0) medians over iterations, each timed between kylix_barrier calls as the max
 * over ranks: kylix_config, kylix_reduce on the kept plan, one-shot kylix_config_reduce
 * (plan NULL), and kylix_allreduce of the densified n-vector. The first result of each is
 * checked against a brute force (every rank regenerates every rank's set).
 * lat=N (BENCH_LAT) runs the latency benchmark instead (run_latency.sh): N back-to-back
 * reduces of one kept plan and (unless BENCH_LAT_DENSE=0) N 8-float kylix_allreduce calls, each figure the slowest rank's.
 * Options: n= density= alpha= seed= separate_in= check= keys= (or BENCH_<KEY>), see powerlaw.h;
 * the library's own (degrees, threads, ...) come from KYLIX_<KEY> via kylix_init("").
 * Run under kylixrun.
 */
#define _POSIX_C_SOURCE 200809L
#include "powerlaw.h"
#include "kylix.h"
#include <string.h>

static kylix_comm *comm;
#include "kylix_timing.h"

/* print_degrees says (rank 0) which degrees auto chose, from the stats: the plans'
 * "degrees":[...] */
static void print_degrees(void) {
  if (kylix_rank(comm) != 0) return;
  static char js[1 << 16];
  int64_t need = 0;
  if (kylix_stats_json(comm, js, sizeof js, &need) == KYLIX_OK) {
    const char *d = strstr(js, "\"plans\"");
    d = d ? strstr(d, "\"degrees\":") : NULL;
    const char *e = d ? strchr(d, ']') : NULL;
    if (d && e) fprintf(stderr, "kylix_sparse: ranks=%d degrees %.*s\n", kylix_size(comm), (int)(e - d + 1 - 10), d + 10);
  }
}

/* ---- lat=N: the latency benchmark of run_latency.sh (back-to-back small reduces) ---- */
typedef struct { kylix_plan *p; const float *ov; float *iv; } lat_job;
static int lat_reduce(void *a) {
  lat_job *j = a;
  return kylix_reduce(j->p, j->ov, j->iv, KYLIX_F32, KYLIX_SUM, 1);
}
static float lat_send[8], lat_recv[8];
static int lat_dense8(void *a) {
  (void)a;
  return kylix_allreduce(comm, lat_send, lat_recv, 8, KYLIX_F32, KYLIX_SUM);
}

/* latency: config once, a checked warm-up reduce, then o->lat back-to-back reduces of the kept
 * plan and o->lat 8-float kylix_allreduce calls; rank 0 prints two LAT lines (slowest rank). */
static int latency(const pl_opts *o, int rank, int m, pl_set out, pl_set in, const float *ov,
                   float *iv, const float *expect) {
  kylix_plan *p;
  must(kylix_config(comm, out.ids, out.len, in.ids, in.len, &p), "config");
  print_degrees();
  must(kylix_reduce(p, ov, iv, KYLIX_F32, KYLIX_SUM, 1), "reduce");
  int64_t bad = expect ? pl_mismatches(expect, in.ids, in.len, iv) : 0, n_out = out.len;
  must(kylix_allreduce(comm, &bad, &bad, 1, KYLIX_I64, KYLIX_SUM), "allreduce bad");
  must(kylix_allreduce(comm, &n_out, &n_out, 1, KYLIX_I64, KYLIX_SUM), "allreduce");
  const char *check = !expect ? "skipped" : bad ? "FAIL" : "OK";
  lat_job j = {p, ov, iv};
  double r[2];
  must(kylix_barrier(comm), "barrier");
  pl_lat_loop(o->lat, lat_reduce, &j, &r[0], &r[1]);
  if (r[0] < 0) must(lat_reduce(&j), "reduce");
  must(kylix_allreduce(comm, r, r, 2, KYLIX_F64, KYLIX_MAX), "allreduce max");
  if (rank == 0) pl_lat_report("kylix", m, "sparse", n_out / m, o->lat, r[0], r[1], check);
  must(kylix_plan_free(p), "plan_free");
  if (getenv("BENCH_LAT_DENSE") && !atoi(getenv("BENCH_LAT_DENSE"))) {
    kylix_finalize(comm);
    return bad != 0;
  }
  for (int i = 0; i < 8; i++) lat_send[i] = (float)(rank + i);
  must(lat_dense8(NULL), "allreduce");
  must(kylix_barrier(comm), "barrier");
  pl_lat_loop(o->lat, lat_dense8, NULL, &r[0], &r[1]);
  if (r[0] < 0) must(lat_dense8(NULL), "allreduce");
  must(kylix_allreduce(comm, r, r, 2, KYLIX_F64, KYLIX_MAX), "allreduce max");
  if (rank == 0) pl_lat_report("kylix", m, "dense8", 8, o->lat, r[0], r[1], "skipped");
  kylix_finalize(comm);
  return bad != 0;
}

int main(int argc, char **argv) {
  if (kylix_init("", &comm) != KYLIX_OK) {
    fprintf(stderr, "kylix_init: %s\n", kylix_errmsg(NULL));
    return 1;
  }
  int rank = kylix_rank(comm), m = kylix_size(comm);
  pl_opts o = pl_opts_parse(argc, argv);
  double lambda = pl_solve_lambda(o.n, o.density, o.alpha);
  pl_set out = pl_sample(o.n, lambda, o.alpha, o.seed, 2 * (uint64_t)rank), in = out;
  if (o.separate_in) in = pl_sample(o.n, lambda, o.alpha, o.seed, 2 * (uint64_t)rank + 1);
  float *ov = malloc((size_t)out.len * sizeof(float) + 4);
  float *iv = malloc((size_t)in.len * sizeof(float) + 4);
  for (int64_t j = 0; j < out.len; j++) ov[j] = pl_value(rank, out.ids[j]);
  float *expect = o.check ? pl_brute_force(&o, lambda, m) : NULL;
  if (o.lat > 0) return latency(&o, rank, m, out, in, ov, iv, expect);
  pl_times t;
  sparse_job job = {out.ids, in.ids, out.len, in.len, ov, iv, expect};
  int64_t bad = time_sparse(job, &t, NULL, print_degrees);
  float *dense = calloc((size_t)o.n, sizeof(float)), *dsum = malloc((size_t)o.n * sizeof(float));
  if (!ov || !iv || !dense || !dsum) { fprintf(stderr, "kylix_sparse: out of memory\n"); return 1; }
  for (int64_t j = 0; j < out.len; j++) dense[out.ids[j]] = ov[j];
  for (int i = -1; i < PL_DENSES; i++) { /* i = -1: warm-up, checked */
    double t0 = t_start();
    must(kylix_allreduce(comm, dense, dsum, o.n, KYLIX_F32, KYLIX_SUM), "allreduce");
    double dt = t_stop(t0);
    if (i >= 0) t.dense[i] = dt;
    if (expect && i < 0) bad += memcmp(dsum, expect, (size_t)o.n * sizeof(float)) != 0;
  }
  must(kylix_allreduce(comm, &bad, &bad, 1, KYLIX_I64, KYLIX_SUM), "allreduce bad");
  int64_t n_out_total = out.len;
  must(kylix_allreduce(comm, &n_out_total, &n_out_total, 1, KYLIX_I64, KYLIX_SUM), "allreduce");
  if (rank == 0) pl_report("kylix", m, &o, n_out_total, &t, expect, bad);
  kylix_finalize(comm);
  return bad != 0;
}
