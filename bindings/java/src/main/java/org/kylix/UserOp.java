package org.kylix;

import java.nio.ByteBuffer;
import java.util.function.DoubleBinaryOperator;
import java.util.function.LongBinaryOperator;

/**
 * A user-defined reduction ({@code kylix_user_fn}), registered with {@link Kylix#opCreate}.
 *
 * <p>{@code apply} must set {@code inout[i] = inout[i] (+) in[i]} for {@code i < count}, the
 * elements being of type {@code dtype}. The buffers are native-order views of library memory,
 * valid only during the call: do not keep them. The library passes many elements per call (up to
 * 65536). The op is applied in a fixed order (butterfly layer, then source rank), never arrival
 * order: for an associative op the result is exactly c_1 (+) c_2 (+) ... over the contributions
 * in (rank, position) order, so the op need not be commutative. An index no rank contributes gets
 * all-zero bytes (a user op has no identity).
 *
 * <p>It runs on a thread of the library's runtime, attached to the JVM as a daemon thread, during
 * the reducing call. It must not block on other ranks or call Kylix. Reductions on different
 * comms may call it concurrently: make it thread-safe if you use it so. If it throws, the
 * exception is caught (an exception cannot cross the C library) and the call that used the op
 * raises an {@link InternalException} with it as the cause.
 */
@FunctionalInterface
public interface UserOp {
  /**
   * Combines {@code count} elements of {@code in} into {@code inout}.
   *
   * @param inout the accumulated elements, updated in place (position 0, native order)
   * @param in the elements to combine in (position 0, native order)
   * @param count number of elements
   * @param dtype their type
   */
  void apply(ByteBuffer inout, ByteBuffer in, int count, DType dtype);

  /**
   * An element-wise op: {@code forFloats} combines F32/F64 elements, {@code forIntegers}
   * I32/I64/U64 elements (U64 as raw long bits). Either may be null if that kind is never used
   * (using it then makes the call fail).
   */
  static UserOp elementwise(DoubleBinaryOperator forFloats, LongBinaryOperator forIntegers) {
    return (inout, in, count, dtype) -> {
      switch (dtype) {
        case F32:
          for (int i = 0; i < count; i++) {
            int o = 4 * i;
            inout.putFloat(o, (float) forFloats.applyAsDouble(inout.getFloat(o), in.getFloat(o)));
          }
          break;
        case F64:
          for (int i = 0; i < count; i++) {
            int o = 8 * i;
            inout.putDouble(o, forFloats.applyAsDouble(inout.getDouble(o), in.getDouble(o)));
          }
          break;
        case I32:
          for (int i = 0; i < count; i++) {
            int o = 4 * i;
            inout.putInt(o, (int) forIntegers.applyAsLong(inout.getInt(o), in.getInt(o)));
          }
          break;
        default:
          for (int i = 0; i < count; i++) {
            int o = 8 * i;
            inout.putLong(o, forIntegers.applyAsLong(inout.getLong(o), in.getLong(o)));
          }
      }
    };
  }
}
