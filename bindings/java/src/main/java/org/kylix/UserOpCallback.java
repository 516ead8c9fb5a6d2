package org.kylix;

import com.sun.jna.Pointer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicReference;

/** The JNA callback behind a {@link UserOp}: kept strongly reachable for the process's life. */
final class UserOpCallback implements KylixNative.kylix_user_fn {
  private final UserOp fn;
  private final AtomicReference<Throwable> failure = new AtomicReference<>();

  UserOpCallback(UserOp fn) {
    this.fn = fn;
  }

  @Override
  public void invoke(Pointer inout, Pointer in, long count, int dtype, Pointer ctx) {
    try {
      DType d = DType.of(dtype);
      if (d == null) {
        throw new IllegalStateException("unknown dtype " + dtype);
      }
      long bytes = count * d.size();
      ByteBuffer a = inout.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder());
      ByteBuffer b = in.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder());
      fn.apply(a, b, (int) count, d);
    } catch (Throwable t) { // nothing may unwind into the C library
      failure.compareAndSet(null, t);
    }
  }

  /** The first exception thrown since the last call, or null. */
  Throwable takeFailure() {
    return failure.getAndSet(null);
  }
}
