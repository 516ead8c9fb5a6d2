/*
 * kylix.h - sparse allreduce for clusters of commodity machines.
 *
 * Kylix reduces sparse vectors across the ranks of a job with a nested,
 * heterogeneous-degree butterfly: each rank names the indices it contributes
 * (out) and the indices it wants back (in); kylix_config routes the index
 * sets once, and kylix_reduce then moves only values, as often as needed.
 * The design is that of Zhao and Canny, "Kylix: A Sparse Allreduce for
 * Commodity Clusters" (the "paper" below): §III the butterfly, §IV the
 * choice of degrees for power-law data, §V replication, §VI the
 * implementation.
 *
 * Conventions, valid for every call below unless its comment says otherwise:
 *
 *  - Status.  Every int-returning call returns an enum kylix_status value
 *    (KYLIX_OK on success).  kylix_rank/kylix_size return a number or -1,
 *    kylix_version returns the version.  Status values never change.
 *  - Messages.  When a call on a comm (or on a plan or request of that comm)
 *    fails, kylix_errmsg(comm) describes the failure, naming the bad argument
 *    or the rank at fault.  Failures with no live comm to attach to
 *    (kylix_init, a NULL or finalized handle, kylix_plan_degrees, calls after
 *    fork) are described by kylix_errmsg(NULL), per thread.
 *  - Handles.  kylix_comm, kylix_plan and kylix_request pointers are opaque
 *    tokens, not memory: never dereference, copy into or free them yourself.
 *    A handle that was finalized or freed stays invalid forever: using it
 *    returns KYLIX_ERR_STATE, never a crash.  NULL is KYLIX_ERR_ARG.
 *  - Buffers.  The library reads and writes caller memory only during the
 *    call (blocking calls) or until kylix_wait/kylix_test report completion
 *    (non-blocking calls), and writes only the buffers documented as outputs.
 *    A NULL pointer is allowed wherever its element count is 0.
 *  - Collectives.  Calls marked "collective" must be made by every rank of
 *    the comm, in the same order, with agreeing dtype/op/width/count.  A
 *    disagreement fails with KYLIX_ERR_MISMATCH on every rank, never a hang.
 *    A rank whose arguments are rejected (KYLIX_ERR_ARG) still takes part:
 *    the others fail with KYLIX_ERR_MISMATCH and all stay in step.
 *  - Timeouts and liveness.  A peer whose process dies, or that stops
 *    answering heartbeats for liveness_ms (a stopped process, a lost host, a
 *    cut link), is dead: calls waiting for it return KYLIX_ERR_PEER within
 *    liveness_ms (plus a small margin).  A live peer that is merely late to
 *    its call is waited for up to timeout_ms, then KYLIX_ERR_TIMEOUT.  The
 *    rank is named in kylix_errmsg.  After such a failure the comm is
 *    broken: later collectives return KYLIX_ERR_STATE.  With replication s
 *    (the replication option), a dead replica is routed around without any
 *    error; a call fails with KYLIX_ERR_PEER, naming them, only when every
 *    replica of some node is dead.
 *  - Threads.  One comm (and its plans and requests) is used by one thread
 *    at a time; different comms may be used from different threads at once.
 *    kylix_version, kylix_strerror and kylix_plan_degrees may be called from
 *    any thread at any time.
 *  - fork().  The library runs a Go runtime whose threads do not survive
 *    fork().  In a child forked after the library was loaded every call
 *    returns KYLIX_ERR_STATE (kylix_errmsg(NULL) says why); start workers
 *    with spawn/forkserver (Python multiprocessing) or exec a new program.
 *
 * Link with -lkylix.  The library exports only the kylix_* names below.
 */
#ifndef KYLIX_H
#define KYLIX_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KYLIX_VERSION_MAJOR 0
#define KYLIX_VERSION_MINOR 1
#define KYLIX_VERSION_PATCH 0
/* The version this header describes; compare with kylix_version() at run time. */
#define KYLIX_VERSION \
  (KYLIX_VERSION_MAJOR * 10000 + KYLIX_VERSION_MINOR * 100 + KYLIX_VERSION_PATCH)

typedef struct kylix_comm    kylix_comm;     /* one process's membership in a job   */
typedef struct kylix_plan    kylix_plan;     /* a configured pair of index sets     */
typedef struct kylix_request kylix_request;  /* a non-blocking operation in flight  */

enum kylix_status {           /* every int-returning call returns one of these        */
  KYLIX_OK = 0,
  KYLIX_ERR_ARG,              /* bad argument: null pointer, negative index, width<1…  */
  KYLIX_ERR_STATE,            /* call out of order, or comm broken by an earlier fault */
  KYLIX_ERR_TIMEOUT,          /* a peer did not answer within timeout_ms               */
  KYLIX_ERR_PEER,             /* a peer failed and no replica could stand in           */
  KYLIX_ERR_MISMATCH,         /* ranks disagree: different collective, dtype, op, width */
  KYLIX_ERR_AUTH,             /* peer failed the handshake: wrong secret, job or version */
  KYLIX_ERR_NET,              /* socket error: cannot bind, connect, resolve           */
  KYLIX_ERR_NOMEM,
  KYLIX_ERR_INTERNAL
};
enum kylix_dtype { KYLIX_F32 = 1, KYLIX_F64, KYLIX_I32, KYLIX_I64, KYLIX_U64 };
enum kylix_op    { KYLIX_SUM = 1, KYLIX_PROD, KYLIX_MIN, KYLIX_MAX,
                   KYLIX_BAND, KYLIX_BOR, KYLIX_BXOR, /* integer dtypes only */
                   KYLIX_RSUM /* reproducible sum, F32/F64 only: see below */ };

