/*
 * elastic.c - kylix_resize from C (Zhang and Qiu, "Efficient, Fault-tolerant
 * and Elastic Allreduce Framework for Iterative Algorithms", §5 ramp-up and §6
 * failure-ignorance), driven by tests/elastic_test.go, which starts members
 * with KYLIX_RANK/KYLIX_SIZE/KYLIX_RENDEZVOUS/KYLIX_ELASTIC=1 and joiners with
 * KYLIX_JOIN only (and the job's KYLIX_SECRET).  Lines are tagged with the
 * process's ELASTIC_ID (members: their first rank; joiners: 100+), which
 * stays the same across resizes.
 *
 * usage: elastic MODE DIR [ARGS]   DIR holds the marker files the driver and
 *                                  rank 0 use to pace each other
 *   ramp SIZES        sizes "2,4,6": a few checked iterations at each size,
 *                     then kylix_resize(min_size = next size)
 *   fail VICTIM N     N members; VICTIM raises SIGKILL at iteration 3; the
 *                     survivors resize(0) (failure-ignorance), iterate, then
 *                     resize(N) to take back the relaunched joiner
 *   stall             2 members: resize(0) while the driver holds a stopped
 *                     joiner (must cost at most liveness_ms), then resize(3)
 *                     once the driver resumed it
 *   minwait           2 members: resize(3) with nobody joining gives TIMEOUT
 *                     and c goes on; then resize(3) waits for the joiner the
 *                     driver starts
 *   split             run across two network namespaces: after the driver
 *                     cuts the link, the half with rank 0 resizes and goes
 *                     on, the other half gets PEER
 *   inflight          3 members: an ireduce in flight when resize(4) is
 *                     called completes with its own status and the old sums
 *   replica VICTIM    4 members, replication 2: VICTIM dies, resize(4) admits
 *                     the relaunched joiner in its place; prints DIGEST lines
 *   ref               the unreplicated reference of replica (2 ranks)
 *   cycles N          N resizes with nobody joining, a checked allreduce
 *                     each; fds, RSS and threads must stay flat
 *   badjoin           a joiner whose kylix_init must fail with AUTH
 *
 * Every iteration: a sparse config_reduce (I64 SUM) and a dense allreduce,
 * checked against brute force over the current comm's ranks; the iteration
 * counter travels to joiners by a bcast from rank 0 after each resize.
 */
#include "check.h"

#include <dirent.h>
#include "procstat.h"

#define K 64
#define MAXR 64

static const char *g_dir;
static kylix_comm *C;
static int rank_, size_;
static int64_t iter;

static void refresh(void) {
  rank_ = kylix_rank(C);
  size_ = kylix_size(C);
  g_comm = C;
}

static int64_t value(int r, int64_t k, int64_t it) { return (r + 1) * (k + 3) + it * 7; }
static int contributes(int r, int64_t k) { return (k + r) % 3 != 0; }

/* One iteration on the current comm, checked against brute force for its size. */
static void step(void) {
  int64_t out[K], ov[K], in[K], iv[K], n_out = 0;
  for (int64_t k = 0; k < K; k++)
    if (contributes(rank_, k)) {
      out[n_out] = k;
      ov[n_out++] = value(rank_, k, iter);
    }
  for (int64_t k = 0; k < K; k++) in[k] = (k * 5 + rank_) % K;
  MUST_OK(kylix_config_reduce(C, out, n_out, ov, in, K, iv, KYLIX_I64, KYLIX_SUM, 1, NULL));
  for (int64_t j = 0; j < K; j++) {
    int64_t want = 0;
    for (int r = 0; r < size_; r++)
      if (contributes(r, in[j])) want += value(r, in[j], iter);
    if (iv[j] != want) {
      FAILF("iteration %" PRId64 " at size %d: in[%" PRId64 "] = %" PRId64 ", want %" PRId64, iter, size_, j, iv[j], want);
      break;
    }
  }
  int64_t a[3] = {rank_ + 1, iter, 1}, b[3];
  MUST_OK(kylix_allreduce(C, a, b, 3, KYLIX_I64, KYLIX_SUM));
  CHECK(b[0] == (int64_t)size_ * (size_ + 1) / 2 && b[1] == iter * size_ && b[2] == size_,
        "iteration %" PRId64 ": allreduce gave %" PRId64 " %" PRId64 " %" PRId64 " at size %d", iter, b[0], b[1], b[2], size_);
  iter++;
}

