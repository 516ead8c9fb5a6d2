/*
 * pagerank.c — PageRank with Kylix sparse allreduce (paper §I-A).
 *
 *   kylixrun -n 4 ./pagerank GRAPH [iters=20] [--out FILE] [--rsum]
 *   kylixrun -n 8 --replication 2 ./pagerank GRAPH ...   (4 nodes x 2 replicas: kill any
 *     rank by hand, one per node, and the job runs on to the same scores)
 *
 * GRAPH is a text edge list, one "src dst" per line, vertex ids 0..n-1, lines
 * starting with '#' are comments (n=NUM in a comment declares n; otherwise
 * n = max id + 1). A name ending in ".gz" is read through "gzip -dc".
 *
 * Partitioning (random edge partition, as in the paper): every rank reads the
 * whole file; edge number e (0-based, counting edge lines only) belongs to
 * rank mix64(e + EDGE_SEED) % size. While reading, every rank counts the
 * out-degree of every vertex over ALL edges, so 1/outdeg(src) is global.
 *
 * Rank i holds X_i, its share of X with X[dst][src] = 1/outdeg(src):
 *   in_i  = distinct src of its edges (the non-zero columns of X_i),
 *   out_i = distinct dst of its edges (the non-zero rows of X_i).
 * One kylix_config builds the plan; each iteration computes u_i = X_i v_i
 * over in_i, and kylix_reduce(SUM) turns u_i (indexed by out_i) into
 * y = X v restricted to in_i.
 *
 * The formula (pagerankref uses the same, computed directly):
 *
 *   v_0[j]     = 1/n
 *   D_t        = sum of v_t[j] over dangling j (outdeg(j) = 0)
 *   v_{t+1}[j] = (1-d)/n + d * ( (X v_t)[j] + D_t/n ),     d = 0.85
 *
 * i.e. a dangling vertex's mass is spread uniformly over all n vertices, and
 * the scores sum to 1. Dangling vertices have no out-edges, so no rank holds
 * them in its in set; instead D_t is carried as a scalar that every rank
 * updates identically:
 *
 *   D_{t+1} = k(1-d)/n + d*S_t + d*k*D_t/n,   S_t = sum of (X v_t)[j] over dangling j,
 *
 * where k is the number of dangling vertices. S_t comes out of the same
 * sparse reduce: index n (one past the last vertex) is a virtual slot that
 * every rank puts in both its out and in sets, contributing the sum of its
 * u_i over dangling rows. Kylix returns bitwise-identical values to every
 * rank, so D stays identical everywhere.
 *
 * The last iteration uses a second plan whose in set is every vertex 0..n-1
 * (plus the slot n) on rank 0 and nothing on the other ranks, so rank 0 ends
 * up with the final score of every vertex: it prints the top 10 and, with
 * --out FILE, writes "vertex score" lines (%.17g) for all vertices.
 *
 * Rank 0 prints config time per plan and spmv/reduce time per iteration, in ms,
 * and a hash (FNV-1a) of the final scores' bytes.
 *
 * --rsum: reproducible scores. The reduce uses KYLIX_RSUM, whose result
 * depends only on the multiset of contributions, and each rank contributes
 * every edge's product X[dst][src] * v[src] on its own (out index dst, and
 * the slot n for a dangling dst) instead of its own float sums u_i, which
 * would depend on which edges the rank holds. The scores, and their hash,
 * are then bitwise the same on any number of ranks, replicated or not; the
 * price is one out value per edge instead of one per distinct dst, and
 * 24-byte values down the butterfly.
 */
#define _POSIX_C_SOURCE 200809L /* popen, clock_gettime under -std=c11 */
#define EXAMPLE_PROG "pagerank" /* for die() */

#include "example.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define DAMPING 0.85
#define EDGE_SEED UINT64_C(0x9e3779b97f4a7c15)

/* ---- reading the edge list ------------------------------------------------ */

typedef struct {
  int64_t n;            /* number of vertices                              */
  int64_t m;            /* number of edges in the file                     */
  int64_t *outdeg;      /* [n] global out-degree                           */
  int32_t *src, *dst;   /* this rank's edges                               */
  int64_t nlocal, cap;
} graph;

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

