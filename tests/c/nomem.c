/*
 * nomem.c - memory that cannot be had is a status, not a dead process.
 *
 * usage: nomem
 *
 * After kylix_init the program caps its own address space (RLIMIT_AS) at what
 * it maps now plus 1.5 GiB, then makes calls whose own buffers fit under the
 * cap but whose scratch inside the library would not: kylix_reduce with width
 * INT32_MAX on a 4-index plan, kylix_config of 2 x 80M indices, a
 * kylix_config_reduce with a 256 MiB-per-index-list width, and kylix_allreduce
 * of 1 GiB in place. Each must return KYLIX_ERR_NOMEM naming the argument, on
 * every rank, and the comm must keep working (a correct reduce after each).
 * Without the check Go's runtime aborts the host ("fatal error: out of
 * memory"), which no recover() catches.
 */
#include "check.h"

#include <sys/resource.h>

static kylix_plan *g_plan;

static long vm_size_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmSize: %ld kB", &kb) == 1) break;
  if (f) fclose(f);
  return kb;
}

static void expect_nomem(const char *what, int st, const char *needle) {
  if (st != KYLIX_ERR_NOMEM) {
    FAILF("%s returned %s (%d), want KYLIX_ERR_NOMEM: %s", what, status_name(st), st, errmsg_of(g_comm));
    return;
  }
  const char *m = kylix_errmsg(g_comm);
  CHECK(m && contains_ci(m, needle), "%s: message does not name %s: \"%s\"", what, needle, m ? m : "(null)");
  if (m) INFO("%s: %s", what, m);
  PASS("%s -> KYLIX_ERR_NOMEM", what);
}

/* A correct reduce after each refusal: the comm is still in step. */
static void still_works(const char *after) {
  int64_t out[3] = {g_rank + 1, g_rank + 1, g_rank + 1}, in[3];
  MUST_OK(kylix_reduce(g_plan, out, in, KYLIX_I64, KYLIX_SUM, 1));
  int64_t s = (int64_t)g_size * (g_size + 1) / 2;
  CHECK(in[0] == 2 * s && in[1] == 0 && in[2] == s, "after %s: got %" PRId64 " %" PRId64 " %" PRId64, after, in[0],
        in[1], in[2]);
}

int main(void) {
  check_init("nomem", 100);
  MUST_OK(kylix_init("", &g_comm));
  g_rank = kylix_rank(g_comm);
  g_size = kylix_size(g_comm);
  int64_t good_out[3] = {7, 7, 5}, good_in[3] = {7, 1000, 5};
  MUST_OK(kylix_config(g_comm, good_out, 3, good_in, 3, &g_plan));

  long kb = vm_size_kb();
  struct rlimit rl;
  rl.rlim_cur = rl.rlim_max = (rlim_t)kb * 1024 + ((rlim_t)3 << 29); /* + 1.5 GiB */
  if (kb <= 0 || setrlimit(RLIMIT_AS, &rl) != 0) {
    FAILF("cannot cap the address space (VmSize %ld kB): %s", kb, strerror(errno));
    return check_finish();
  }
  INFO("address space capped at %ld MiB (VmSize was %ld MiB)", (long)(rl.rlim_cur >> 20), kb >> 10);

  /* reduce: buffers of 4 x width floats are never touched; the plan's scratch would be 32 GiB */
  {
    kylix_plan *p;
    int64_t idx[4] = {1, 2, 3, 4};
    float tiny[4];
    MUST_OK(kylix_config(g_comm, idx, 4, idx, 4, &p));
    expect_nomem("kylix_reduce width=INT32_MAX", kylix_reduce(p, tiny, tiny, KYLIX_F32, KYLIX_SUM, INT32_MAX),
                 "width");
    still_works("reduce");
    kylix_plan_free(p);
  }
  /* config: 2 x 80M indices (640 MiB each, shared) fit; the sort scratch (~9 GiB) does not */
  {
    int64_t n = 80 * 1000 * 1000;
    int64_t *idx = malloc((size_t)n * sizeof *idx);
    if (!idx) {
      FAILF("cannot allocate the index list under the cap");
    } else {
      for (int64_t i = 0; i < n; i++) idx[i] = i * 3 + g_rank;
      kylix_plan *p = NULL;
      expect_nomem("kylix_config 80M+80M", kylix_config(g_comm, idx, n, idx, n, &p), "idx");
      CHECK(p == NULL, "failed config set a plan");
      free(idx);
    }
    still_works("config");
  }
  /* config_reduce: 4 indices of width 2^24 f32 (256 MiB per list) fit; 4 x that as scratch does not */
  {
    int32_t width = 1 << 24;
    size_t bytes = (size_t)4 * width * sizeof(float);
    float *ov = malloc(bytes), *iv = malloc(bytes);
    int64_t idx[4] = {1, 2, 3, 4};
    if (!ov || !iv) {
      FAILF("cannot allocate the value lists under the cap");
    } else {
      memset(ov, 0, bytes);
      expect_nomem("kylix_config_reduce width=2^24",
                   kylix_config_reduce(g_comm, idx, 4, ov, idx, 4, iv, KYLIX_F32, KYLIX_SUM, width, NULL), "width");
    }
    free(ov);
    free(iv);
    still_works("config_reduce");
  }
  /* allreduce in place: 1 GiB of f32 fits; its 1 GiB of receive scratch does not */
  {
    int64_t count = (int64_t)1 << 28;
    float *v = malloc((size_t)count * sizeof *v);
    if (!v) {
      FAILF("cannot allocate the vector under the cap");
    } else {
      memset(v, 0, (size_t)count * sizeof *v);
      expect_nomem("kylix_allreduce 1 GiB", kylix_allreduce(g_comm, v, v, count, KYLIX_F32, KYLIX_SUM), "count");
      free(v);
    }
    still_works("allreduce");
  }
  kylix_plan_free(g_plan);
  MUST_OK(kylix_finalize(g_comm));
  return check_finish();
}