static void marker(const char *name) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", g_dir, name);
  FILE *f = fopen(p, "w");
  if (f) fclose(f);
}

static void await_marker(const char *name, double limit) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", g_dir, name);
  double t0 = now_s();
  while (access(p, F_OK) != 0) {
    if (now_s() - t0 > limit) {
      FAILF("marker %s did not appear within %.0f s", name, limit);
      return;
    }
    sleep_s(0.02);
  }
}

/* After a resize (and in a joiner after init): everyone learns the iteration from rank 0. */
static void sync_iter(void) { MUST_OK(kylix_bcast(C, &iter, sizeof iter, 0)); }

/* kylix_members of the current comm: survivors listed first, then joiners (-1). */
static int check_members(int want_kept, const char *label) {
  int32_t prev[MAXR], n = -1, joiners = 0;
  CHECK_ST(kylix_members(C, prev, MAXR, &n), KYLIX_OK);
  CHECK(n == size_, "%s: kylix_members gave %d entries for size %d", label, n, size_);
  for (int i = 0; i < n; i++) {
    if (prev[i] < 0) joiners++;
    if (i < want_kept) CHECK(prev[i] >= 0, "%s: rank %d is listed as a joiner", label, i);
    else CHECK(prev[i] == -1, "%s: rank %d (a joiner) has previous rank %d", label, i, prev[i]);
  }
  return joiners;
}

static void resize_to(int32_t min_size, const char *label) {
  kylix_comm *next = NULL;
  double t0 = now_s();
  MUST_OK(kylix_resize(C, min_size, &next));
  if (*label) INFO("%s: resized from %d to %d ranks in %.3f s", label, size_, kylix_size(next), now_s() - t0);
  CHECK_ST(kylix_barrier(C), KYLIX_ERR_STATE);
  MUST_OK(kylix_finalize(C));
  C = next;
  refresh();
}

static void init_any(void) {
  MUST_OK(kylix_init("", &C));
  refresh();
  if (getenv("KYLIX_JOIN")) {
    sync_iter(); /* the members' bcast after their resize */
    INFO("joined as rank %d of %d at iteration %" PRId64, rank_, size_, iter);
  }
}

static int parse_sizes(const char *s, int *out) {
  int n = 0;
  while (*s && n < 16) {
    out[n++] = (int)strtol(s, (char **)&s, 10);
    if (*s == ',') s++;
  }
  return n;
}

static void mode_ramp(const char *spec) {
  int sizes[16], ns = parse_sizes(spec, sizes), phase = 0;
  init_any();
  while (phase < ns && sizes[phase] != size_) phase++;
  CHECK(phase < ns, "size %d is not in the schedule %s", size_, spec);
  for (; phase < ns; phase++) {
    for (int i = 0; i < 3; i++) step();
    if (phase + 1 == ns) break;
    int before = size_;
    resize_to(sizes[phase + 1], "ramp");
    sync_iter();
    int j = check_members(before, "ramp");
    CHECK(size_ == sizes[phase + 1] && j == size_ - before, "ramp: size %d with %d joiners after a resize from %d to %d", size_, j, before, sizes[phase + 1]);
    if (rank_ == 0) {
      char m[32];
      snprintf(m, sizeof m, "resized.%d", size_);
      marker(m);
    }
  }
  for (int i = 0; i < 2; i++) step();
  MUST_OK(kylix_barrier(C));
  if (!g_fail) PASS("ramp: rank %d of %d, %" PRId64 " iterations right", rank_, size_, iter);
}