static FILE *open_graph(const char *path, int *is_pipe) {
  *is_pipe = 0;
  if (!ends_with(path, ".gz")) return fopen(path, "r");
  /* Quote the path for the shell: '...' with every ' written as '\''. */
  size_t len = strlen(path);
  char *cmd = xmalloc(4 * len + 32);
  char *p = cmd + sprintf(cmd, "gzip -dc -- '");
  for (size_t i = 0; i < len; i++) {
    if (path[i] == '\'') { memcpy(p, "'\\''", 4); p += 4; }
    else *p++ = path[i];
  }
  strcpy(p, "'");
  FILE *f = popen(cmd, "r");
  free(cmd);
  *is_pipe = 1;
  return f;
}

static int parse_i64(const char **pp, int64_t *out) {
  const char *p = *pp;
  while (*p == ' ' || *p == '\t') p++;
  if (*p < '0' || *p > '9') return 0;
  int64_t v = 0;
  while (*p >= '0' && *p <= '9') {
    if (v > (INT32_MAX - 9) / 10) return 0; /* ids must fit in int32 here */
    v = v * 10 + (*p++ - '0');
  }
  *pp = p;
  *out = v;
  return 1;
}

static void read_graph(const char *path, int rank, int size, graph *g) {
  int is_pipe;
  FILE *f = open_graph(path, &is_pipe);
  if (!f) die("cannot open %s: %s", path, strerror(errno));
  memset(g, 0, sizeof *g);
  int64_t declared = -1, maxid = -1, degcap = 0;
  char line[4096];
  int64_t lineno = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    const char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '\n' || *p == '\r' || *p == 0) continue;
    if (*p == '#') {
      const char *q = strstr(p, " n=");
      if (q && declared < 0) {
        q += 3;
        if (!parse_i64(&q, &declared)) die("%s:%" PRId64 ": bad n= in header", path, lineno);
      }
      continue;
    }
    int64_t s, d;
    if (!parse_i64(&p, &s) || !parse_i64(&p, &d))
      die("%s:%" PRId64 ": want \"src dst\" with ids in 0..2^31-10", path, lineno);
    if (s > maxid) maxid = s;
    if (d > maxid) maxid = d;
    if (s >= degcap) {
      int64_t nc = degcap ? degcap : 1024;
      while (nc <= s) nc *= 2;
      g->outdeg = xrealloc(g->outdeg, nc * sizeof(int64_t));
      memset(g->outdeg + degcap, 0, (nc - degcap) * sizeof(int64_t));
      degcap = nc;
    }
    g->outdeg[s]++;
    if ((int)(mix64((uint64_t)g->m + EDGE_SEED) % (uint64_t)size) == rank) {
      if (g->nlocal == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 1 << 16;
        g->src = xrealloc(g->src, g->cap * sizeof(int32_t));
        g->dst = xrealloc(g->dst, g->cap * sizeof(int32_t));
      }
      g->src[g->nlocal] = (int32_t)s;
      g->dst[g->nlocal] = (int32_t)d;
      g->nlocal++;
    }
    g->m++;
  }
  if (ferror(f)) die("error reading %s", path);
  if (is_pipe) {
    int st = pclose(f);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
      die("reading %s failed: gzip -dc %s %d", path,
          st != -1 && WIFSIGNALED(st) ? "killed by signal" : "exit status",
          st == -1 ? -1 : WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  } else if (fclose(f) != 0) {
    die("reading %s failed: %s", path, strerror(errno));
  }
  if (g->m == 0) die("%s: no edges", path);
  g->n = declared > maxid + 1 ? declared : maxid + 1;
  if (g->n > degcap) {
    g->outdeg = xrealloc(g->outdeg, g->n * sizeof(int64_t));
    memset(g->outdeg + degcap, 0, (g->n - degcap) * sizeof(int64_t));
  }
}

/* ---- main ------------------------------------------------------------------ */

static void usage(void) {
  fprintf(stderr, "usage: pagerank GRAPH [iters=20] [--out FILE] [--rsum]\n");
  exit(2);
}

