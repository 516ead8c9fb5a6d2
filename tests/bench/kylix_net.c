/* kylix_net.c — config, reduce and one-shot config_reduce through the C ABI on the Poisson
 * power-law data of powerlaw.h (f32 SUM, width 1, in = out), with what the network side did:
 * the config index bytes before and after compression (summed over ranks, per config), the
 * degrees, min_packet and the measured link model. For run_net.sh, which runs it on loopback
 * and across network namespaces joined by tbf-shaped veth links, with compress off, lz4, auto.
 *
 * Prints (rank 0) one RESULT line: medians over iterations, each timed between barriers as the
 * slowest rank's time. The first config measures the links when the options ask for it and is
 * not timed. check=1 compares the first reduce and config_reduce with a brute force.
 * Options: n= density= alpha= seed= check= (or BENCH_<KEY>), see powerlaw.h; the library's own
 * (compress, degrees, min_packet, ...) come from KYLIX_<KEY> via kylix_init("").
 */
#define _POSIX_C_SOURCE 200809L
#include "powerlaw.h"
#include "kylix.h"
#include <string.h>

static kylix_comm *comm;
#include "kylix_timing.h"

/* json_num finds "key": after the first occurrence of `within` in js and reads the number. */
static double json_num(const char *js, const char *within, const char *key) {
  const char *p = strstr(js, within);
  if (!p) return -1;
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  p = strstr(p, pat);
  return p ? atof(p + strlen(pat)) : -1;
}

/* js: the stats after the timed configs; bytes: their index bytes per config, raw and wire,
 * summed over ranks. */
static char *js;
static double bytes[2];

static void reset_stats(void) { must(kylix_stats_reset(comm), "stats_reset"); }

static void read_stats(void) {
  int64_t need = 0;
  kylix_stats_json(comm, NULL, 0, &need);
  js = malloc((size_t)need + 1);
  must(js ? kylix_stats_json(comm, js, need + 1, &need) : KYLIX_ERR_NOMEM, "stats_json");
  bytes[0] = json_num(js, "\"compression\"", "raw_sent") / PL_CONFIGS;
  bytes[1] = json_num(js, "\"compression\"", "wire_sent") / PL_CONFIGS;
  must(kylix_allreduce(comm, bytes, bytes, 2, KYLIX_F64, KYLIX_SUM), "allreduce bytes");
}

int main(int argc, char **argv) {
  if (kylix_init("", &comm) != KYLIX_OK) {
    fprintf(stderr, "kylix_init: %s\n", kylix_errmsg(NULL));
    return 1;
  }
  int rank = kylix_rank(comm), m = kylix_size(comm);
  pl_opts o = pl_opts_parse(argc, argv);
  double lambda = pl_solve_lambda(o.n, o.density, o.alpha);
  pl_set s = pl_sample(o.n, lambda, o.alpha, o.seed, 2 * (uint64_t)rank);
  float *ov = malloc((size_t)s.len * sizeof(float) + 4), *iv = malloc((size_t)s.len * sizeof(float) + 4);
  if (!ov || !iv) { fprintf(stderr, "kylix_net: out of memory\n"); return 1; }
  for (int64_t j = 0; j < s.len; j++) ov[j] = pl_value(rank, s.ids[j]);
  float *expect = o.check ? pl_brute_force(&o, lambda, m) : NULL;
  pl_times t = {0};
  sparse_job job = {s.ids, s.ids, s.len, s.len, ov, iv, expect};
  int64_t bad = time_sparse(job, &t, reset_stats, read_stats);
  must(kylix_allreduce(comm, &bad, &bad, 1, KYLIX_I64, KYLIX_SUM), "allreduce bad");
  int64_t keys = s.len;
  must(kylix_allreduce(comm, &keys, &keys, 1, KYLIX_I64, KYLIX_SUM), "allreduce keys");
  if (rank == 0) {
    const char *d = strstr(js, "\"plans\"");
    d = d ? strstr(d, "\"degrees\":[") : NULL;
    const char *e = d ? strchr(d, ']') : NULL;
    char deg[64] = "?";
    if (d && e && e - d - 11 < (long)sizeof deg) {
      memcpy(deg, d + 11, (size_t)(e - d - 11));
      deg[e - d - 11] = 0;
      for (char *c = deg; *c; c++) if (*c == ',') *c = 'x';
    }
    const char *comp = getenv("KYLIX_COMPRESS");
    printf("RESULT impl=kylix-net ranks=%d n=%lld density=%g keys_per_rank=%lld compress=%s degrees=%s "
           "min_packet=%.0f link_overhead_us=%.1f link_mbps=%.1f config_ms=%.2f reduce_ms=%.2f "
           "config_reduce_ms=%.2f index_raw=%.0f index_wire=%.0f ranks_per_host=%.0f local_mbps=%.1f remote_mbps=%.1f check=%s\n",
           m, (long long)o.n, o.density, (long long)(keys / m), comp && *comp ? comp : "auto", deg,
           json_num(js, "\"options\"", "min_packet"), 1e6 * json_num(js, "\"links\":{", "overhead_s"),
           json_num(js, "\"links\":{", "bytes_per_s") / 1e6, pl_median(t.config, PL_CONFIGS),
           pl_median(t.reduce, PL_REDUCES), pl_median(t.oneshot, PL_ONESHOTS), bytes[0], bytes[1],
           json_num(js, "\"links\":{", "ranks_per_host"), json_num(js, "\"local\":{", "bytes_per_s") / 1e6,
           json_num(js, "\"remote\":{", "bytes_per_s") / 1e6, !expect ? "skipped" : bad ? "FAIL" : "OK");
  }
  free(js);
  kylix_finalize(comm);
  return bad != 0;
}