static void mode_fail(int victim, int n) {
  init_any();
  if (getenv("KYLIX_JOIN")) goto rejoined;
  for (int i = 0; i < 6; i++) {
    if (iter == 3 && rank_ == victim) {
      INFO("rank %d dies", rank_);
      raise(SIGKILL);
    }
    int64_t a = 1, b = 0;
    int st = kylix_allreduce(C, &a, &b, 1, KYLIX_I64, KYLIX_SUM);
    if (st != KYLIX_OK) {
      const char *m = errmsg_of(C);
      CHECK(st == KYLIX_ERR_PEER || st == KYLIX_ERR_TIMEOUT, "allreduce after the death returned %s", status_name(st));
      char want[16];
      snprintf(want, sizeof want, "%d", victim);
      CHECK(strstr(m, want) != NULL, "the failure does not name rank %d: %s", victim, m);
      resize_to(0, "failure-ignorance");
      sync_iter();
      check_members(size_, "failure-ignorance");
      CHECK(size_ == n - 1, "failure-ignorance: %d ranks, want %d", size_, n - 1);
      if (rank_ == 0) marker("shrunk");
      for (int k = 0; k < 3; k++) step();
      resize_to(n, "rejoin");
      sync_iter();
      CHECK(check_members(n - 1, "rejoin") == 1, "rejoin: not exactly one joiner");
      goto rejoined;
    }
    step();
  }
  FAILF("the death of rank %d was never seen", victim);
rejoined:
  for (int i = 0; i < 3; i++) step();
  MUST_OK(kylix_barrier(C));
  if (!g_fail) PASS("failure-ignorance and rejoin: rank %d of %d, %" PRId64 " iterations right", rank_, size_, iter);
}

static void mode_stall(void) {
  init_any();
  if (!getenv("KYLIX_JOIN")) {
    step();
    await_marker("stopped", 60);
    const char *lv = getenv("KYLIX_LIVENESS_MS");
    double liveness = lv ? atof(lv) / 1000 : 5;
    double t0 = now_s();
    resize_to(0, "stalled joiner");
    double dt = now_s() - t0;
    CHECK(dt < liveness + 2.0, "a resize with a stopped joiner took %.2f s (liveness %.1f s)", dt, liveness);
    /* It costs about liveness_ms when the stopped joiner was waiting, as the driver means it to
       be: a quicker resize means this test did not test the stall. */
    CHECK(dt > liveness / 2, "a resize with a stopped joiner took only %.2f s: was the joiner waiting?", dt);
    CHECK(size_ == 2, "the stopped joiner was admitted (size %d)", size_);
    sync_iter();
    step();
    if (rank_ == 0) marker("passed");
    await_marker("resumed", 60);
    resize_to(3, "resumed joiner");
    sync_iter();
    CHECK(check_members(2, "resumed joiner") == 1, "the resumed joiner was not admitted");
    if (!g_fail) PASS("stalled joiner: a resize took %.3f s, then the joiner was admitted", dt);
  }
  for (int i = 0; i < 2; i++) step();
  MUST_OK(kylix_barrier(C));
  if (!g_fail) PASS("stall: rank %d of %d right", rank_, size_);
}

/* Replicas of a node get the same data: values by node, non-integer so that the sum's bits
   depend on the order of combination. */
static void digest_reduce(int nodes, int node, const char *label) {
  int64_t out[K], in[K], n_out = 0;
  double ov[K], iv[K];
  for (int64_t k = 0; k < K; k++)
    if (contributes(node, k)) {
      out[n_out] = k;
      ov[n_out++] = 1.0 / (3.0 + node) + k * 0.1 / (node + 7.0);
    }
  for (int64_t k = 0; k < K; k++) in[k] = k;
  MUST_OK(kylix_config_reduce(C, out, n_out, ov, in, K, iv, KYLIX_F64, KYLIX_SUM, 1, NULL));
  uint64_t h = 1469598103934665603ull;
  const unsigned char *p = (const unsigned char *)iv;
  for (size_t i = 0; i < sizeof iv; i++) h = (h ^ p[i]) * 1099511628211ull;
  say("DIGEST", "%s nodes=%d %016" PRIx64, label, nodes, h);
}

