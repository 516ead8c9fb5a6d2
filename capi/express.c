// The express allreduce: kylix_allreduce of a small vector between the ranks of one host, with
// a built-in op (not RSUM), run here in C over the lanes Go lent out (core/express.go), without
// a cgo crossing. It is the lane protocol of netio/shm/lane.go, side for side, and the direct
// exchange of core/dense/lane.go: put this rank's vector into its lane to every other rank, wait
// for theirs, combine them all in rank order from the op's identity (the same bits as Go's
// kernels), acknowledge.
// Anything else goes back to Go, which has every check, wait and error: a call this path does
// not take, a peer whose both slots are still unread, a wait longer than the patience (a late,
// dead or finalized peer), a message of another fingerprint. When its messages are out by then,
// put_for tells Go so, and Go's call of the same collective goes on from there.
//
// Go's side of a call (capi/express.go) takes the comm back before it runs anything on it:
// state goes from KX_ARMED to KX_GO there, and from KX_ARMED to KX_RUNNING for a call here.

#define _GNU_SOURCE
#include "express.h"

#include <math.h>
#include <string.h>

#include "../include/kylix.h"

#if defined(__linux__)
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

static kx_express *table[KX_EXPRESS_IDS];

void kx_express_publish(uintptr_t id, kx_express *ex) {
  if (id < KX_EXPRESS_IDS) __atomic_store_n(&table[id], ex, __ATOMIC_RELEASE);
}