/*
 * KYLIX_RSUM - reproducible sum, for KYLIX_F32 and KYLIX_F64 (another dtype
 *   is KYLIX_ERR_ARG).  Accepted by kylix_reduce, kylix_config_reduce,
 *   kylix_ireduce, kylix_allreduce and kylix_iallreduce.
 *
 * The result is bitwise the same for the same multiset of (index, value)
 * contributions, whatever the number of ranks, how the data is split among
 * them, the degrees, the replication (a dead replica included), the threads
 * and the order of the values; repeated out indices on one rank are
 * contributions like any other.  KYLIX_SUM only promises the same bits for
 * the same ranks, degrees and data.  Each index's sum is kept exactly in a
 * binned fixed-point window (ReproBLAS-style bins, integer limbs) and rounded
 * once, to nearest, ties to even: it is the exact sum correctly rounded
 * whenever every contribution lies within 64 bits (F32: 32) below the
 * largest one's leading bit; otherwise the bits below the window are
 * dropped, each costing less than 2^-64 (F32: 2^-32) of the largest
 * contribution.  The error is never larger than a plain sum's bound.
 *
 * Special values: any NaN gives NaN (the canonical quiet NaN, 0x7ff8...);
 * +Inf and -Inf together give NaN; otherwise +Inf or -Inf gives that
 * infinity; a finite exact sum whose rounding exceeds the largest float
 * gives +-Inf, as round to nearest does (there is no intermediate overflow:
 * MAX + MAX - MAX gives MAX).  A zero sum is -0 only when every
 * contribution was -0, else +0; an index nobody contributes to gets +0.
 *
 * Cost: values are combined as accumulators, 24 bytes a value for F64 (3x)
 * and 16 bytes for F32 (4x), and travel the combining (down) phase in that
 * form, except the first layer of kylix_reduce on more than one rank, which
 * sends the caller's floats (each one contribution, converted exactly where
 * it is combined); they are rounded once where the reduction ends and travel
 * back up as the caller's floats.  So a one-layer kylix_reduce moves the
 * same bytes as KYLIX_SUM; the cost is arithmetic.  An index may take up to
 * 2^27 (F64) or 2^26 (F32) contributions.  kylix_allreduce allocates count
 * accumulators for the call.
 */

/* ------------------------------------------------------------------------ */
/* Version and errors                                                        */
/* ------------------------------------------------------------------------ */

/*
 * kylix_version - the library's version, major*10000 + minor*100 + patch.
 *
 * Compare with KYLIX_VERSION to detect a header/library skew.  Any thread,
 * any time (also after fork).  Cannot fail.
 */
int         kylix_version(void);

/*
 * kylix_strerror - a short English description of a status value.
 *
 * Returns a static, NUL-terminated string: never NULL, never to be freed,
 * valid for the life of the process.  A value that is not an enum
 * kylix_status gives "unknown status".  Any thread, any time.
 */
const char *kylix_strerror(int status);

/*
 * kylix_errmsg - the detail of the last failure.
 *
 * c != NULL: the message of the last failing call on c or on a plan or
 *   request of c (which argument was bad, which rank timed out, ...).  The
 *   string is owned by the library and stays valid until the next failing
 *   call on c or kylix_finalize(c), whichever comes first; copy it to keep
 *   it.  A successful call does not clear it: check the status first.  The
 *   same thread rule as for c applies.  If c was finalized or is not a comm
 *   handle, a static string saying so is returned.
 * c == NULL: the last failure on this thread of a call that had no live comm
 *   to report to: kylix_init, any call given a NULL or finalized handle,
 *   kylix_plan_degrees, kylix_op_create, kylix_wait/kylix_test on an unknown
 *   request, and every call in a forked child.  The string lives in
 *   thread-local storage and is overwritten by the next such failure on
 *   this thread.
 *
 * Never returns NULL: "" when there was no failure.
 */
const char *kylix_errmsg(const kylix_comm *c);

/* ------------------------------------------------------------------------ */
/* Membership                                                                */
/* ------------------------------------------------------------------------ */

/*
 * kylix_init - join a job.  Collective over all `size` ranks of the job.
 *
 * options: "key=value;key=value" (see the table below); NULL or "" takes
 *   everything from the environment, as set by kylixrun, Slurm or mpirun.
 *   Every key is also read from KYLIX_<KEY>; the string wins.  Read only
 *   during the call.
 *     rank, size     this rank and the number of ranks (also from
 *                    OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE,
 *                    SLURM_PROCID/NTASKS)
 *     peers          host:port,host:port,... for every rank, in rank order
 *     rendezvous     host:port where ranks find each other (kylixrun sets it;
 *                    without kylixrun, rank 0 serves it when the address
 *                    names its own host)
 *     degrees        auto | direct | binary | 8x4x2 (product = size/replication)
 *     replication    s >= 1, size a multiple of s (default 1).  Rank r is
 *                    replica r/(size/s) of node r%(size/s); replicas of a
 *                    node must be given the same data and make the same
 *                    calls.  Every message to a node goes to all its live
 *                    replicas, the first copy to arrive is used ("packet
 *                    racing"); results count each node once and are the
 *                    same bits with or without failures
 *     compress       off | lz4 | auto (default auto): the index lists of
 *                    config messages, delta-coded, byte-shuffled and lz4-
 *                    compressed (lz4: every message; auto: a message where the
 *                    measured link's time for the bytes saved exceeds the
 *                    coding cost, so not on loopback); values never are;
 *                    results are bitwise the same either way
 *     timeout_ms     bound on waiting for a live peer that has not made its
 *                    call (a long computation)            (default 600000)
 *     liveness_ms    a peer whose process, host or link stops answering
 *                    (no frame, no heartbeat) this long is dead (default 5000)
 *     secret         shared job secret; peers that do not prove it are refused
 *                    (empty: unauthenticated)
 *     min_packet     smallest efficient message in bytes.  Given: degrees=auto
 *                    keeps messages above it (Prop. 4.1's rule).  Not given:
 *                    the first config that needs it measures the job's
 *                    links and reports the size reaching 80% of their rate,
 *                    and degrees=auto plans by predicted time on them
 *                    (1 MiB and the rule when nothing is measured)
 *     threads        workers for sorting, merging, combining   (default cores;
 *                    and gathering; same bits for any count   kylixrun: cores
 *                                                             per local rank)
 *     log            off | error | warn | info | debug, to stderr prefixed
 *                    with the time and "[kylix rank N]"; warn reports waits
 *                    that stall, once a minute                (default warn)
 *     shm            auto | off (default auto): ranks of one host (same boot,
 *                    network and pid namespace) and user exchange through a
 *                    shared-memory segment per pair, agreed on their
 *                    authenticated connection; anything else, or any failure
 *                    setting it up, uses the socket (log=debug says why).
 *                    Waits may spin briefly only while the host's ranks fit
 *                    its usable CPUs; heartbeats stay on the socket
 *     elastic        0 | 1 (default 0; kylixrun --elastic sets it): the
 *                    comm admits joiners at its next kylix_resize.  Needs a
 *                    rendezvous, which is the job's join address (see
 *                    kylix_join_address)
 *     join           host:port of a running elastic job (what
 *                    kylix_join_address gives on any member): this process
 *                    joins it.  rank, size and rendezvous are then not
 *                    needed; secret must be the job's.  kylix_init returns
 *                    once a resize of the members admitted it, with that
 *                    comm (its degrees, replication, compress and min_packet
 *                    are the job's), KYLIX_ERR_AUTH for a wrong secret, job
 *                    or protocol version (nothing changes for the job), or
 *                    KYLIX_ERR_TIMEOUT when no resize admitted it within
 *                    timeout_ms
 *     timeline       a directory (created if missing; default: off).  This
 *                    rank writes DIR/rank-<R>.json (a joiner
 *                    DIR/rank-<R>-join<pid>.json), a Chrome Trace Event
 *                    Format file for Perfetto or chrome://tracing: every
 *                    call with its sequence number, plan, keys, bytes,
 *                    dtype/op and status; its layers' phases (fill,
 *                    combine, gather; partition, sort, merge for config)
 *                    with the sends and the waits naming the peer waited
 *                    for and the bytes; failures and resizes; bytes per
 *                    layer; and the caller's kylix_mark spans (a call
 *                    under 200 us carries its phases in its own event's
 *                    "steps" argument; sends and waits under 2 us are left
 *                    out, the bytes counter has them).  The file is
 *                    the format's JSON array form, one event a line, so a
 *                    rank killed mid-run leaves a file that still loads.
 *                    Clocks are aligned to rank 0's at kylix_init over the
 *                    job's own connections (a few barrier + broadcast
 *                    rounds, so every original rank must set it, as
 *                    kylixrun --timeline does); the error bound is in the
 *                    file.  A joiner keeps its wall clock (error unknown).
 *                    Memory is bounded (two buffers of 8192 events); a
 *                    writer thread encodes off the call path, and when it
 *                    falls behind events are dropped and counted, never
 *                    waited for.  `kylix timeline DIR` merges the files
 *                    into DIR/timeline.json, draws DIR/timeline.svg and
 *                    prints where the time went
 *   A size=1 job needs neither peers nor rendezvous.
 * out: receives the new comm on success, NULL on failure.  Must not be NULL.
 *   Release the comm with kylix_finalize.
 *
 * Thread safety: any thread; each call makes a new, independent comm.
 * Returns KYLIX_OK; KYLIX_ERR_ARG for a malformed or unknown option (the
 * message names the key) or a NULL out; KYLIX_ERR_NET, KYLIX_ERR_AUTH,
 * KYLIX_ERR_TIMEOUT when the peers cannot be reached or refuse; details in
 * kylix_errmsg(NULL).
 */