static void mode_minwait(void) {
  init_any();
  if (!getenv("KYLIX_JOIN")) {
    step();
    const char *to = getenv("KYLIX_TIMEOUT_MS");
    double timeout = to ? atof(to) / 1000 : 600;
    kylix_comm *next = (kylix_comm *)&next; /* must be set to NULL */
    double t0 = now_s();
    int st = kylix_resize(C, 3, &next);
    double dt = now_s() - t0;
    INFO("min_size=3 with nobody joining: %s after %.2f s: %s", status_name(st), dt, st ? errmsg_of(C) : "");
    CHECK(st == KYLIX_ERR_TIMEOUT, "kylix_resize(min_size=3) returned %s, want TIMEOUT", status_name(st));
    CHECK(next == NULL, "*next was not set to NULL");
    CHECK(dt > timeout / 2 && dt < timeout + 3, "the min_size wait took %.2f s (timeout %.1f s)", dt, timeout);
    step(); /* c unchanged: still usable */
    check_members(2, "unchanged");
    CHECK_ST(kylix_resize(C, -1, &next), KYLIX_ERR_ARG);
    CHECK_ST(kylix_resize(C, 0, NULL), KYLIX_ERR_ARG);
    char buf[128];
    int64_t need = 0;
    CHECK_ST(kylix_join_address(C, buf, 2, &need), KYLIX_ERR_ARG);
    CHECK(need > 2 && need < 128, "kylix_join_address needs %" PRId64 " bytes", need);
    CHECK_ST(kylix_join_address(C, buf, sizeof buf, &need), KYLIX_OK);
    CHECK(strchr(buf, ':') != NULL && (int64_t)strlen(buf) + 1 == need, "join address \"%s\"", buf);
    if (rank_ == 0) { /* for a driver that did not start the job (kylixrun made the secret) */
      char p[4096];
      snprintf(p, sizeof p, "%s/join.env", g_dir);
      FILE *f = fopen(p, "w");
      const char *sec = getenv("KYLIX_SECRET");
      if (f) {
        fprintf(f, "%s %s\n", buf, sec ? sec : "");
        fclose(f);
      }
      marker("timedout");
    }
    t0 = now_s();
    resize_to(3, "min_size wait");
    sync_iter();
    CHECK(check_members(2, "min_size wait") == 1, "min_size wait: not one joiner");
    if (!g_fail) PASS("min_size: TIMEOUT with c unchanged, then waited %.2f s for the joiner", now_s() - t0);
  }
  for (int i = 0; i < 2; i++) step();
  MUST_OK(kylix_barrier(C));
  if (!g_fail) PASS("minwait: rank %d of %d right", rank_, size_);
}

/* Ranks 0..n/2-1 in one network namespace, the rest in another; the driver cuts the link. */
static void mode_split(void) {
  init_any();
  int n = size_, side_a = rank_ < size_ / 2;
  for (int i = 0; i < 3; i++) step();
  MUST_OK(kylix_barrier(C));
  char m[32];
  snprintf(m, sizeof m, "ready.%d", rank_);
  marker(m);
  await_marker("cut", 60);
  int64_t a = 1, b = 0;
  double t0 = now_s();
  int st = kylix_allreduce(C, &a, &b, 1, KYLIX_I64, KYLIX_SUM);
  INFO("allreduce across the cut: %s after %.2f s: %s", status_name(st), now_s() - t0, st ? errmsg_of(C) : "");
  CHECK(st == KYLIX_ERR_PEER || st == KYLIX_ERR_TIMEOUT, "allreduce across the cut returned %s", status_name(st));
  kylix_comm *next = NULL;
  t0 = now_s();
  st = kylix_resize(C, 0, &next);
  const char *msg = st ? errmsg_of(C) : "";
  INFO("resize after the cut: %s after %.2f s: %s", status_name(st), now_s() - t0, msg);
  if (side_a) {
    CHECK(st == KYLIX_OK, "the side with rank 0 and half the ranks: resize returned %s: %s", status_name(st), msg);
    if (st != KYLIX_OK) return;
    MUST_OK(kylix_finalize(C));
    C = next;
    refresh();
    CHECK(size_ == n / 2, "the side that went on has %d ranks, want %d", size_, n / 2);
    for (int i = 0; i < 3; i++) step();
    MUST_OK(kylix_barrier(C));
    if (!g_fail) PASS("split: this side went on with %d ranks", size_);
  } else {
    CHECK(st == KYLIX_ERR_PEER, "the side without rank 0: resize returned %s, want PEER", status_name(st));
    CHECK(next == NULL, "a comm came back");
    CHECK(strstr(msg, "more than half") != NULL, "the message does not explain the quorum: %s", msg);
    if (!g_fail) PASS("split: this side stopped with PEER");
  }
}