int main(int argc, char **argv) {
  const char *graph_path = NULL, *out_path = NULL;
  int iters = 20, npos = 0, rsum = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--rsum") == 0) {
      rsum = 1;
    } else if (strcmp(argv[i], "--out") == 0) {
      if (++i >= argc) usage();
      out_path = argv[i];
    } else if (strncmp(argv[i], "--out=", 6) == 0) {
      out_path = argv[i] + 6;
    } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage();
    } else if (npos == 0) {
      graph_path = argv[i];
      npos++;
    } else if (npos == 1) {
      const char *a = argv[i];
      if (strncmp(a, "iters=", 6) == 0) a += 6;
      char *end;
      long v = strtol(a, &end, 10);
      if (*a == 0 || *end != 0 || v < 1 || v > 1000000) usage();
      iters = (int)v;
      npos++;
    } else {
      usage();
    }
  }
  if (!graph_path) usage();

  int rank, size;
  kylix_comm *comm = example_init(&rank, &size);

  double t0 = now_ms();
  graph g;
  /* The caller's own work on the timeline (kylixrun --timeline DIR); a no-op otherwise. */
  CHECK(comm, kylix_mark(comm, "read graph", KYLIX_MARK_BEGIN));
  read_graph(graph_path, rank, size, &g);
  CHECK(comm, kylix_mark(comm, "read graph", KYLIX_MARK_END));
  const int64_t n = g.n;
  double t_read = now_ms() - t0;

  CHECK(comm, kylix_mark(comm, "build matrix", KYLIX_MARK_BEGIN));
  int64_t ndangling = 0;
  for (int64_t j = 0; j < n; j++) ndangling += g.outdeg[j] == 0;

  /* in = distinct src (sorted), out = distinct dst (sorted); then the slot n. */
  int32_t *pos = xmalloc(n * sizeof(int32_t)); /* vertex -> position, reused */
  char *mark = xcalloc(n, 1);
  for (int64_t e = 0; e < g.nlocal; e++) mark[g.src[e]] = 1;
  int64_t nsrc = 0;
  for (int64_t j = 0; j < n; j++) nsrc += mark[j];
  int64_t *in_idx = xmalloc((nsrc + 1) * sizeof(int64_t));
  int32_t *col_of = xmalloc(n * sizeof(int32_t));
  for (int64_t j = 0, k = 0; j < n; j++)
    if (mark[j]) { col_of[j] = (int32_t)k; in_idx[k++] = j; }
  in_idx[nsrc] = n;
  const int64_t n_in = nsrc + 1;

  memset(mark, 0, n);
  for (int64_t e = 0; e < g.nlocal; e++) mark[g.dst[e]] = 1;
  int64_t ndst = 0;
  for (int64_t j = 0; j < n; j++) ndst += mark[j];
  int64_t *out_idx = xmalloc((ndst + 1) * sizeof(int64_t));
  char *row_dangling = xmalloc(ndst + 1);
  for (int64_t j = 0, k = 0; j < n; j++)
    if (mark[j]) {
      pos[j] = (int32_t)k;
      row_dangling[k] = g.outdeg[j] == 0;
      out_idx[k++] = j;
    }
  out_idx[ndst] = n;
  const int64_t n_out = ndst + 1;
  free(mark);

  /* CSR of X_i by row (dst position), columns are positions in in_idx. */
  int64_t *rowptr = xcalloc(ndst + 1, sizeof(int64_t));
  int32_t *col = xmalloc(g.nlocal * sizeof(int32_t));
  double *val = xmalloc(g.nlocal * sizeof(double));
  for (int64_t e = 0; e < g.nlocal; e++) rowptr[pos[g.dst[e]] + 1]++;
  for (int64_t r = 0; r < ndst; r++) rowptr[r + 1] += rowptr[r];
  int64_t *fill = xmalloc((ndst + 1) * sizeof(int64_t));
  memcpy(fill, rowptr, (ndst + 1) * sizeof(int64_t));
  for (int64_t e = 0; e < g.nlocal; e++) { /* file order within a row */
    int64_t at = fill[pos[g.dst[e]]]++;
    col[at] = col_of[g.src[e]];
    val[at] = 1.0 / (double)g.outdeg[g.src[e]];
  }
  free(fill);
  free(pos);
  free(col_of);
  free(g.src);
  free(g.dst);
  free(g.outdeg);
  const int64_t nlocal = g.nlocal;
  CHECK(comm, kylix_mark(comm, "build matrix", KYLIX_MARK_END));

  /* Job-wide sizes, for the log (and a first use of the comm). */
  int64_t loc[3] = {nlocal, n_in, n_out}, mx[3], sum[3];
  CHECK(comm, kylix_allreduce(comm, loc, mx, 3, KYLIX_I64, KYLIX_MAX));
  CHECK(comm, kylix_allreduce(comm, loc, sum, 3, KYLIX_I64, KYLIX_SUM));
  if (sum[0] != g.m) die("edge shares add up to %" PRId64 ", file has %" PRId64, sum[0], g.m);

  if (rank == 0 && example_reporter(comm)) {
    printf("pagerank: %s n=%" PRId64 " edges=%" PRId64 " dangling=%" PRId64
           " ranks=%d iters=%d damping=%.2f (read %.0f ms)\n",
           graph_path, n, g.m, ndangling, size * g_replicas, iters, DAMPING, t_read);
    if (g_replicas > 1)
      printf("replication %d: %d nodes, each on %d ranks (node of rank r: r %% %d)\n", g_replicas, size,
             g_replicas, size);
    printf("per rank: edges max %" PRId64 " avg %.0f; in (columns) max %" PRId64
           " avg %.0f; out (rows) max %" PRId64 " avg %.0f\n",
           mx[0], (double)sum[0] / size, mx[1], (double)sum[1] / size, mx[2],
           (double)sum[2] / size);
  }

  /* --rsum: one out index per edge (its dst), and again the slot n for each
     edge of a dangling row, in the order the iterations fill eu. */
  int64_t n_eout = 0;
  int64_t *e_out = NULL;
  double *eu = NULL;
  if (rsum) {
    for (int64_t r = 0; r < ndst; r++) n_eout += (rowptr[r + 1] - rowptr[r]) * (row_dangling[r] ? 2 : 1);
    e_out = xmalloc((n_eout + 1) * sizeof(int64_t));
    eu = xmalloc((n_eout + 1) * sizeof(double));
    for (int64_t r = 0, p = 0; r < ndst; r++)
      for (int pass = 0; pass <= row_dangling[r]; pass++)
        for (int64_t k = rowptr[r]; k < rowptr[r + 1]; k++) e_out[p++] = pass ? n : out_idx[r];
  }
  const int64_t *plan_out = rsum ? e_out : out_idx;
  const int64_t n_plan_out = rsum ? n_eout : n_out;

  /* Plan 1: the iteration plan. Plan 2: same out set; rank 0 asks for every
     vertex (and the slot n), the others ask for nothing. */
  kylix_plan *plan = NULL, *gather = NULL;
  double tc = now_ms();
  CHECK(comm, kylix_config(comm, plan_out, n_plan_out, in_idx, n_in, &plan));
  double t_config = now_ms() - tc;

  int64_t n_all = rank == 0 ? n + 1 : 0;
  int64_t *all_idx = xmalloc((n + 1) * sizeof(int64_t)); /* non-NULL even if unused */
  for (int64_t j = 0; j <= n; j++) all_idx[j] = j;
  tc = now_ms();
  CHECK(comm, kylix_config(comm, plan_out, n_plan_out, all_idx, n_all, &gather));
  double t_config2 = now_ms() - tc;
  if (rank == 0 && example_reporter(comm))
    printf("config: iteration plan %.3f ms, final gather plan %.3f ms\n", t_config, t_config2);

  double *v = xmalloc(n_in * sizeof(double));  /* v_t over in_idx[0..nsrc) */
  double *u = xmalloc(n_out * sizeof(double)); /* u_i over out_idx, + slot  */
  double *y = xmalloc((n + 1) * sizeof(double));
  const double inv_n = 1.0 / (double)n, kd = (double)ndangling;
  for (int64_t j = 0; j < nsrc; j++) v[j] = inv_n;
  double D = kd * inv_n; /* D_0 */
  double reduce_total = 0, reduce_max = 0;

  for (int it = 1; it <= iters; it++) {
    const int last = it == iters;
    double ts = now_ms();
    CHECK(comm, kylix_mark(comm, "multiply", KYLIX_MARK_BEGIN));
    double s_local = 0;
    for (int64_t r = 0, p = 0; rsum && r < ndst; r++) /* every edge's product on its own */
      for (int pass = 0; pass <= row_dangling[r]; pass++)
        for (int64_t k = rowptr[r]; k < rowptr[r + 1]; k++) eu[p++] = val[k] * v[col[k]];
    for (int64_t r = 0; !rsum && r < ndst; r++) {
      double acc = 0;
      for (int64_t k = rowptr[r]; k < rowptr[r + 1]; k++) acc += val[k] * v[col[k]];
      u[r] = acc;
      if (row_dangling[r]) s_local += acc;
    }
    u[ndst] = s_local;
    CHECK(comm, kylix_mark(comm, "multiply", KYLIX_MARK_END));
    double tr = now_ms();
    CHECK(comm, kylix_reduce(last ? gather : plan, rsum ? eu : u, y, KYLIX_F64, rsum ? KYLIX_RSUM : KYLIX_SUM, 1));
    double te = now_ms();
    if (!last) {
      reduce_total += te - tr;
      if (te - tr > reduce_max) reduce_max = te - tr;
    }
    const double base = (1 - DAMPING) * inv_n + DAMPING * D * inv_n;
    if (!last) {
      for (int64_t j = 0; j < nsrc; j++) v[j] = base + DAMPING * y[j];
      const double S = y[nsrc];
      D = kd * (1 - DAMPING) * inv_n + DAMPING * S + DAMPING * kd * D * inv_n;
    } else if (rank == 0) { /* every replica of node 0: whichever reports needs them */
      for (int64_t j = 0; j < n; j++) y[j] = base + DAMPING * y[j]; /* final scores */
    }
    if (rank == 0 && example_reporter(comm))
      printf("iter %2d: spmv %.3f ms, reduce %.3f ms%s\n", it, tr - ts, te - tr,
             last ? " (final gather plan)" : "");
  }
  if (rank == 0 && iters > 1 && example_reporter(comm))
    printf("reduce (iteration plan, rank 0): mean %.3f ms, max %.3f ms over %d iterations\n",
           reduce_total / (iters - 1), reduce_max, iters - 1);

  if (rank == 0 && example_reporter(comm)) {
    /* top 10: highest score first, ties to the smaller id */
    int64_t top[10];
    int ntop = 0;
    for (int64_t j = 0; j < n; j++) {
      int at = ntop;
      while (at > 0 && y[j] > y[top[at - 1]]) at--;
      if (at >= 10) continue;
      if (ntop < 10) ntop++;
      memmove(top + at + 1, top + at, (ntop - 1 - at) * sizeof(int64_t));
      top[at] = j;
    }
    double total = 0;
    for (int64_t j = 0; j < n; j++) total += y[j];
    printf("top10:");
    for (int i = 0; i < ntop; i++) printf(" %" PRId64, top[i]);
    printf("\n");
    for (int i = 0; i < ntop; i++)
      printf("%3d. vertex %" PRId64 " score %.12g\n", i + 1, top[i], y[top[i]]);
    printf("sum of scores: %.15f\n", total);
    uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a over the scores' bytes */
    for (size_t b = 0; b < (size_t)n * sizeof(double); b++) h = (h ^ ((unsigned char *)y)[b]) * UINT64_C(0x100000001b3);
    printf("scores hash: %016" PRIx64 " (%s)\n", h, rsum ? "KYLIX_RSUM" : "KYLIX_SUM");
    if (out_path) {
      FILE *f = fopen(out_path, "w");
      if (!f) die("cannot create %s: %s", out_path, strerror(errno));
      fprintf(f, "# pagerank n=%" PRId64 " iters=%d damping=%g\n", n, iters, DAMPING);
      for (int64_t j = 0; j < n; j++) fprintf(f, "%" PRId64 " %.17g\n", j, y[j]);
      if (fclose(f) != 0) die("writing %s: %s", out_path, strerror(errno));
      printf("scores written to %s\n", out_path);
    }
    fflush(stdout);
  }

  CHECK(comm, kylix_plan_free(plan));
  CHECK(comm, kylix_plan_free(gather));
  CHECK(comm, kylix_finalize(comm));
  free(in_idx);
  free(out_idx);
  free(all_idx);
  free(row_dangling);
  free(rowptr);
  free(col);
  free(val);
  free(v);
  free(u);
  free(y);
  free(e_out);
  free(eu);
  return 0;
}