int kylix_init(const char *options, kylix_comm **out);

/*
 * kylix_finalize - leave the job: close the sockets, free every plan of c
 *   (their handles become invalid) and invalidate c.
 *
 * c: a comm from kylix_init, or NULL (then nothing happens: KYLIX_OK).
 *   kylix_errmsg(c) strings of c are freed.
 *
 * Not a collective: peers that still wait on this rank see KYLIX_ERR_PEER.
 * Requests of c still in flight are finished first, in order (each peer
 * wait bounded by timeout_ms; the peers must have started them too), then
 * freed: when kylix_finalize returns their buffers are no longer touched
 * and their handles are invalid (KYLIX_ERR_STATE), their statuses lost.
 * Call it once per comm, on the thread that uses c.  c is invalid afterwards
 * even when closing reports an error.
 * Returns KYLIX_OK; KYLIX_ERR_STATE if c was already finalized; a failure
 * while closing the sockets (rare: the comm is released anyway).  Messages in
 * kylix_errmsg(NULL), since c no longer exists.
 */
int kylix_finalize(kylix_comm *c);

/*
 * kylix_rank, kylix_size - this rank (0..size-1) and the number of ranks.
 * Both count processes, replicas included: with replication s this rank
 * is a replica of node kylix_rank % (kylix_size / s).
 *
 * Local, no communication.  Return -1 for a NULL or finalized c (message in
 * kylix_errmsg(NULL)).
 */
int kylix_rank(const kylix_comm *c);
int kylix_size(const kylix_comm *c);

/* ------------------------------------------------------------------------ */
/* Sparse allreduce                                                          */
/* ------------------------------------------------------------------------ */

/* Sparse allreduce. Indices are int64 >= 0, need not be sorted, may repeat.
   Values are row-major: width values per index. */

/*
 * kylix_config - agree on the routes for one pair of index sets.  Collective.
 *
 * out_idx[0..n_out): the indices this rank will contribute values for.
 * in_idx[0..n_in):   the indices this rank wants results for.
 *   Both are read only during the call and may be freed after it; neither
 *   needs to be sorted, both may repeat, every value must be >= 0.  A NULL
 *   pointer is allowed when its count is 0; counts must be >= 0.
 * plan: receives the plan on success, NULL on failure.  Must not be NULL.
 *   Reduce with it any number of times; release it with kylix_plan_free (or
 *   kylix_finalize).  Several plans may be live at once.
 *
 * With degrees=auto each config agrees on the global feature count and out
 * density with one small exchange and picks degrees by Proposition 4.1
 * (kylix_plan_degrees, alpha 1, 8 bytes per index, min_packet).
 *
 * Returns KYLIX_OK; KYLIX_ERR_ARG (NULL/negative/too large argument, named
 * in the message); KYLIX_ERR_MISMATCH; KYLIX_ERR_TIMEOUT; KYLIX_ERR_PEER;
 * KYLIX_ERR_STATE (c finalized or broken); KYLIX_ERR_NOMEM.
 */
int kylix_config(kylix_comm *c,
                 const int64_t *out_idx, int64_t n_out,
                 const int64_t *in_idx,  int64_t n_in,
                 kylix_plan **plan);

/*
 * kylix_reduce - reduce values over a configured plan.  Collective over the
 *   plan's comm: every rank reduces the same plan, dtype, op and width.
 *
 * out_vals: n_out*width elements of dtype (n_out as given to kylix_config),
 *   row-major, read only.  Repeated out indices are combined with op.
 * in_vals:  n_in*width elements of dtype, written: row j receives op over
 *   every rank's contributions to in_idx[j], or op's identity (0 for SUM,
 *   -inf/+inf or the integer extreme for MAX/MIN; all-zero bytes for a
 *   kylix_op_create op) when no rank contributes.
 *   Results are bitwise identical on every rank and across runs.
 *   Both buffers are used only during the call and must not overlap.
 * dtype: enum kylix_dtype.  op: enum kylix_op (BAND/BOR/BXOR need an
 *   integer dtype, RSUM a float one) or an id from kylix_op_create.
 *   width >= 1.
 *
 * Returns KYLIX_OK; KYLIX_ERR_ARG; KYLIX_ERR_STATE (plan freed, comm
 * finalized or broken); KYLIX_ERR_MISMATCH; KYLIX_ERR_TIMEOUT;
 * KYLIX_ERR_PEER.  Messages in kylix_errmsg(plan's comm).
 */
int kylix_reduce(kylix_plan *p, const void *out_vals, void *in_vals,
                 int dtype, int op, int32_t width);