/* An ireduce in flight when kylix_resize is called: the resize waits for it, kylix_wait then
   returns its own status (OK) with the sums of the old comm, and the joiner gets a new comm. */
static void mode_inflight(void) {
  init_any();
  if (!getenv("KYLIX_JOIN")) {
    enum { N = 20000 };
    static int64_t idx[N], ov[N], iv[N];
    for (int64_t i = 0; i < N; i++) {
      idx[i] = i * 7 + 3;
      ov[i] = i + rank_;
    }
    kylix_plan *p = NULL;
    MUST_OK(kylix_config(C, idx, N, idx, N, &p));
    kylix_request *req = NULL;
    MUST_OK(kylix_ireduce(p, ov, iv, KYLIX_I64, KYLIX_SUM, 1, &req));
    int old = size_;
    kylix_comm *next = NULL;
    MUST_OK(kylix_resize(C, old + 1, &next));
    CHECK_ST(kylix_wait(req), KYLIX_OK);
    int bad = 0;
    for (int64_t i = 0; i < N && !bad; i++)
      if (iv[i] != old * i + (int64_t)old * (old - 1) / 2) {
        FAILF("the ireduce in flight: element %" PRId64 " = %" PRId64 ", want %" PRId64, i, iv[i], old * i + (int64_t)old * (old - 1) / 2);
        bad = 1;
      }
    CHECK_ST(kylix_reduce(p, ov, iv, KYLIX_I64, KYLIX_SUM, 1), KYLIX_ERR_STATE); /* plans belong to c */
    MUST_OK(kylix_plan_free(p));
    MUST_OK(kylix_finalize(C));
    C = next;
    refresh();
    sync_iter();
    if (!g_fail) PASS("inflight: the ireduce in flight completed with the old comm's sums; now rank %d of %d", rank_, size_);
  }
  for (int i = 0; i < 2; i++) step();
  MUST_OK(kylix_barrier(C));
  if (!g_fail) PASS("inflight: rank %d of %d right", rank_, size_);
}

static void mode_replica(int victim) {
  init_any();
  int s = 2;
  if (!getenv("KYLIX_JOIN")) {
    digest_reduce(size_ / s, rank_ % (size_ / s), "before");
    if (rank_ == victim) raise(SIGKILL);
    resize_to(size_, "replica replaced");
    /* Checked before rank 0's bcast, which every rank needs before it can finish and finalize
       (with racing, a rank needs only one replica of each node to get through a collective). */
    if (rank_ == 0) {
      int32_t failed[MAXR], nf = -1;
      CHECK_ST(kylix_failed_ranks(C, failed, MAXR, &nf), KYLIX_OK);
      CHECK(nf == 0, "%d failed ranks after the replacement (first %d)", nf, nf > 0 ? failed[0] : -1);
    }
    sync_iter();
    int32_t prev[MAXR], n = 0;
    CHECK_ST(kylix_members(C, prev, MAXR, &n), KYLIX_OK);
    CHECK(n == 4 && prev[victim] == -1, "the joiner did not take the dead replica's place %d", victim);
  }
  kylix_stats_reset(C);
  digest_reduce(size_ / s, rank_ % (size_ / s), "after");
  /* The resized comm races the replicas' copies (a fresh mesh told its replica groups). */
  static char js[1 << 16];
  int64_t need = 0;
  MUST_OK(kylix_stats_json(C, js, sizeof js, &need));
  long long won = 0;
  for (const char *p = js; (p = strstr(p, "\"copies_won\":")); p++) won += atoll(p + strlen("\"copies_won\":"));
  CHECK(won > 0, "no racing copy won on the resized replicated comm (stats %.300s)", js);
  MUST_OK(kylix_barrier(C));
  if (!g_fail) PASS("replica: rank %d of %d, %lld racing copies won", rank_, size_, won);
}

