package org.kylix;

import com.sun.jna.Callback;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;

/**
 * Layer 1: the C ABI of {@code include/kylix.h}, one static method per C function, each with its
 * C prototype. No checks, no exceptions: statuses are returned as ints. Use {@link Kylix},
 * {@link Comm} and {@link Plan} instead unless you need the raw calls.
 *
 * <p>JNA direct mapping ({@link Native#register(Class, NativeLibrary)}) is used rather than an
 * interface proxy: a call costs a fraction of a microsecond instead of a few. Buffers are passed
 * as {@link Pointer}s that the layers above derive from direct buffers or from their own native
 * scratch memory, never as Java heap arrays (JNA would copy those in and out on every call, and
 * for the non-blocking calls the copy would be freed while the library still uses it).
 *
 * <p>Handles ({@code kylix_comm *}, {@code kylix_plan *}, {@code kylix_request *}) are opaque
 * tokens carried in {@link Pointer}s: never dereference them.
 */
public final class KylixNative {
  private KylixNative() {}

  /** The library these methods are bound to. */
  static final NativeLibrary LIBRARY = NativeLoader.load();

  static {
    Native.register(KylixNative.class, LIBRARY);
  }

  // enum kylix_status
  public static final int KYLIX_OK = 0;
  public static final int KYLIX_ERR_ARG = 1;
  public static final int KYLIX_ERR_STATE = 2;
  public static final int KYLIX_ERR_TIMEOUT = 3;
  public static final int KYLIX_ERR_PEER = 4;
  public static final int KYLIX_ERR_MISMATCH = 5;
  public static final int KYLIX_ERR_AUTH = 6;
  public static final int KYLIX_ERR_NET = 7;
  public static final int KYLIX_ERR_NOMEM = 8;
  public static final int KYLIX_ERR_INTERNAL = 9;

  // enum kylix_dtype
  public static final int KYLIX_F32 = 1, KYLIX_F64 = 2, KYLIX_I32 = 3, KYLIX_I64 = 4, KYLIX_U64 = 5;

  // enum kylix_op
  public static final int KYLIX_SUM = 1, KYLIX_PROD = 2, KYLIX_MIN = 3, KYLIX_MAX = 4,
      KYLIX_BAND = 5, KYLIX_BOR = 6, KYLIX_BXOR = 7, KYLIX_RSUM = 8;

  /** The version of kylix.h these bindings were written against (KYLIX_VERSION). */
  public static final int KYLIX_VERSION = 100;

  // int kylix_version(void);
  public static native int kylix_version();

  // const char *kylix_strerror(int status);
  public static native String kylix_strerror(int status);

  // const char *kylix_errmsg(const kylix_comm *c);
  public static native String kylix_errmsg(Pointer c);

  // int kylix_init(const char *options, kylix_comm **out);
  public static native int kylix_init(String options, PointerByReference out);

  // int kylix_finalize(kylix_comm *c);
  public static native int kylix_finalize(Pointer c);

  // int kylix_rank(const kylix_comm *c);
  public static native int kylix_rank(Pointer c);

  // int kylix_size(const kylix_comm *c);
  public static native int kylix_size(Pointer c);

  // int kylix_config(kylix_comm *c,
  //                  const int64_t *out_idx, int64_t n_out,
  //                  const int64_t *in_idx,  int64_t n_in,
  //                  kylix_plan **plan);
  public static native int kylix_config(Pointer c, Pointer outIdx, long nOut, Pointer inIdx,
      long nIn, PointerByReference plan);

  // int kylix_reduce(kylix_plan *p, const void *out_vals, void *in_vals,
  //                  int dtype, int op, int32_t width);
  public static native int kylix_reduce(Pointer p, Pointer outVals, Pointer inVals, int dtype,
      int op, int width);

  // int kylix_config_reduce(kylix_comm *c,
  //                         const int64_t *out_idx, int64_t n_out, const void *out_vals,
  //                         const int64_t *in_idx,  int64_t n_in,  void *in_vals,
  //                         int dtype, int op, int32_t width,
  //                         kylix_plan **plan);
  public static native int kylix_config_reduce(Pointer c, Pointer outIdx, long nOut,
      Pointer outVals, Pointer inIdx, long nIn, Pointer inVals, int dtype, int op, int width,
      PointerByReference plan);

  // int kylix_plan_free(kylix_plan *p);
  public static native int kylix_plan_free(Pointer p);

