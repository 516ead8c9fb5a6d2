package org.kylix;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;

/**
 * One array or buffer argument of a call, as the binding sees it: its dtype, how many elements it
 * offers from its position, and whether the library can use its memory directly (a direct
 * buffer) or the binding must stage it through native scratch memory (an array or a heap
 * buffer). Arrays are wrapped as heap buffers so both take the same path. The caller's buffer
 * position and limit are never changed.
 */
final class Vals {
  final String name; // the Java parameter, for messages
  final Buffer owner; // the caller's object (kept reachable while the library uses it); null
  final Buffer view; // a duplicate positioned at the first element; null if owner is null
  final DType dtype;
  final long count; // elements available from the position
  final int unit; // bytes per position step: 1 for ByteBuffer, else dtype.size()
  ArgumentException problem; // found while wrapping (wrong buffer type or dtype); null if none

  private Vals(String name, Buffer owner, DType dtype, int unit) {
    this.name = name;
    this.owner = owner;
    this.dtype = dtype;
    this.unit = unit;
    if (owner == null || unit < 1) {
      this.view = null;
      this.count = 0;
    } else {
      this.view = dup(owner);
      this.count = (long) owner.remaining() * unit / dtype.size();
    }
  }

  static Vals of(String name, float[] a) {
    return new Vals(name, a == null ? null : FloatBuffer.wrap(a), DType.F32, 4);
  }

  static Vals of(String name, double[] a) {
    return new Vals(name, a == null ? null : DoubleBuffer.wrap(a), DType.F64, 8);
  }

  static Vals of(String name, int[] a) {
    return new Vals(name, a == null ? null : IntBuffer.wrap(a), DType.I32, 4);
  }

  static Vals of(String name, long[] a) {
    return new Vals(name, a == null ? null : LongBuffer.wrap(a), DType.I64, 8);
  }

  static Vals of(String name, FloatBuffer b) {
    return new Vals(name, b, DType.F32, 4);
  }

  static Vals of(String name, DoubleBuffer b) {
    return new Vals(name, b, DType.F64, 8);
  }

  static Vals of(String name, IntBuffer b) {
    return new Vals(name, b, DType.I32, 4);
  }

  static Vals of(String name, LongBuffer b) {
    return new Vals(name, b, DType.I64, 8);
  }

  /**
   * Any buffer with an explicit dtype: a ByteBuffer (its remaining bytes / dtype size elements),
   * or a typed buffer whose element size equals the dtype's. A mismatch is recorded in {@link
   * #problem} (the caller rejects the call, so the rank still takes its turn).
   */
  static Vals of(String name, Buffer b, DType d) {
    String bad = null;
    int es = 1;
    if (d == null) {
      bad = "dtype is null";
      d = DType.F64;
    }
    if (b != null && !(b instanceof ByteBuffer)) {
      es = elementSize(b);
      if (es < 0) {
        bad = name + ": unsupported buffer type " + b.getClass().getName()
            + " (use Byte/Float/Double/Int/LongBuffer)";
      } else if (bad == null && es != d.size()) {
        bad = name + ": a " + b.getClass().getSimpleName() + " holds " + es
            + "-byte elements, dtype " + d + " needs " + d.size();
      }
    }
    if (bad != null) {
      Vals v = new Vals(name, null, d, 1);
      v.problem = new ArgumentException(bad, d == null ? "dtype" : name);
      return v;
    }
    return new Vals(name, b, d, es);
  }

  /** Bytes of a ByteBuffer or any typed buffer/array, for bcast (dtype is irrelevant there). */
  static Vals bytes(String name, Buffer b) {
    int es = b == null ? 1 : elementSize(b);
    if (es < 0) {
      Vals v = new Vals(name, null, DType.I64, 1);
      v.problem = new ArgumentException(name + ": unsupported buffer type "
          + b.getClass().getName() + " (use Byte/Float/Double/Int/LongBuffer)", name);
      return v;
    }
    return new Vals(name, b, es == 1 ? DType.I64 : dtypeOfSize(b), es);
  }

  private static DType dtypeOfSize(Buffer b) {
    if (b instanceof FloatBuffer) {
      return DType.F32;
    }
    if (b instanceof DoubleBuffer) {
      return DType.F64;
    }
    if (b instanceof IntBuffer) {
      return DType.I32;
    }
    return DType.I64;
  }

  /** Bytes this argument offers from its position. */
  long byteCount() {
    return owner == null ? 0 : (long) owner.remaining() * unit;
  }

  boolean isDirect() {
    return owner != null && owner.isDirect();
  }

  boolean isReadOnly() {
    return owner != null && owner.isReadOnly();
  }

  /** A direct typed buffer (or ByteBuffer) whose byte order is not the platform's. */
  boolean wrongOrder() {
    return owner != null && owner.isDirect() && order(owner) != ByteOrder.nativeOrder();
  }

