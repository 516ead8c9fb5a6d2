/*
 * replica_mismatch.c - replicas that were given different index lists are caught at config.
 *
 * usage: replica_mismatch        (4 ranks, --replication 2: nodes 0 and 1, replicas 0,2 and 1,3)
 *   Every rank contributes the same pairs as its replica; rank 3 asks for its in indices in the
 *   opposite order to rank 1's. Config must fail with KYLIX_ERR_MISMATCH on every rank, and on
 *   ranks 1 and 3 the message names both of them. Then a config where the replicas agree works,
 *   and its reduce gives the brute-force sums: the comm stays usable.
 */
#include "check.h"

#define N 256

int main(void) {
  check_init("replica_mismatch", 60);
  kylix_comm *c = init_comm("");
  CHECK(g_size == 4, "run with 4 ranks, not %d", g_size);
  int node = g_rank % 2;
  int64_t out[N], in[N];
  double vals[N], res[N];
  for (int i = 0; i < N; i++) {
    out[i] = node * N + i; /* node 0: 0..255, node 1: 256..511 */
    vals[i] = (double)(node * N + i);
  }
  for (int i = 0; i < N; i++) in[i] = 2 * i; /* every rank asks for 0, 2, ..., 510 */
  if (g_rank == 3)
    for (int i = 0; i < N; i++) in[i] = 2 * (N - 1 - i); /* the same set, reversed */
  kylix_plan *p = NULL;
  int st = kylix_config(c, out, N, in, N, &p);
  CHECK(st == KYLIX_ERR_MISMATCH, "config with diverging replicas returned %s: %s", status_name(st),
        st ? errmsg_of(c) : "");
  if (st == KYLIX_ERR_MISMATCH) {
    const char *m = errmsg_of(c);
    if (g_rank == 1 || g_rank == 3)
      CHECK(names_rank(m, 1) && names_rank(m, 3), "the message names ranks 1 and 3: %s", m);
    PASS("diverging replicas: KYLIX_ERR_MISMATCH: %s", m);
  }
  for (int i = 0; i < N; i++) in[i] = 2 * i;
  MUST_OK(kylix_config(c, out, N, in, N, &p));
  MUST_OK(kylix_reduce(p, vals, res, KYLIX_F64, KYLIX_SUM, 1));
  int bad = 0;
  for (int i = 0; i < N && !bad; i++)
    if (res[i] != (double)in[i]) {
      FAILF("in index %" PRId64 ": %g, want %g", in[i], res[i], (double)in[i]);
      bad = 1;
    }
  if (!bad) PASS("agreeing replicas: config and reduce give the sums");
  kylix_plan_free(p);
  MUST_OK(kylix_finalize(c));
  return check_finish();
}