// now is the time in ex's unit: counter ticks where Go's clock reads the counter, else ns.
static int64_t now(const kx_express *ex) {
#if defined(__x86_64__)
  if (ex->tsc) return (int64_t)__rdtsc();
#endif
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static uint64_t load_acquire(uintptr_t word) {
  return __atomic_load_n((uint64_t *)word, __ATOMIC_ACQUIRE);
}

// ack_up_to raises this side's acknowledgement to seq; it never goes down (laneAckUpTo).
static void ack_up_to(kx_lane *l, uint64_t seq) {
  if (seq > l->acked) {
    l->acked = seq;
    __atomic_store_n((uint64_t *)l->ack, seq, __ATOMIC_RELEASE);
  }
}

// free_slot is the slot a put may write, -1 while the peer has not read either (LanePut's
// choice: the older slot, once the peer acknowledged it).
static int free_slot(kx_lane *l) {
  int i = l->seq[1] < l->seq[0];
  if (l->seq[i] > l->peer_acked) {
    l->peer_acked = load_acquire(l->peer_ack);
    if (l->seq[i] > l->peer_acked) {
      if (l->seq[1 - i] > l->peer_acked) return -1;
      i = 1 - i;
    }
  }
  return i;
}

// put publishes payload in slot i under seq, then wakes the peer if it announced that it
// sleeps: the sequentially consistent store and the load after it are the putting side of the
// sleep protocol (LaneSleep).
static void put(kx_lane *l, int i, uint64_t seq, const uint64_t meta[2], const void *payload,
                uint64_t n) {
  uint64_t *h = (uint64_t *)l->put[i];
  h[1] = meta[0];
  h[2] = meta[1];
  h[3] = n;
  memcpy((unsigned char *)h + KX_LANE_HEAD, payload, n);
  __atomic_store_n(&h[0], seq, __ATOMIC_SEQ_CST);
  l->seq[i] = seq;
  l->sent++;
  l->bytes_sent += n;
  uint32_t *w = (uint32_t *)l->peer_sleep, one = 1;
  if (__atomic_load_n(w, __ATOMIC_SEQ_CST) != 0 &&
      __atomic_compare_exchange_n(w, &one, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    syscall(SYS_futex, w, FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
    l->wakes++;
  }
}

// look is the peer's slot holding its message of seq, or NULL (LaneLook). A put acknowledges
// before it publishes, so the peer had acknowledged up to seq-1 then.
static const uint64_t *look(kx_lane *l, uint64_t seq) {
  for (int i = 0; i < 2; i++) {
    const uint64_t *h = (const uint64_t *)l->look[i];
    if (__atomic_load_n(&h[0], __ATOMIC_ACQUIRE) == seq) {
      if (seq - 1 > l->peer_acked) l->peer_acked = seq - 1;
      return h;
    }
  }
  return NULL;
}

// yields: where the host's ranks outnumber its CPUs, a wait offers the CPU this many times
// before Go's wait takes over (which offers it for a while more, then sleeps until the put
// wakes it). A count, not a time: a yield that ran another rank for its whole slice would end a
// time at once and send the wait to sleep, and a sleep costs the waker a system call
// (docs/measurements.md, "The express allreduce").
#define YIELDS 16

// await looks for the peer's message of seq: spinning until the call is ex->patience old where
// the host's ranks fit its CPUs, else offering the CPU between looks.
static const uint64_t *await(const kx_express *ex, kx_lane *l, uint64_t seq, int64_t start) {
  for (unsigned k = 1;; k++) {
    const uint64_t *h = look(l, seq);
    if (h) return h;
    if (!ex->spin) {
      if (k > YIELDS) return NULL;
      sched_yield();
    } else if (k % 64 == 0 && now(ex) - start > ex->patience) {
      return NULL;
    }
  }
}

// Go's kernels, element for element (core/kernels: kernMin, kernMax, combineBytes): a NaN
// already in the result stays, a NaN coming in replaces a number, and -0 orders before +0;
// integers wrap.
#define FMIN(a, b) ((a) != (a) ? (a) : (b) != (b) ? (b) : (a) == (b) ? (signbit(a) ? (a) : (b)) : (a) < (b) ? (a) : (b))
#define FMAX(a, b) ((a) != (a) ? (a) : (b) != (b) ? (b) : (a) == (b) ? (signbit(a) ? (b) : (a)) : (a) > (b) ? (a) : (b))
#define IMIN(a, b) ((b) < (a) ? (b) : (a))
#define IMAX(a, b) ((b) > (a) ? (b) : (a))

// LOOP applies d[i] = f(d[i], s[i]) over count values of type T.
#define LOOP(T, f)                                   \
  do {                                               \
    T *d = dst;                                      \
    const T *s = src;                                \
    for (int64_t i = 0; i < count; i++) d[i] = f(d[i], s[i]); \
  } while (0)
#define ADD(a, b) ((a) + (b))
#define MUL(a, b) ((a) * (b))
#define AND(a, b) ((a) & (b))
#define OR(a, b) ((a) | (b))
#define XOR(a, b) ((a) ^ (b))

// takes reports whether this path combines op for dtype: the built-in ops of each dtype (RSUM,
// user ops and the bitwise ops of floats are Go's, as are the checks and their errors).
static int takes(int dtype, int op) {
  int integer = dtype == KYLIX_I32 || dtype == KYLIX_I64 || dtype == KYLIX_U64;
  return (op >= KYLIX_SUM && op <= KYLIX_MAX) || (integer && op >= KYLIX_BAND && op <= KYLIX_BXOR);
}

// identity fills count values of dst with op's identity (core/kernels.Identity).
static void identity(int dtype, int op, void *dst, int64_t count) {
  for (int64_t i = 0; i < count; i++) {
    switch (dtype) {
      case KYLIX_F32:
        ((float *)dst)[i] = op == KYLIX_SUM ? 0.0f : op == KYLIX_PROD ? 1.0f : op == KYLIX_MIN ? INFINITY : -INFINITY;
        break;
      case KYLIX_F64:
        ((double *)dst)[i] = op == KYLIX_SUM ? 0.0 : op == KYLIX_PROD ? 1.0 : op == KYLIX_MIN ? INFINITY : -INFINITY;
        break;
      case KYLIX_I32:
        ((int32_t *)dst)[i] = op == KYLIX_PROD ? 1 : op == KYLIX_MIN ? INT32_MAX : op == KYLIX_MAX ? INT32_MIN : op == KYLIX_BAND ? -1 : 0;
        break;
      case KYLIX_I64:
        ((int64_t *)dst)[i] = op == KYLIX_PROD ? 1 : op == KYLIX_MIN ? INT64_MAX : op == KYLIX_MAX ? INT64_MIN : op == KYLIX_BAND ? -1 : 0;
        break;
      default:  // KYLIX_U64
        ((uint64_t *)dst)[i] = op == KYLIX_PROD ? 1 : op == KYLIX_MIN || op == KYLIX_BAND ? UINT64_MAX : 0;
    }
  }
}

// combine folds count values of src into dst with op (wrapping integer sums and products in
// unsigned arithmetic, as Go's).
static void combine(int dtype, int op, void *dst, const void *src, int64_t count) {
  switch (dtype) {
    case KYLIX_F32:
      switch (op) {
        case KYLIX_SUM: LOOP(float, ADD); return;
        case KYLIX_PROD: LOOP(float, MUL); return;
        case KYLIX_MIN: LOOP(float, FMIN); return;
        default: LOOP(float, FMAX); return;
      }
    case KYLIX_F64:
      switch (op) {
        case KYLIX_SUM: LOOP(double, ADD); return;
        case KYLIX_PROD: LOOP(double, MUL); return;
        case KYLIX_MIN: LOOP(double, FMIN); return;
        default: LOOP(double, FMAX); return;
      }
    case KYLIX_I32:
      switch (op) {
        case KYLIX_SUM: LOOP(uint32_t, ADD); return;
        case KYLIX_PROD: LOOP(uint32_t, MUL); return;
        case KYLIX_MIN: LOOP(int32_t, IMIN); return;
        case KYLIX_MAX: LOOP(int32_t, IMAX); return;
        case KYLIX_BAND: LOOP(uint32_t, AND); return;
        case KYLIX_BOR: LOOP(uint32_t, OR); return;
        default: LOOP(uint32_t, XOR); return;
      }
    case KYLIX_I64:
      switch (op) {
        case KYLIX_MIN: LOOP(int64_t, IMIN); return;
        case KYLIX_MAX: LOOP(int64_t, IMAX); return;
      }
      __attribute__((fallthrough));  // the rest are the unsigned loops
    default:
      switch (op) {
        case KYLIX_SUM: LOOP(uint64_t, ADD); return;
        case KYLIX_PROD: LOOP(uint64_t, MUL); return;
        case KYLIX_MIN: LOOP(uint64_t, IMIN); return;
        case KYLIX_MAX: LOOP(uint64_t, IMAX); return;
        case KYLIX_BAND: LOOP(uint64_t, AND); return;
        case KYLIX_BOR: LOOP(uint64_t, OR); return;
        default: LOOP(uint64_t, XOR); return;
      }
  }
}

static int64_t elem_size(int dtype) {
  switch (dtype) {
    case KYLIX_F32:
    case KYLIX_I32: return 4;
    case KYLIX_F64:
    case KYLIX_I64:
    case KYLIX_U64: return 8;
  }
  return 0;
}

static void release(kx_express *ex) { __atomic_store_n(&ex->state, KX_ARMED, __ATOMIC_RELEASE); }

// hand_over gives collective seq-1 (lane sequence seq), whose messages are out, to Go.
static int hand_over(kx_express *ex, uint64_t seq) {
  ex->put_for = seq;
  release(ex);
  return 0;
}

int kx_express_allreduce(uintptr_t id, const void *send, void *recv, int64_t count, int dtype,
                         int op) {
  if (id >= KX_EXPRESS_IDS) return 0;
  kx_express *ex = __atomic_load_n(&table[id], __ATOMIC_ACQUIRE);
  int64_t es = elem_size(dtype);
  if (ex == NULL || es == 0 || !takes(dtype, op) || send == NULL || recv == NULL || count <= 0)
    return 0;
  uint32_t armed = KX_ARMED;
  if (!__atomic_compare_exchange_n(&ex->state, &armed, KX_RUNNING, 0, __ATOMIC_ACQUIRE,
                                   __ATOMIC_RELAXED))
    return 0;
  const unsigned char *sp = send, *rp = recv;
  uint64_t n = (uint64_t)count * (uint64_t)es;
  // max is at most KX_EXPRESS_BYTES; buffers that overlap in part are Go's to reject
  if (count > ex->max / es || (sp != rp && sp < rp + n && rp < sp + n)) {
    release(ex);
    return 0;
  }
  int64_t start = now(ex);
  int m = ex->nodes, me = ex->node;
  uint64_t seq = ex->seq + 1;  // the lanes' sequences are the collective's plus one (never 0)
  uint64_t meta[2] = {ex->kind | (uint64_t)dtype << 8 | (uint64_t)op << 16,
                      (uint64_t)(uint32_t)count << 32};  // lanes.metaOf of the fingerprint
  int slot[KX_EXPRESS_NODES];
  for (int r = 0; r < m; r++) {
    if (r == me) continue;
    ack_up_to(&ex->lane[r], seq - 1);  // as a put does first (the peer's older messages)
    if ((slot[r] = free_slot(&ex->lane[r])) < 0) {
      release(ex);  // that peer runs late: Go waits for it, and puts everything
      return 0;
    }
  }
  for (int r = 0; r < m; r++)
    if (r != me) put(&ex->lane[r], slot[r], seq, meta, send, n);
  const uint64_t *got[KX_EXPRESS_NODES];
  for (int r = 0; r < m; r++) {
    if (r == me) continue;
    got[r] = await(ex, &ex->lane[r], seq, start);
    if (got[r] == NULL || got[r][1] != meta[0] || got[r][2] != meta[1] || got[r][3] != n)
      return hand_over(ex, seq);
  }
  // Every rank's vector in rank order from the op's identity, as Go's combiner: aligned
  // scratch for the caller's buffers, which may be unaligned (the slots' payloads are 8-byte
  // aligned).
  uint64_t acc[KX_EXPRESS_BYTES / 8], own[KX_EXPRESS_BYTES / 8];
  identity(dtype, op, acc, count);
  memcpy(own, send, n);
  for (int r = 0; r < m; r++)
    combine(dtype, op, acc, r == me ? (const void *)own : (const unsigned char *)got[r] + KX_LANE_HEAD,
            count);
  memcpy(recv, acc, n);
  for (int r = 0; r < m; r++) {
    if (r == me) continue;
    kx_lane *l = &ex->lane[r];
    ack_up_to(l, seq);
    l->read++;
    l->bytes_read += n;
  }
  ex->seq++;
  ex->calls++;
  ex->time += now(ex) - start;
  release(ex);
  return 1;
}

#else  // no lanes without Linux

void kx_express_publish(uintptr_t id, kx_express *ex) {
  (void)id;
  (void)ex;
}

int kx_express_allreduce(uintptr_t id, const void *send, void *recv, int64_t count, int dtype,
                         int op) {
  (void)id, (void)send, (void)recv, (void)count, (void)dtype, (void)op;
  return 0;
}

#endif