  /** The address of the first element of a direct buffer. */
  Pointer address() {
    if (owner == null || owner.remaining() == 0) {
      return null;
    }
    Pointer base = Native.getDirectBufferPointer(owner);
    return base.share((long) owner.position() * unit);
  }

  /**
   * Copies the first {@code bytes} bytes of this heap argument to native memory at {@code dst}:
   * one JNI array-region copy for array-backed buffers, a buffer-to-buffer copy otherwise.
   */
  void copyTo(Pointer dst, long bytes) {
    int n = (int) (bytes / unit);
    if (view.hasArray()) {
      int off = view.arrayOffset() + view.position();
      Object a = view.array();
      if (a instanceof float[]) {
        dst.write(0, (float[]) a, off, n);
      } else if (a instanceof double[]) {
        dst.write(0, (double[]) a, off, n);
      } else if (a instanceof int[]) {
        dst.write(0, (int[]) a, off, n);
      } else if (a instanceof long[]) {
        dst.write(0, (long[]) a, off, n);
      } else {
        dst.write(0, (byte[]) a, off, n);
      }
      return;
    }
    ByteBuffer to = dst.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder());
    Buffer src = dup(view).limit(view.position() + n);
    if (src instanceof ByteBuffer) {
      to.put((ByteBuffer) src);
    } else if (src instanceof FloatBuffer) {
      to.asFloatBuffer().put((FloatBuffer) src);
    } else if (src instanceof DoubleBuffer) {
      to.asDoubleBuffer().put((DoubleBuffer) src);
    } else if (src instanceof IntBuffer) {
      to.asIntBuffer().put((IntBuffer) src);
    } else {
      to.asLongBuffer().put((LongBuffer) src);
    }
  }

  /** Copies {@code bytes} bytes from native memory at {@code src} into this heap argument. */
  void copyFrom(Pointer src, long bytes) {
    int n = (int) (bytes / unit);
    if (view.hasArray()) {
      int off = view.arrayOffset() + view.position();
      Object a = view.array();
      if (a instanceof float[]) {
        src.read(0, (float[]) a, off, n);
      } else if (a instanceof double[]) {
        src.read(0, (double[]) a, off, n);
      } else if (a instanceof int[]) {
        src.read(0, (int[]) a, off, n);
      } else if (a instanceof long[]) {
        src.read(0, (long[]) a, off, n);
      } else {
        src.read(0, (byte[]) a, off, n);
      }
      return;
    }
    ByteBuffer from = src.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder());
    Buffer dst = dup(view).limit(view.position() + n);
    if (dst instanceof ByteBuffer) {
      ((ByteBuffer) dst).put(from);
    } else if (dst instanceof FloatBuffer) {
      ((FloatBuffer) dst).put(from.asFloatBuffer());
    } else if (dst instanceof DoubleBuffer) {
      ((DoubleBuffer) dst).put(from.asDoubleBuffer());
    } else if (dst instanceof IntBuffer) {
      ((IntBuffer) dst).put(from.asIntBuffer());
    } else {
      ((LongBuffer) dst).put(from.asLongBuffer());
    }
  }

  static int elementSize(Buffer b) {
    if (b instanceof ByteBuffer) {
      return 1;
    }
    if (b instanceof FloatBuffer || b instanceof IntBuffer) {
      return 4;
    }
    if (b instanceof DoubleBuffer || b instanceof LongBuffer) {
      return 8;
    }
    return -1;
  }

  static ByteOrder order(Buffer b) {
    if (b instanceof ByteBuffer) {
      return ((ByteBuffer) b).order();
    }
    if (b instanceof FloatBuffer) {
      return ((FloatBuffer) b).order();
    }
    if (b instanceof DoubleBuffer) {
      return ((DoubleBuffer) b).order();
    }
    if (b instanceof IntBuffer) {
      return ((IntBuffer) b).order();
    }
    if (b instanceof LongBuffer) {
      return ((LongBuffer) b).order();
    }
    return ByteOrder.nativeOrder();
  }

  private static Buffer dup(Buffer b) {
    if (b instanceof ByteBuffer) {
      return ((ByteBuffer) b).duplicate().order(((ByteBuffer) b).order());
    }
    if (b instanceof FloatBuffer) {
      return ((FloatBuffer) b).duplicate();
    }
    if (b instanceof DoubleBuffer) {
      return ((DoubleBuffer) b).duplicate();
    }
    if (b instanceof IntBuffer) {
      return ((IntBuffer) b).duplicate();
    }
    if (b instanceof LongBuffer) {
      return ((LongBuffer) b).duplicate();
    }
    throw new ArgumentException("unsupported buffer type " + b.getClass().getName()
        + " (use Byte/Float/Double/Int/LongBuffer)", null);
  }
}