/*
 * kylix_config_reduce - config and reduce in one pass down, for index sets
 *   that change every call (mini-batches).  Collective.
 *
 * Arguments as for kylix_config and kylix_reduce.  plan: NULL to discard
 * the routes (every rank may choose independently); otherwise it receives a
 * plan for later kylix_reduce calls (NULL on failure), to be freed with
 * kylix_plan_free.
 *
 * With degrees=auto the first kylix_config_reduce of a comm plans the degrees
 * as kylix_config does; later calls keep them, so a mini-batch stream pays
 * no extra agreement round per step.
 *
 * Returns as kylix_config and kylix_reduce.
 */
int kylix_config_reduce(kylix_comm *c,
                        const int64_t *out_idx, int64_t n_out, const void *out_vals,
                        const int64_t *in_idx,  int64_t n_in,  void *in_vals,
                        int dtype, int op, int32_t width,
                        kylix_plan **plan);      /* plan may be NULL: not kept            */

/*
 * kylix_plan_free - release a plan.  Local, not a collective.
 *
 * p: a plan, or NULL (then nothing happens: KYLIX_OK).  Afterwards p is
 * invalid: using it returns KYLIX_ERR_STATE.  Plans are also freed by
 * kylix_finalize of their comm; freeing one afterwards returns
 * KYLIX_ERR_STATE.  A kylix_ireduce on p still in flight completes normally.
 */
int kylix_plan_free(kylix_plan *p);

/* ------------------------------------------------------------------------ */
/* Dense collectives                                                         */
/* ------------------------------------------------------------------------ */

/* Dense collectives, any number of ranks. send == recv is in place. */

/*
 * kylix_allreduce - dense allreduce of count elements.  Collective.
 *
 * send: count elements of dtype, read.  recv: count elements, written with
 * op over every rank's send; send == recv works in place.  Used only during
 * the call.  Returns as kylix_reduce.
 */
int kylix_allreduce(kylix_comm *c, const void *send, void *recv, int64_t count,
                    int dtype, int op);

/*
 * kylix_bcast - copy root's buf[0..bytes) to every rank.  Collective.
 *
 * buf: read on root, written on the others; bytes and root must agree on
 * every rank (else KYLIX_ERR_MISMATCH).  Used only during the call.
 * Returns KYLIX_OK; KYLIX_ERR_ARG (root out of range, NULL buf with
 * bytes > 0, bytes < 0); the collective failures of kylix_reduce.
 */
int kylix_bcast(kylix_comm *c, void *buf, int64_t bytes, int root);

/*
 * kylix_barrier - return once every rank has entered the barrier.
 * Collective.  Returns KYLIX_OK or the collective failures of kylix_reduce.
 */
int kylix_barrier(kylix_comm *c);

/*
 * kylix_mix - one butterfly mixing step (Zhao and Canny, "Butterfly Mixing"):
 *   replace buf with its average over this rank's group at layer
 *   (step mod L) of the butterfly.  Collective: every rank passes the same
 *   step, count and dtype.
 *
 * Topology: the degrees option when it is fixed (direct, binary, 8x4x2;
 *   factors of 1 are dropped), else binary (2x2x...x the odd rest), the
 *   butterfly of the mixing paper.  L is the number of
 *   degrees above 1 (L = 1 on a one-rank job, whose steps change nothing).
 *   The layer-i group of a rank is the d_i ranks whose mixed-radix rank
 *   differs from it only in digit i (digit 0 varies fastest).  After L
 *   consecutive steps s, s+1, ..., s+L-1 with no other change to the
 *   vectors, every rank holds the global mean (to float rounding), the same
 *   bits on every rank.  Interleaved with local updates (SGD), each step
 *   is one round of messages: buf to the d_i-1 other members of the group
 *   (and an empty message to each other butterfly neighbour), where
 *   kylix_allreduce needs 2L rounds.
 *
 * buf: count elements of dtype, read and written during the call.  The
 *   members' vectors are summed in member order (never arrival order) and
 *   divided by d_i, so every member of a group ends with the bitwise-same
 *   vector, and runs repeat bit for bit.  On failure buf is unchanged.
 * dtype: KYLIX_F32 or KYLIX_F64 (an average needs floats: integer dtypes
 *   are KYLIX_ERR_ARG).
 * step: >= 0, e.g. the iteration number; only step mod L picks the layer,
 *   but ranks must agree on the whole value.
 *
 * Returns KYLIX_OK; KYLIX_ERR_ARG (NULL c, unknown or integer dtype,
 * step < 0, count < 0, NULL buf with count > 0; the message names it);
 * KYLIX_ERR_STATE (comm finalized or broken); KYLIX_ERR_MISMATCH when ranks
 * disagree on step, count, dtype or the collective: the disagreeing rank and
 * every rank that shares a group with it at any layer fail, and the others
 * are told; one that had already finished its step keeps a correct mix with
 * its (agreeing) group; KYLIX_ERR_TIMEOUT; KYLIX_ERR_PEER.  Messages in
 * kylix_errmsg(c).
 */
int kylix_mix(kylix_comm *c, void *buf, int64_t count, int dtype, int64_t step);

/* ------------------------------------------------------------------------ */
/* Non-blocking forms                                                        */
/* ------------------------------------------------------------------------ */

/* Non-blocking forms: buffers must stay valid and untouched until wait/test says done. */

/*
 * kylix_ireduce, kylix_iallreduce - start kylix_reduce / kylix_allreduce and
 *   return at once; the library runs the operation on its own threads while
 *   the caller computes.  Collective: the start counts as the call, in the
 *   usual order, with the same arguments as the blocking form.
 *
 * Arguments as for kylix_reduce / kylix_allreduce, plus
 * req: receives the request on success, NULL on failure.  Must not be NULL.
 *   Complete every request with kylix_wait, or kylix_test until it sets
 *   *done; either frees it.
 *
 * Buffers: the library reads out_vals/send and writes in_vals/recv from its
 *   own threads after the call has returned, until kylix_wait returns or
 *   kylix_test sets *done (whatever the status).  Until then keep them
 *   allocated and do not read or write them; from a garbage-collected
 *   language keep the owning object reachable (numpy array, direct
 *   ByteBuffer, malloc'ed memory: never a Java heap array, which JNA copies
 *   per call).
 *
 * Order: several requests may be in flight on one comm.  They run one after
 *   another, in the order they were started, and a blocking collective
 *   called meanwhile (kylix_reduce, kylix_barrier, kylix_config, ...) waits
 *   for them and then runs: every rank sees the same sequence of
 *   collectives.  Requests therefore complete in start order; they may be
 *   waited for in any order.  kylix_plan_free(p) while a request on p is in
 *   flight is allowed: the request completes normally.
 *
 * Threads: a request belongs to its comm's thread rule (one thread at a
 *   time per comm, its plans and its requests); the library's own threads
 *   need no help from the caller to make progress.
 *
 * Returns (at the start) KYLIX_OK; KYLIX_ERR_ARG (a bad argument, named in
 * the message; the rank still takes part, as for the blocking calls, so the
 * peers' matching requests fail with KYLIX_ERR_MISMATCH); KYLIX_ERR_STATE
 * (plan freed, comm finalized or broken).  Failures of the collective itself
 * (KYLIX_ERR_MISMATCH, KYLIX_ERR_TIMEOUT, KYLIX_ERR_PEER, ...) are reported
 * by kylix_wait / kylix_test.  Messages in kylix_errmsg(c or p's comm).
 */
