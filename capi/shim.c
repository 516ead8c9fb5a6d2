// The public kylix_* names with the header's const-correct prototypes. cgo drops const from
// exported Go functions, so the Go side exports kylixgo_* and this file adapts: handles become
// uintptr_t ids (never Go pointers), out-handles are written here, and messages that have no
// comm to live in go to a thread-local buffer that kylix_errmsg(NULL) returns.
//
// Calls that touch Go are guarded against fork(): the Go runtime's threads do not survive it,
// so a child that calls into Go hangs forever. A pthread_atfork child hook marks the child.

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../include/kylix.h"
#include "_cgo_export.h"
#include "express.h"

_Static_assert(sizeof(void *) == 8, "kylix handles need 64-bit pointers");

#define KYLIX_TLS_ERR_CAP 1024
static __thread char tls_err[KYLIX_TLS_ERR_CAP];
#define EB tls_err, sizeof tls_err

static volatile sig_atomic_t forked;

static const char fork_msg[] =
    "kylix: this process was fork()ed after libkylix was loaded; the library's runtime does not "
    "survive fork(). Start worker processes with the spawn or forkserver start method (Python: "
    "multiprocessing.set_start_method('spawn') or 'forkserver'), or exec a new program, and call "
    "kylix_init there.";

static void on_fork_child(void) { forked = 1; }

__attribute__((constructor)) static void kylix_shim_init(void) {
  pthread_atfork(NULL, NULL, on_fork_child);
}

static int fork_fail(void) {
  snprintf(tls_err, sizeof tls_err, "%s", fork_msg);
  return KYLIX_ERR_STATE;
}

#define H(p) ((uintptr_t)(p))

// ---- pure C: no Go, usable after fork -----------------------------------------------------

int kylix_version(void) { return KYLIX_VERSION; }