  // int kylix_allreduce(kylix_comm *c, const void *send, void *recv, int64_t count,
  //                     int dtype, int op);
  public static native int kylix_allreduce(Pointer c, Pointer send, Pointer recv, long count,
      int dtype, int op);

  // int kylix_bcast(kylix_comm *c, void *buf, int64_t bytes, int root);
  public static native int kylix_bcast(Pointer c, Pointer buf, long bytes, int root);

  // int kylix_barrier(kylix_comm *c);
  public static native int kylix_barrier(Pointer c);

  // int kylix_mix(kylix_comm *c, void *buf, int64_t count, int dtype, int64_t step);
  public static native int kylix_mix(Pointer c, Pointer buf, long count, int dtype, long step);

  // int kylix_ireduce(kylix_plan *p, const void *out_vals, void *in_vals,
  //                   int dtype, int op, int32_t width, kylix_request **req);
  public static native int kylix_ireduce(Pointer p, Pointer outVals, Pointer inVals, int dtype,
      int op, int width, PointerByReference req);

  // int kylix_iallreduce(kylix_comm *c, const void *send, void *recv, int64_t count,
  //                      int dtype, int op, kylix_request **req);
  public static native int kylix_iallreduce(Pointer c, Pointer send, Pointer recv, long count,
      int dtype, int op, PointerByReference req);

  // int kylix_wait(kylix_request *r);
  public static native int kylix_wait(Pointer r);

  // int kylix_test(kylix_request *r, int *done);
  public static native int kylix_test(Pointer r, IntByReference done);

  /**
   * {@code typedef void (*kylix_user_fn)(void *inout, const void *in, int64_t count, int dtype,
   * void *ctx);}
   */
  public interface kylix_user_fn extends Callback {
    void invoke(Pointer inout, Pointer in, long count, int dtype, Pointer ctx);
  }

  // int kylix_op_create(kylix_user_fn fn, void *ctx, int *op);
  public static native int kylix_op_create(kylix_user_fn fn, Pointer ctx, IntByReference op);

  // int kylix_failed_ranks(const kylix_comm *c, int32_t *ranks, int32_t cap, int32_t *n);
  public static native int kylix_failed_ranks(Pointer c, Pointer ranks, int cap,
      IntByReference n);

  // int kylix_shrink(kylix_comm *c, kylix_comm **survivors);
  public static native int kylix_shrink(Pointer c, PointerByReference survivors);

  // int kylix_resize(kylix_comm *c, int32_t min_size, kylix_comm **next);
  public static native int kylix_resize(Pointer c, int minSize, PointerByReference next);

  // int kylix_members(const kylix_comm *c, int32_t *prev_ranks, int32_t cap, int32_t *n);
  public static native int kylix_members(Pointer c, Pointer prevRanks, int cap, IntByReference n);

  // int kylix_join_address(const kylix_comm *c, char *buf, int64_t cap, int64_t *needed);
  public static native int kylix_join_address(Pointer c, Pointer buf, long cap,
      LongByReference needed);

  // int kylix_stats_json(const kylix_comm *c, char *buf, int64_t cap, int64_t *needed);
  public static native int kylix_stats_json(Pointer c, Pointer buf, long cap,
      LongByReference needed);

  // int kylix_stats_reset(kylix_comm *c);
  public static native int kylix_stats_reset(Pointer c);

  // #define KYLIX_MARK_INSTANT 0, KYLIX_MARK_BEGIN 1, KYLIX_MARK_END 2
  public static final int KYLIX_MARK_INSTANT = 0, KYLIX_MARK_BEGIN = 1, KYLIX_MARK_END = 2;

  // int kylix_mark(kylix_comm *c, const char *name, int kind);
  public static native int kylix_mark(Pointer c, String name, int kind);

  // int kylix_reject(kylix_comm *c, const char *reason);
  public static native int kylix_reject(Pointer c, String reason);

  // int kylix_plan_degrees(int64_t n_features, double density, int32_t ranks, double alpha,
  //                        int64_t min_packet_bytes, int32_t bytes_per_value,
  //                        int32_t *degrees, int32_t cap, int32_t *layers);
  public static native int kylix_plan_degrees(long nFeatures, double density, int ranks,
      double alpha, long minPacketBytes, int bytesPerValue, Pointer degrees, int cap,
      IntByReference layers);
}