int kylix_ireduce(kylix_plan *p, const void *out_vals, void *in_vals,
                  int dtype, int op, int32_t width, kylix_request **req);
int kylix_iallreduce(kylix_comm *c, const void *send, void *recv, int64_t count,
                     int dtype, int op, kylix_request **req);

/*
 * kylix_wait - block until r has completed, free r, and return the
 *   operation's status.
 *
 * Waits no longer than the operation's own peer waits (timeout_ms each),
 * after the requests started before r.  When it returns, the library no
 * longer touches r's buffers, whatever the status.  r is invalid afterwards:
 * a second kylix_wait or a kylix_test on it returns KYLIX_ERR_STATE
 * ("request was already completed and freed"), never a crash or a double
 * free.
 *
 * Returns the operation's status: KYLIX_OK; KYLIX_ERR_MISMATCH;
 * KYLIX_ERR_TIMEOUT; KYLIX_ERR_PEER; KYLIX_ERR_STATE when an earlier failure
 * broke the comm (a request queued behind one that timed out or lost a peer
 * fails so, without communicating).  Its message, prefixed with the call
 * that started it, is in kylix_errmsg(r's comm).  KYLIX_ERR_ARG for a NULL
 * r, KYLIX_ERR_STATE for a freed one (messages in kylix_errmsg(NULL)).
 */
int kylix_wait(kylix_request *r);                /* frees r; returns the op's status      */

/*
 * kylix_test - poll r without blocking.
 *
 * While r runs: *done = 0, returns KYLIX_OK, r stays valid.  Once it has
 * completed: *done = 1, r is freed (as by kylix_wait, with the same
 * guarantees on the buffers) and the operation's status is returned, as
 * kylix_wait would.  done must not be NULL (KYLIX_ERR_ARG, r stays valid).
 * Poll with a pause (nanosleep, or useful work) between calls: progress
 * does not depend on polling.  A freed r gives KYLIX_ERR_STATE and *done = 0;
 * NULL gives KYLIX_ERR_ARG.
 */
int kylix_test(kylix_request *r, int *done);     /* frees r when *done is set            */

/* ------------------------------------------------------------------------ */
/* User-defined reduction                                                    */
/* ------------------------------------------------------------------------ */

/* User-defined reduction (like MPI_Op_create): combine count elements of in into inout. */
typedef void (*kylix_user_fn)(void *inout, const void *in, int64_t count, int dtype, void *ctx);

/*
 * kylix_op_create - register fn as a reduction op; *op receives its id.
 *   Local (not a collective), any thread.
 *
 * The id is accepted wherever an op is (kylix_reduce, kylix_config_reduce,
 * kylix_allreduce, kylix_ireduce, kylix_iallreduce), with every dtype.
 * Ids are handed out in increasing order from 64 (never a kylix_op value)
 * per process, and collectives compare op ids across ranks: create the same
 * ops in the same order on every rank.  Ops live until the process ends
 * (there is no free); at most 32768 may be created.
 *
 * fn(inout, in, count, dtype, ctx) must set inout[i] = inout[i] (+) in[i]
 *   for i in [0, count), elements of the given enum kylix_dtype.  count >= 1;
 *   the library passes many elements per call (up to 65536), never one call
 *   per element.  inout and in are aligned to the element size, do not
 *   overlap, and are valid only during the call: do not keep them.  fn must
 *   not fail, block on other ranks, longjmp, or call any kylix_* function.
 * ctx: passed to fn as given, never dereferenced by the library; it must
 *   stay valid while any reduction with the op can run.
 *
 * What the result is.  A user op has no identity element, so none is ever
 * used: the first contribution to an element is copied and every later one
 * is combined into it, inout holding the accumulation of the earlier
 * contributions and in the later contribution (or partial result).  The
 * order is fixed by (butterfly layer, source rank), never by arrival:
 * repeated out indices of one rank are folded in the caller's order, and
 * the ranks' contributions in rank order.  For an associative op (MPI's
 * assumption) the result is therefore exactly
 *     c_1 (+) c_2 (+) ... (+) c_n
 * over the contributions in (rank, position) order, so the op need not be
 * commutative; only the bracketing depends on the degrees (and, for
 * kylix_allreduce, on count).  A non-associative op gets a result that
 * depends on them but is still bitwise the same run after run and on every
 * rank.  An in index that no rank contributes
 * gets all-zero bytes (the op has no identity to give it).
 *
 * Threads.  fn runs on a thread of the library's runtime, which may be the
 * calling thread or another one, during the reducing call (or until
 * kylix_wait/kylix_test complete a non-blocking one).  It is never called
 * concurrently for one reduction (nor for two on the same comm), but
 * reductions on different comms can run at the same time (called from
 * different threads, or non-blocking ones in flight together) and then call
 * fn concurrently: fn and ctx must be thread-safe if the op is used that
 * way.  Do not rely on thread-local state in fn.
 *
 * Returns KYLIX_OK; KYLIX_ERR_ARG (fn or op NULL); KYLIX_ERR_NOMEM (no ids
 * left).  Messages in kylix_errmsg(NULL).
 */
int kylix_op_create(kylix_user_fn fn, void *ctx, int *op);   /* op id usable where op is */

/* ------------------------------------------------------------------------ */
/* Failures and elasticity                                                   */
/* ------------------------------------------------------------------------ */

/* Failures and elasticity (Zhang and Qiu, "Efficient, Fault-tolerant and Elastic Allreduce Framework for Iterative Algorithms", and ULFM's shrink). */

/*
 * kylix_failed_ranks - the ranks of c known to have failed.  ranks[0..cap)
 * receives up to cap of them in increasing order, *n the total (ranks may be
 * NULL when cap is 0).  Local: no peer is asked, nothing waits.
 *
 * A rank is listed once this rank's transport has seen it go: its process
 * died or its connection broke, it stopped answering heartbeats for
 * liveness_ms, or it finalized.  A peer that is alive but late to its call
 * (the calls waiting for it fail with KYLIX_ERR_TIMEOUT) is not listed.
 * With replication the dead replicas are listed while the job goes on.  The list only grows, and different ranks may see a death at
 * slightly different times, so two ranks' lists can differ for a moment:
 * kylix_shrink is what makes the survivors agree.  Ranks are numbered as in
 * c: for a comm made by kylix_shrink, its own ranks 0..k-1, and only its
 * members are listed (not the ranks the shrink already left out).  Works on
 * a broken comm, also after it was shrunk.
 *
 * Returns KYLIX_OK; KYLIX_ERR_ARG for a NULL n, a negative cap, a NULL ranks
 * with cap > 0, or a cap smaller than the total (then *n is the total and
 * the first cap ranks are written, so the call can be repeated with a
 * larger buffer).
 */
