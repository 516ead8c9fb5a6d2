/*
 * timeline.c - a sparse job for the timeline tests (option timeline, kylixrun --timeline).
 *
 * usage: timeline ITERS STRAGGLER DELAY_MS VICTIM
 *
 * Every rank first checks kylix_mark's contract (arguments, nesting; with the timeline off
 * nothing is checked but the arguments). Then it configures one plan and runs ITERS steps of
 * a "compute" span (rank STRAGGLER sleeps DELAY_MS in it), a kylix_reduce checked against a
 * reference every rank computes from all ranks' regenerated data, and a kylix_barrier. Rank
 * VICTIM (-1: none) kills itself with SIGKILL in the middle of the steps, after its timeline
 * has had time to be written.
 */
#include "check.h"

#define NOUT 3000
#define SPACE 20000
#define NIN 4000

static void out_data(int r, int64_t *idx, double *val) {
  rng_t g = rng_seed(91, 1, (uint64_t)r, 0);
  for (int j = 0; j < NOUT; j++) {
    idx[j] = (int64_t)rng_below(&g, SPACE);
    val[j] = (double)(rng_below(&g, 1000)) / 8; /* exact in binary: sums are exact */
  }
}

static void check_marks(kylix_comm *c, int on) {
  CHECK(kylix_mark(NULL, "x", KYLIX_MARK_INSTANT) == KYLIX_ERR_ARG, "NULL comm");
  CHECK(kylix_mark(c, NULL, KYLIX_MARK_BEGIN) == KYLIX_ERR_ARG, "NULL name");
  CHECK(kylix_mark(c, "", KYLIX_MARK_BEGIN) == KYLIX_ERR_ARG, "empty name");
  CHECK(kylix_mark(c, "x", 7) == KYLIX_ERR_ARG, "kind 7");
  int st = kylix_mark(c, "never begun", KYLIX_MARK_END);
  CHECK(st == (on ? KYLIX_ERR_STATE : KYLIX_OK), "END without BEGIN: %s", status_name(st));
  if (on) CHECK(contains_ci(kylix_errmsg(c), "never begun"), "message names the span: %s", kylix_errmsg(c));
  MUST_OK(kylix_mark(c, "outer", KYLIX_MARK_BEGIN));
  MUST_OK(kylix_mark(c, "inner", KYLIX_MARK_BEGIN));
  st = kylix_mark(c, "outer", KYLIX_MARK_END);
  CHECK(st == (on ? KYLIX_ERR_STATE : KYLIX_OK), "END of outer while inner is open: %s", status_name(st));
  MUST_OK(kylix_mark(c, "inner", KYLIX_MARK_END));
  if (on) MUST_OK(kylix_mark(c, "outer", KYLIX_MARK_END));
  MUST_OK(kylix_mark(c, "start", KYLIX_MARK_INSTANT));
  if (!g_fail) PASS("kylix_mark contract (timeline %s)", on ? "on" : "off");
}

int main(int argc, char **argv) {
  check_init("timeline", 110);
  if (argc < 5) {
    fprintf(stderr, "usage: %s ITERS STRAGGLER DELAY_MS VICTIM\n", argv[0]);
    return 2;
  }
  int iters = atoi(argv[1]), straggler = atoi(argv[2]), delay = atoi(argv[3]), victim = atoi(argv[4]);
  kylix_comm *c = init_comm("");
  const char *tl = getenv("KYLIX_TIMELINE");
  check_marks(c, tl && *tl);

  int64_t *idx = xmalloc(NOUT * sizeof *idx), in[NIN];
  double *val = xmalloc(NOUT * sizeof *val), want[NIN], got[NIN];
  double *ref = xmalloc(SPACE * sizeof *ref);
  memset(ref, 0, SPACE * sizeof *ref);
  for (int r = 0; r < g_size; r++) {
    out_data(r, idx, val);
    for (int j = 0; j < NOUT; j++) ref[idx[j]] += val[j];
  }
  for (int j = 0; j < NIN; j++) {
    in[j] = (int64_t)((j * 7 + g_rank) % SPACE);
    want[j] = ref[in[j]];
  }
  out_data(g_rank, idx, val);
  kylix_plan *p = NULL;
  MUST_OK(kylix_config(c, idx, NOUT, in, NIN, &p));
  int bad = 0;
  for (int it = 0; it < iters; it++) {
    MUST_OK(kylix_mark(c, "compute", KYLIX_MARK_BEGIN));
    if (g_rank == straggler) sleep_s(delay / 1000.0);
    MUST_OK(kylix_mark(c, "compute", KYLIX_MARK_END));
    if (g_rank == victim && it == iters / 2) {
      sleep_s(0.4); /* the writer flushes every 100 ms: the file has this rank's events */
      INFO("killing myself (SIGKILL) at step %d", it);
      raise(SIGKILL);
    }
    MUST_OK(kylix_reduce(p, val, got, KYLIX_F64, KYLIX_SUM, 1));
    for (int j = 0; j < NIN; j++) bad += got[j] != want[j];
    MUST_OK(kylix_barrier(c));
  }
  CHECK(bad == 0, "%d values differ from the reference", bad);
  if (!bad) PASS("%d reduces match the reference", iters);
  MUST_OK(kylix_plan_free(p));
  MUST_OK(kylix_finalize(c));
  free(idx);
  free(val);
  free(ref);
  return check_finish();
}