static void mode_ref(void) {
  init_any();
  digest_reduce(size_, rank_, "before");
  digest_reduce(size_, rank_, "after");
  if (!g_fail) PASS("ref: rank %d of %d", rank_, size_);
}

static void mode_cycles(int n) {
  init_any();
  int fd0 = 0, fdmid = 0;
  long rss0 = 0, thr0 = 0;
  double t0 = now_s();
  for (int i = 0; i < n; i++) {
    resize_to(0, i % 50 == 0 ? "cycle" : "");
    int64_t a = rank_ + 1, b = 0;
    MUST_OK(kylix_allreduce(C, &a, &b, 1, KYLIX_I64, KYLIX_SUM));
    CHECK(b == (int64_t)size_ * (size_ + 1) / 2, "cycle %d: allreduce %" PRId64, i, b);
    if (i == n / 2 + 9) fdmid = count_fds();
    if (i == 19) {
      fd0 = count_fds();
      rss0 = proc_status("VmRSS");
      thr0 = proc_status("Threads");
    }
  }
  int fd1 = count_fds();
  long rss1 = proc_status("VmRSS"), thr1 = proc_status("Threads");
  INFO("after %d resizes in %.2f s: fds %d -> %d, RSS %ld -> %ld kB, threads %ld -> %ld", n, now_s() - t0, fd0, fd1, rss0, rss1, thr0, thr1);
  /* Flat: the Go runtime may open one or two descriptors lazily (the thread count moves too),
     but a leak of even one per resize would show hundreds. */
  CHECK(fd1 <= fd0 + 2 && fd1 <= fdmid + 1, "fds grew from %d to %d to %d over %d resizes", fd0, fdmid, fd1, n - 20);
  CHECK(rss1 - rss0 < 16 * 1024, "RSS grew from %ld to %ld kB over %d resizes", rss0, rss1, n - 20);
  CHECK(thr1 <= thr0 + 2, "threads grew from %ld to %ld over %d resizes", thr0, thr1, n - 20);
  MUST_OK(kylix_barrier(C));
  if (!g_fail) PASS("cycles: %d resizes, fds, RSS and threads flat", n);
}

static void mode_badjoin(void) {
  double t0 = now_s();
  kylix_comm *c = NULL;
  int st = kylix_init("", &c);
  const char *m = kylix_errmsg(NULL);
  INFO("a joiner with the wrong secret: %s after %.2f s: %s", status_name(st), now_s() - t0, m ? m : "");
  CHECK(st == KYLIX_ERR_AUTH, "kylix_init returned %s, want AUTH", status_name(st));
  CHECK(m && strstr(m, "secret"), "the message does not say secret: %s", m ? m : "(null)");
  CHECK(c == NULL, "a comm came back");
  if (!g_fail) PASS("badjoin: refused with AUTH");
}

int main(int argc, char **argv) {
  check_init("elastic", 170);
  const char *id = getenv("ELASTIC_ID");
  if (id && !getenv("KYLIX_RANK")) g_rank = atoi(id); /* a joiner */
  if (argc < 3) {
    FAILF("usage: elastic MODE DIR [ARGS]");
    return check_finish();
  }
  g_dir = argv[2];
  const char *mode = argv[1];
  if (!strcmp(mode, "ramp") && argc > 3) mode_ramp(argv[3]);
  else if (!strcmp(mode, "fail") && argc > 4) mode_fail(atoi(argv[3]), atoi(argv[4]));
  else if (!strcmp(mode, "stall")) mode_stall();
  else if (!strcmp(mode, "minwait")) mode_minwait();
  else if (!strcmp(mode, "split")) mode_split();
  else if (!strcmp(mode, "inflight")) mode_inflight();
  else if (!strcmp(mode, "replica") && argc > 3) mode_replica(atoi(argv[3]));
  else if (!strcmp(mode, "ref")) mode_ref();
  else if (!strcmp(mode, "cycles") && argc > 3) mode_cycles(atoi(argv[3]));
  else if (!strcmp(mode, "badjoin")) mode_badjoin();
  else FAILF("unknown mode %s", mode);
  if (C) MUST_OK(kylix_finalize(C));
  return check_finish();
}