int kylix_failed_ranks(const kylix_comm *c, int32_t *ranks, int32_t cap, int32_t *n);

/*
 * kylix_shrink - make a new comm of the surviving ranks of c, renumbered
 * 0..k-1, in *survivors (NULL on failure).  Collective over the survivors,
 * like ULFM's MPI_Comm_shrink.
 *
 * Use: a collective on c fails with KYLIX_ERR_PEER or KYLIX_ERR_TIMEOUT (and
 *   later calls with KYLIX_ERR_STATE); every surviving rank then calls
 *   kylix_shrink(c, &s) and carries on with s, e.g. re-synchronising the
 *   model with an allreduce or bcast on s (Zhang and Qiu: failures are
 *   exposed to the application, which decides how to go on).  c need not
 *   be broken: shrinking a healthy comm gives a comm of every live rank.
 *
 * Membership: the survivors first agree on the set of failed ranks (a few
 *   small message rounds among them), so every rank that gets KYLIX_OK gets
 *   a comm with the same members: the ranks of c that are alive, in their
 *   order in c, renumbered 0..k-1 (rank 0 of s is the lowest surviving rank
 *   of c).  A rank is taken for failed when the transport has lost it (see
 *   kylix_failed_ranks) or when it stays silent for timeout_ms during the
 *   agreement: every survivor must call kylix_shrink within timeout_ms of
 *   the others.  A rank that calls it later than that, after the others
 *   have left it out, gets KYLIX_ERR_PEER ("took this rank for failed"),
 *   never a comm the others are not in.  A rank that dies during the shrink
 *   is either left out, or (if it died just after the others agreed) still
 *   a member of s: then the first collective on s fails with KYLIX_ERR_PEER
 *   on every member and the application shrinks s in turn.  Without
 *   failures during the agreement it takes a few message round trips; each
 *   round in which a rank is silent adds up to timeout_ms.
 *
 * s: a new comm for every collective (config/reduce, allreduce, bcast,
 *   barrier, mix, the non-blocking calls, stats) with c's options.  When
 *   the degrees option was a fixed list (e.g. 2x2x2) whose product is not
 *   the new size, s plans with degrees=auto; direct and binary adapt to the
 *   new size.  Results on s are those of a job of k ranks: the same inputs
 *   on the same k ranks give the same bits.  kylix_failed_ranks(s) numbers
 *   ranks as in s.  s may itself be shrunk later (at most 4095 shrinks in a
 *   row).  With replication, s keeps every replica of each node that still
 *   has a live one, dead replicas included (they stay listed by
 *   kylix_failed_ranks and are routed around), and drops the nodes with no
 *   live replica, so s is again s replicas of each of its nodes.
 *
 * c: after the call (whatever it returns) c is broken for good: its
 *   collectives return KYLIX_ERR_STATE, and its plans are unusable.  It is
 *   also revoked for the peers: one that has not noticed the failure and
 *   enters (or waits in) c's next collective fails at once with
 *   KYLIX_ERR_PEER instead of waiting for this rank.  kylix_failed_ranks,
 *   kylix_errmsg and kylix_stats_json still work on it.  A comm can be
 *   shrunk once (a second call returns KYLIX_ERR_STATE; shrink s instead),
 *   so if kylix_shrink fails the survivors cannot regroup from c.
 *
 * Ownership: s and c are finalized separately, in any order, and both must
 *   be (c's plans are freed by kylix_finalize(c), s's by kylix_finalize(s)).
 *   They share the connections to the peers, which are closed by whichever
 *   finalize comes last: finalizing c does not disturb s.  The same holds
 *   for comms shrunk from s.  As for any comm, one thread at a time per comm;
 *   c and s may be used from different threads.
 *
 * Returns KYLIX_OK; KYLIX_ERR_ARG (c or survivors NULL); KYLIX_ERR_STATE (c
 *   was finalized or already shrunk); KYLIX_ERR_PEER (the other survivors
 *   left this rank out); KYLIX_ERR_MISMATCH, KYLIX_ERR_INTERNAL (a protocol
 *   violation).  Details in kylix_errmsg(c).
 */
int kylix_shrink(kylix_comm *c, kylix_comm **survivors);     /* survivors renumbered 0..k-1 */

/*
 * kylix_resize - elastic membership (Zhang and Qiu's ramp-up and
 * failure-ignorance modes): make the next comm of c's job in *next (NULL on
 * failure).  Collective over c's live members; kylix_shrink is a resize
 * that admits nobody.
 *
 * Membership: the live members agree on who failed, as kylix_shrink does,
 *   and, when c is elastic (option elastic=1), admit every process waiting
 *   to join (option join=) at the moment they agree.  *next numbers the
 *   survivors 0..k-1 in their order in c, then the joiners in the order
 *   they arrived; every member and joiner gets the same membership.  With
 *   replication s, joiners first take the places of dead replicas (lowest
 *   node first) and then form new nodes s at a time; the rest wait for a
 *   later resize (and none is admitted while fewer joiners wait than dead
 *   replicas are to be replaced).  A joiner that does not answer within
 *   liveness_ms (a stopped process) is passed over and waits for the next
 *   resize: it holds up a resize by liveness_ms at most.
 *
 * Quorum: a resize goes on only with more than half of c's members alive,
 *   or exactly half including c's rank 0: when the network splits a job,
 *   one side goes on and the other fails with KYLIX_ERR_PEER naming the
 *   ranks it lost.
 *
 * min_size: when the new comm would have fewer than min_size ranks, the
 *   resize waits for more joiners, up to timeout_ms (less a margin of at
 *   most 2 s); if too few come it returns KYLIX_ERR_TIMEOUT, admits nobody,
 *   and c goes on unchanged (same members, same plans, usable).  0: take
 *   whoever waits, maybe nobody.
 *
 * Requests in flight: kylix_resize first waits for every non-blocking
 *   operation of c to finish (each bounded by timeout_ms); each keeps its
 *   own status, which kylix_wait returns.  None is cut short, none runs on
 *   *next.
 *
 * *next: plans belong to one comm: configure again on *next.  Use
 *   kylix_members(*next) to find the joiners (-1) and send them the state
 *   (e.g. a bcast from rank 0).  With joiners, *next has connections of its
 *   own (a fresh mesh); without, it shares c's, as kylix_shrink's comm does.
 *
 * c: after a successful resize, c is broken for good (collectives return
 *   KYLIX_ERR_STATE; a second resize returns KYLIX_ERR_STATE): at most one
 *   resize of c succeeds.  After a failed one (other than the min_size
 *   timeout) c is broken but every live member may call kylix_resize on c
 *   again.  c and *next are finalized separately, in any order.
 *
 * Returns KYLIX_OK; KYLIX_ERR_ARG (c or next NULL, min_size negative);
 *   KYLIX_ERR_STATE (c finalized or already resized); KYLIX_ERR_TIMEOUT
 *   (min_size not met: c unchanged); KYLIX_ERR_PEER (no majority, left out
 *   by the others, or a rank died during the resize: the message names it);
 *   KYLIX_ERR_NET, KYLIX_ERR_AUTH (the join address could not be used).
 *   Details in kylix_errmsg(c).
 */