const char *kylix_strerror(int status) {
  switch (status) {
    case KYLIX_OK: return "success";
    case KYLIX_ERR_ARG: return "invalid argument";
    case KYLIX_ERR_STATE: return "invalid state (call out of order, handle freed, or comm broken)";
    case KYLIX_ERR_TIMEOUT: return "timed out waiting for a peer";
    case KYLIX_ERR_PEER: return "a peer failed";
    case KYLIX_ERR_MISMATCH: return "ranks disagree on the collective or its arguments";
    case KYLIX_ERR_AUTH: return "peer authentication failed";
    case KYLIX_ERR_NET: return "network error";
    case KYLIX_ERR_NOMEM: return "out of memory";
    case KYLIX_ERR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

const char *kylix_errmsg(const kylix_comm *c) {
  if (forked) return fork_msg;
  if (c == NULL) return tls_err;
  int found = 0;
  const char *m = kylixgo_errmsg(H(c), &found);
  if (!found) return "kylix_errmsg: comm was finalized or is not a kylix_comm handle";
  return m ? m : "";
}

// ---- membership -----------------------------------------------------------------------------

int kylix_init(const char *options, kylix_comm **out) {
  if (out) *out = NULL;
  if (forked) return fork_fail();
  uintptr_t h = 0;
  int st = kylixgo_init((char *)options, out ? &h : NULL, EB);
  if (out && st == KYLIX_OK) *out = (kylix_comm *)h;
  return st;
}

int kylix_finalize(kylix_comm *c) {
  if (c == NULL) return KYLIX_OK;
  if (forked) return fork_fail();
  return kylixgo_finalize(H(c), EB);
}

int kylix_rank(const kylix_comm *c) {
  if (forked) { fork_fail(); return -1; }
  return kylixgo_rank(H(c), 0, EB);
}

int kylix_size(const kylix_comm *c) {
  if (forked) { fork_fail(); return -1; }
  return kylixgo_rank(H(c), 1, EB);
}

// ---- sparse allreduce -----------------------------------------------------------------------

int kylix_config(kylix_comm *c, const int64_t *out_idx, int64_t n_out, const int64_t *in_idx,
                 int64_t n_in, kylix_plan **plan) {
  if (plan) *plan = NULL;
  if (forked) return fork_fail();
  uintptr_t h = 0;
  int st = kylixgo_config(H(c), (int64_t *)out_idx, n_out, (int64_t *)in_idx, n_in,
                          plan ? &h : NULL, EB);
  if (plan && st == KYLIX_OK) *plan = (kylix_plan *)h;
  return st;
}

int kylix_reduce(kylix_plan *p, const void *out_vals, void *in_vals, int dtype, int op,
                 int32_t width) {
  if (forked) return fork_fail();
  return kylixgo_reduce(H(p), (void *)out_vals, in_vals, dtype, op, width, EB);
}

int kylix_config_reduce(kylix_comm *c, const int64_t *out_idx, int64_t n_out,
                        const void *out_vals, const int64_t *in_idx, int64_t n_in,
                        void *in_vals, int dtype, int op, int32_t width, kylix_plan **plan) {
  if (plan) *plan = NULL;
  if (forked) return fork_fail();
  uintptr_t h = 0;
  int st = kylixgo_config_reduce(H(c), (int64_t *)out_idx, n_out, (void *)out_vals,
                                 (int64_t *)in_idx, n_in, in_vals, dtype, op, width,
                                 plan ? &h : NULL, EB);
  if (plan && st == KYLIX_OK) *plan = (kylix_plan *)h;
  return st;
}

int kylix_plan_free(kylix_plan *p) {
  if (p == NULL) return KYLIX_OK;
  if (forked) return fork_fail();
  return kylixgo_plan_free(H(p), EB);
}

// ---- dense collectives ----------------------------------------------------------------------

int kylix_bcast(kylix_comm *c, void *buf, int64_t bytes, int root) {
  if (forked) return fork_fail();
  return kylixgo_bcast(H(c), buf, bytes, root, EB);
}

int kylix_barrier(kylix_comm *c) {
  if (forked) return fork_fail();
  return kylixgo_barrier(H(c), EB);
}

int kylix_allreduce(kylix_comm *c, const void *send, void *recv, int64_t count, int dtype,
                    int op) {
  if (forked) return fork_fail();
  if (kx_express_allreduce(H(c), send, recv, count, dtype, op)) return KYLIX_OK;  // express.c
  return kylixgo_allreduce(H(c), (void *)send, recv, count, dtype, op, EB);
}

int kylix_failed_ranks(const kylix_comm *c, int32_t *ranks, int32_t cap, int32_t *n) {
  if (n) *n = 0;
  if (forked) return fork_fail();
  return kylixgo_failed_ranks(H(c), ranks, cap, n, EB);
}

// ---- planning -------------------------------------------------------------------------------

int kylix_plan_degrees(int64_t n_features, double density, int32_t ranks, double alpha,
                       int64_t min_packet_bytes, int32_t bytes_per_value, int32_t *degrees,
                       int32_t cap, int32_t *layers) {
  if (forked) return fork_fail();
  return kylixgo_plan_degrees(n_features, density, ranks, alpha, min_packet_bytes,
                              bytes_per_value, degrees, cap, layers, EB);
}

// ---- mixing, non-blocking, user ops, failures, stats --------------------------------------

int kylix_mix(kylix_comm *c, void *buf, int64_t count, int dtype, int64_t step) {
  if (forked) return fork_fail();
  return kylixgo_mix(H(c), buf, count, dtype, step, EB);
}

int kylix_ireduce(kylix_plan *p, const void *out_vals, void *in_vals, int dtype, int op,
                  int32_t width, kylix_request **req) {
  if (req) *req = NULL;
  if (forked) return fork_fail();
  uintptr_t h = 0;
  int st = kylixgo_ireduce(H(p), (void *)out_vals, in_vals, dtype, op, width, req ? &h : NULL,
                           EB);
  if (req && st == KYLIX_OK) *req = (kylix_request *)h;
  return st;
}

int kylix_iallreduce(kylix_comm *c, const void *send, void *recv, int64_t count, int dtype,
                     int op, kylix_request **req) {
  if (req) *req = NULL;
  if (forked) return fork_fail();
  uintptr_t h = 0;
  int st = kylixgo_iallreduce(H(c), (void *)send, recv, count, dtype, op, req ? &h : NULL, EB);
  if (req && st == KYLIX_OK) *req = (kylix_request *)h;
  return st;
}

int kylix_wait(kylix_request *r) {
  if (forked) return fork_fail();
  return kylixgo_wait(H(r), EB);
}

int kylix_test(kylix_request *r, int *done) {
  if (done) *done = 0;
  if (forked) return fork_fail();
  return kylixgo_test(H(r), done, EB);
}

// Implemented (capi/exports_userop.go); fn and ctx cross as integers, never as Go pointers.
int kylix_op_create(kylix_user_fn fn, void *ctx, int *op) {
  if (op) *op = 0;
  if (forked) return fork_fail();
  return kylixgo_op_create((uintptr_t)fn, (uintptr_t)ctx, op, EB);
}


// Implemented (capi/exports_shrink.go): the new comm gets a handle of its own.
int kylix_shrink(kylix_comm *c, kylix_comm **survivors) {
  if (survivors) *survivors = NULL;
  if (forked) return fork_fail();
  uintptr_t h = 0;
  int st = kylixgo_shrink(H(c), survivors ? &h : NULL, EB);
  if (survivors && st == KYLIX_OK) *survivors = (kylix_comm *)h;
  return st;
}

// Implemented (capi/exports_resize.go): the new comm gets a handle of its own.
int kylix_resize(kylix_comm *c, int32_t min_size, kylix_comm **next) {
  if (next) *next = NULL;
  if (forked) return fork_fail();
  uintptr_t h = 0;
  int st = kylixgo_resize(H(c), min_size, next ? &h : NULL, EB);
  if (next && st == KYLIX_OK) *next = (kylix_comm *)h;
  return st;
}

int kylix_members(const kylix_comm *c, int32_t *prev_ranks, int32_t cap, int32_t *n) {
  if (n) *n = 0;
  if (forked) return fork_fail();
  return kylixgo_members(H(c), prev_ranks, cap, n, EB);
}

int kylix_join_address(const kylix_comm *c, char *buf, int64_t cap, int64_t *needed) {
  if (needed) *needed = 0;
  if (forked) return fork_fail();
  return kylixgo_join_address(H(c), buf, cap, (int64_t *)needed, EB);
}

int kylix_stats_json(const kylix_comm *c, char *buf, int64_t cap, int64_t *needed) {
  if (needed) *needed = 0;
  if (forked) return fork_fail();
  return kylixgo_stats_json(H(c), buf, cap, (int64_t *)needed, EB);
}

int kylix_stats_reset(kylix_comm *c) {
  if (forked) return fork_fail();
  return kylixgo_stats_reset(H(c), EB);
}

int kylix_mark(kylix_comm *c, const char *name, int kind) {
  if (forked) return fork_fail();
  return kylixgo_mark(H(c), (char *)name, kind, EB);
}

int kylix_reject(kylix_comm *c, const char *reason) {
  if (forked) return fork_fail();
  return kylixgo_reject(H(c), (char *)reason, EB);
}
