package org.kylix;

/**
 * A reduction operation: one of the built-in {@code enum kylix_op} values, or a user-defined op
 * made by {@link Kylix#opCreate(UserOp)}. Every rank of a collective must use the same op.
 */
public final class Op {
  /** Sum; identity 0. */
  public static final Op SUM = new Op(KylixNative.KYLIX_SUM, "SUM", null);
  /** Product; identity 1. */
  public static final Op PROD = new Op(KylixNative.KYLIX_PROD, "PROD", null);
  /** Minimum; identity +inf or the largest integer. */
  public static final Op MIN = new Op(KylixNative.KYLIX_MIN, "MIN", null);
  /** Maximum; identity -inf or the smallest integer. */
  public static final Op MAX = new Op(KylixNative.KYLIX_MAX, "MAX", null);
  /** Bitwise and (integer dtypes only). */
  public static final Op BAND = new Op(KylixNative.KYLIX_BAND, "BAND", null);
  /** Bitwise or (integer dtypes only). */
  public static final Op BOR = new Op(KylixNative.KYLIX_BOR, "BOR", null);
  /** Bitwise exclusive or (integer dtypes only). */
  public static final Op BXOR = new Op(KylixNative.KYLIX_BXOR, "BXOR", null);
  /**
   * Reproducible sum (F32 and F64 only); identity +0. The result has the same bits for the same
   * multiset of (index, value) contributions, whatever the number of ranks, the split of the data,
   * the degrees, replication, threads or order, and is the exact sum rounded once to nearest when
   * the values lie within 64 bits (F32: 32) of the largest. Values are combined as 24-byte (F64)
   * or 16-byte (F32) accumulators; bytes on the wire, NaN, infinities and overflow: see KYLIX_RSUM
   * in kylix.h.
   */
  public static final Op RSUM = new Op(KylixNative.KYLIX_RSUM, "RSUM", null);

  private final int id;
  private final String name;
  final UserOpCallback callback; // null for built-in ops

  Op(int id, String name, UserOpCallback callback) {
    this.id = id;
    this.name = name;
    this.callback = callback;
  }

  /** The op id passed to the C library. */
  public int id() {
    return id;
  }

  /** Whether this op was made by {@link Kylix#opCreate(UserOp)}. */
  public boolean isUserOp() {
    return callback != null;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Op && ((Op) o).id == id;
  }

  @Override
  public int hashCode() {
    return id;
  }

  @Override
  public String toString() {
    return name;
  }
}