int kylix_resize(kylix_comm *c, int32_t min_size, kylix_comm **next);

/*
 * kylix_members - for each rank of c, the rank it had in the comm c was
 * resized (or shrunk) from, or -1 for a joiner; on a comm from a plain
 * kylix_init, each rank's own number.  prev_ranks[0..cap) receives up to
 * cap entries, *n the size of c (prev_ranks may be NULL when cap is 0).
 * Local.  Returns KYLIX_OK; KYLIX_ERR_ARG for a NULL n, a negative cap, a
 * NULL prev_ranks with cap > 0, or a cap below the size (the first cap
 * entries are written and *n is the size).
 */
int kylix_members(const kylix_comm *c, int32_t *prev_ranks, int32_t cap, int32_t *n);

/*
 * kylix_join_address - the address processes join c's job at (option
 * join=), as a NUL-terminated "host:port" in buf[0..cap).  It is the job's
 * rendezvous: kylixrun's, which lives as long as the job, or, for a job
 * started without a launcher, the one rank 0 serves itself, which dies with
 * rank 0's process.  *needed (if not NULL) receives the bytes needed,
 * terminator included.  Local.  Returns KYLIX_OK; KYLIX_ERR_STATE when c is
 * not elastic (no elastic=1); KYLIX_ERR_ARG for a negative cap, a NULL buf
 * with cap > 0, or a cap below *needed (nothing is written).
 */
int kylix_join_address(const kylix_comm *c, char *buf, int64_t cap, int64_t *needed);

/* ------------------------------------------------------------------------ */
/* Observability and planning                                                */
/* ------------------------------------------------------------------------ */

/*
 * kylix_stats_json - what c has done, as one JSON object (UTF-8,
 *   NUL-terminated) in buf[0..cap).  Local: no peer is involved.
 *
 * *needed receives the JSON length + 1 (the NUL) on every call that gets as
 *   far as reading the stats, also when cap is too small; needed may be NULL.
 *   When cap < that size the call returns KYLIX_ERR_ARG naming cap and writes
 *   nothing to buf: call with cap 0 (buf may then be NULL), allocate *needed
 *   bytes and call again.  The size changes only when a collective runs, a
 *   plan is freed or the stats are reset; nothing is ever written past cap.
 *   (The figures that move between calls, "replication" and "shm" - a copy
 *   that lands late, a reader that sleeps while the caller computes - are
 *   read at the first call after such an event and held until the next.)
 *
 * Counters are cumulative since kylix_init or the last kylix_stats_reset.
 * Bytes are message payload bytes (frame headers, 56 bytes a message on TCP,
 * are not counted); messages are data messages; times are wall-clock
 * seconds on this rank.  A "traffic" object is
 *   {"bytes_sent","bytes_recv","msgs_sent","msgs_recv"}  (integers).
 * Fields (version 1; new fields may be added, none renamed):
 *   version         1
 *   rank, size      this rank, ranks of c
 *   degrees_option  the degrees option as given ("auto", "binary", "4x2"...)
 *   degrees         the fixed degrees it means, or null for auto
 *   threads         worker threads of the data path (the threads option)
 *   kernels         the SIMD kernels dispatched on this CPU: "avx512",
 *                   "avx2" or "go" (plain loops; KYLIX_NOSIMD=1 forces it)
 *   options         the options in effect: {"timeout_ms","liveness_ms",
 *                   "threads","log","min_packet","replication","compress",
 *                   "shm","degrees"}
 *   since_unix_s    start of the counting: init or last reset (Unix seconds)
 *   compression     {"option","active","raw_sent","wire_sent","raw_recv",
 *                   "wire_recv","ratio","note"}: index-list bytes of every
 *                   config message before (raw, 8 per index) and after
 *                   (wire) compression; active: some message travelled
 *                   compressed; ratio: raw_sent / wire_sent (1.0 for none)
 *   links           the link model measured on the job's links (null until
 *                   measured): {"latency_s","overhead_s","bytes_per_s",
 *                   "min_packet","points":[{"bytes","seconds",
 *                   "bytes_per_s"}],"links_measured","probe_s",
 *                   "probe_bytes","peers","source"}: a message of s bytes
 *                   takes overhead_s + s/bytes_per_s one way; the same on
 *                   every rank but for probe_s, probe_bytes (what the probe
 *                   cost this rank: up to ~24 MB in tens of ms on
 *                   loopback) and peers (this rank's own links). The first
 *                   config measures the links when degrees=auto without
 *                   min_packet, or compress=auto; fixed degrees with
 *                   compress=off or lz4 never probe. "ranks_per_host":
 *                   the ranks sharing a host, when they sit in blocks of
 *                   one size (1 otherwise); across several such hosts,
 *                   "local" and "remote" are the links within a host and
 *                   between hosts (each of the same shape), which
 *                   degrees=auto prices apart: it may then group each
 *                   host's ranks in one layer so the network carries
 *                   each index once per host.
 *   totals          traffic of every collective of c
 *   phase_seconds   {"config","reduce_down","reduce_up","config_reduce_down",
 *                   "config_reduce_up","dense"}: time in each phase, summed
 *                   over plans (dense: kylix_allreduce)
 *   collectives     {kind: {"calls","errors","seconds","traffic"}} for every
 *                   kind of collective: config, reduce, config_reduce,
 *                   allreduce, bcast, barrier, mix, agree, ... and
 *                   invalid-arguments (calls whose arguments this rank
 *                   rejected)
 *   plans           [plan]: one object per plan, oldest first (bounded: see
 *                   retired_plans)
 *   replication     {"replicas","nodes","node","failed_ranks","copies_won",
 *                   "copies_lost","duplicate_bytes","peers"}: s, size/s,
 *                   this rank's node, the dead ranks, and the racing copies
 *                   received (won: used; lost: dropped because another
 *                   replica's copy came first; duplicate_bytes: bytes of the
 *                   lost copies read), in total and per peer ("peers":
 *                   [{"rank","copies_won","copies_lost","duplicate_bytes"}],
 *                   peers with copies only; null without replication or on
 *                   a comm made by kylix_shrink)
 *   shm             {"peers","ranks_on_host","spin_allowed","spins",
 *                   "spin_hits","yields","sleeps","wakes_sent",
 *                   "ref_frames","written_back_bytes","lane_msgs",
 *                   "lane_sleeps","express_calls"}: the peers reached through shared
 *                   memory (shm=auto, same host and user), the ranks found
 *                   on this host, whether waits may spin (only while those
 *                   ranks fit the usable CPUs), the waits that spun, were
 *                   satisfied spinning, yielded the CPU between looks
 *                   instead (where spinning is not allowed), slept, and the
 *                   wakes sent; the messages read straight out of a peer's
 *                   memory and the bytes written back there; the small
 *                   messages read from a peer's lane (a dense allreduce of
 *                   up to 352 bytes) and the lane waits that slept, and
 *                   the comm's allreduces that ran in C without entering the
 *                   library's Go runtime (kylix_allreduce of up to 352
 *                   bytes with a built-in op other than KYLIX_RSUM, once
 *                   the comm is in a run of them); null
 *                   where the comm's transport has no such figures
 *   retired_plans   {"plans","calls","seconds","agree","layers"}: the sum of
 *                   the plan records dropped to bound memory (beyond 64
 *                   records, the oldest freed plans and plans of
 *                   kylix_config_reduce(..., plan=NULL) are folded in here)
 * plan:
 *   id, created_by  ("config" or "config_reduce"), configured (false: its
 *   configuration failed), freed, degrees [d1,...], n_out, n_in (indices
 *   given, repeats included), out_keys, in_keys (distinct indices of this
 *   rank), bottom_out_keys, bottom_in_keys (held below the last layer),
 *   calls {"config","reduce","config_reduce","errors"},
 *   seconds {"config","reduce_down","reduce_up","config_reduce_down",
 *   "config_reduce_up"}, agree (traffic of the degrees=auto agreement),
 *   links (traffic of the link measurement this plan's config ran),
 *   layers [layer], outermost first.
 * layer (the "Kylix shape" of the paper's Fig. 5, as seen by this rank):
 *   layer, degree; out_keys_above, in_keys_above (distinct indices held
 *   going into the layer), out_keys_sent, in_keys_sent (to the other members
 *   of the group; the rest is kept), out_keys_recv, in_keys_recv,
 *   out_keys_below, in_keys_below (held after merging); and the traffic of
 *   the layer by collective: config (16-byte header + 8 bytes per index),
 *   reduce_down, reduce_up (width * dtype size per index),
 *   config_reduce_down (indices and values), config_reduce_up; index_bytes
 *   (as in compression, for this layer's config messages).
 *
 * Returns KYLIX_OK, KYLIX_ERR_ARG (NULL c, cap < 0, NULL buf with cap > 0,
 * cap too small) or KYLIX_ERR_STATE (finalized c).
 */
int kylix_stats_json(const kylix_comm *c, char *buf, int64_t cap, int64_t *needed);

/*
 * kylix_stats_reset - set every counter and timer of kylix_stats_json to 0
 *   and restart since_unix_s.  Plans keep their degrees and key counts;
 *   records of freed plans are dropped.  Local.  Returns KYLIX_OK,
 *   KYLIX_ERR_ARG (NULL c) or KYLIX_ERR_STATE (finalized c).
 */
int kylix_stats_reset(kylix_comm *c);

/*
 * kylix_mark - the caller's own work on the timeline (option timeline=DIR):
 *   a span ("forward", "load batch") from a KYLIX_MARK_BEGIN to the
 *   KYLIX_MARK_END of the same name, or a KYLIX_MARK_INSTANT, on the same
 *   clock as the library's events, in the rank's "user" lane.  Spans nest:
 *   an END closes the innermost open span, and must name it (at most 64 open
 *   at once).
 *
 * name: NUL-terminated UTF-8 (at most 256 bytes are read); copied, so the
 *   caller may reuse it at once.
 * kind: KYLIX_MARK_INSTANT, KYLIX_MARK_BEGIN or KYLIX_MARK_END.
 *
 * Local: no peer is involved, and nothing waits for the disk.  Same thread
 * rule as every call on c.  With the timeline off it records nothing and
 * returns KYLIX_OK (arguments are still checked).  Returns KYLIX_OK;
 * KYLIX_ERR_ARG for a NULL c, a NULL or empty name or an unknown kind;
 * KYLIX_ERR_STATE for a finalized c, an END without an open span of that
 * name innermost, or a 65th open span.
 */
#define KYLIX_MARK_INSTANT 0
#define KYLIX_MARK_BEGIN   1
#define KYLIX_MARK_END     2
int kylix_mark(kylix_comm *c, const char *name, int kind);

/*
 * kylix_reject - give up this rank's turn at the next collective.  For a
 *   caller (a binding) that found a bad argument the library cannot see,
 *   such as a buffer shorter than the counts say, and so will not make the
 *   call the other ranks are making: the matching call fails on every other
 *   rank with KYLIX_ERR_MISMATCH and a message naming this rank and reason,
 *   instead of waiting for it.  The comm stays usable for the collective
 *   after.  Collective in that it takes one turn; it does not wait for peers.
 *
 * reason: NUL-terminated text for the peers' messages (at most 4096 bytes
 *   are read; NULL gives "no reason given").
 *
 * Returns KYLIX_OK, KYLIX_ERR_ARG (NULL c) or KYLIX_ERR_STATE (finalized or
 * broken c).
 */
int kylix_reject(kylix_comm *c, const char *reason);

/*
 * kylix_plan_degrees - the butterfly degrees degrees=auto would choose for a
 *   sparse vector of n_features features, of which a fraction `density`
 *   appears on each rank, over `ranks` nodes, with power-law exponent alpha,
 *   for messages no smaller than min_packet_bytes and bytes_per_value bytes
 *   per value.
 *
 * degrees[0..cap): receives the degree of each layer, outermost first; their
 *   product equals ranks.  *layers receives the number of layers (also when
 *   cap is too small, so the caller can retry; then the first cap degrees
 *   are written and the call returns KYLIX_ERR_ARG naming cap).  degrees may
 *   be NULL only when cap is 0; layers must not be NULL.
 *
 * Pure computation, no comm needed: any thread.  Returns KYLIX_OK or
 * KYLIX_ERR_ARG (message in kylix_errmsg(NULL)).
 */
int kylix_plan_degrees(int64_t n_features, double density, int32_t ranks, double alpha,
                       int64_t min_packet_bytes, int32_t bytes_per_value,
                       int32_t *degrees, int32_t cap, int32_t *layers);

#ifdef __cplusplus
}
#endif

#endif /* KYLIX_H */
