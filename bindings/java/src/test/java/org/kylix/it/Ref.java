package org.kylix.it;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.util.Random;
import org.kylix.DType;
import org.kylix.Op;

/**
 * Reference data and results, independent of the library: every rank regenerates every rank's
 * indices and values from the seed and folds them itself, in (rank, position) order. Values are
 * small integers (or powers of two for PROD), so float results are exact whatever the order the
 * library combines them in, and comparisons are bitwise.
 */
final class Ref {
  private Ref() {}

  /** How a vector is handed to the binding. */
  enum Kind { ARRAY, DIRECT, HEAP_BUFFER }

  static Random rng(long seed, long... parts) {
    long h = seed * 0x9E3779B97F4A7C15L;
    for (long p : parts) {
      h = (h ^ p) * 0xBF58476D1CE4E5B9L;
      h ^= h >>> 31;
    }
    return new Random(h);
  }

  /** Out indices of a rank for index case c: skewed (many repeats), some beyond 2^32. */
  static long[] outIdx(long seed, int c, int rank, long nFeat) {
    Random r = rng(seed, 1, c, rank);
    int n = 100 + r.nextInt(200);
    long[] idx = new long[n];
    for (int k = 0; k < n; k++) {
      double u = r.nextDouble();
      idx[k] = (long) (nFeat * u * u);
      if (r.nextInt(20) == 0) {
        idx[k] += 1L << 40; // int64 indices
      }
    }
    return idx;
  }

  /** In indices of a rank: its own, others', absent ones and repeats. */
  static long[] inIdx(long seed, int c, int rank, int size, long nFeat) {
    Random r = rng(seed, 2, c, rank);
    int n = 80 + r.nextInt(150);
    long[] idx = new long[n];
    for (int k = 0; k < n; k++) {
      int kind = r.nextInt(10);
      if (kind < 6) { // someone's out index
        long[] o = outIdx(seed, c, r.nextInt(size), nFeat);
        idx[k] = o[r.nextInt(o.length)];
      } else if (kind < 8) {
        idx[k] = (long) (nFeat * r.nextDouble());
      } else if (kind < 9) {
        idx[k] = nFeat * 3 + r.nextInt(1000); // nobody contributes: the identity
      } else {
        idx[k] = k > 0 ? idx[r.nextInt(k)] : 0; // a repeat
      }
    }
    return idx;
  }

  /** Raw values (integers) of a rank for a reduction; floats use them as numbers. */
  static long[] vals(long seed, int rank, DType d, Op op, int width, int n, int salt) {
    Random r = rng(seed, 3, rank, d.ordinal(), op.id(), width, salt);
    long[] v = new long[n * width];
    for (int i = 0; i < v.length; i++) {
      if (op.equals(Op.PROD)) {
        long[] choices = {1, 2, -1, 1, -2};
        v[i] = choices[r.nextInt(choices.length)];
      } else if (op.equals(Op.BAND) || op.equals(Op.BOR) || op.equals(Op.BXOR)
          || (d == DType.U64 || d == DType.I64) && r.nextInt(3) == 0) {
        v[i] = d == DType.I32 ? r.nextInt() : r.nextLong();
        if (!d.isInteger()) {
          v[i] = r.nextInt(100) - 50;
        }
      } else {
        v[i] = r.nextInt(100) - 50;
      }
    }
    return v;
  }

  static long identity(DType d, Op op) {
    if (op.equals(Op.SUM) || op.equals(Op.RSUM) || op.equals(Op.BOR) || op.equals(Op.BXOR)) {
      return canon(d, 0);
    }
    if (op.equals(Op.PROD)) {
      return canon(d, 1);
    }
    if (op.equals(Op.BAND)) {
      return d == DType.I32 ? -1L : -1L;
    }
    boolean min = op.equals(Op.MIN);
    switch (d) {
      case F32:
      case F64:
        return Double.doubleToLongBits(min ? Double.POSITIVE_INFINITY : Double.NEGATIVE_INFINITY);
      case I32:
        return min ? Integer.MAX_VALUE : Integer.MIN_VALUE;
      case I64:
        return min ? Long.MAX_VALUE : Long.MIN_VALUE;
      default: // U64
        return min ? -1L : 0L;
    }
  }

  /**
   * The canonical form of a value for comparisons: the long value for integer dtypes (I32
   * sign-extended), the bits of the double for floats (an F32 widened).
   */
  static long canon(DType d, long raw) {
    switch (d) {
      case F32:
        return Double.doubleToLongBits((double) (float) raw);
      case F64:
        return Double.doubleToLongBits((double) raw);
      case I32:
        return (int) raw;
      default:
        return raw;
    }
  }

  /** acc (+) x on canonical values. */
  static long fold(DType d, Op op, long acc, long x) {
    if (!d.isInteger()) {
      double a = Double.longBitsToDouble(acc), b = Double.longBitsToDouble(x), r;
      if (op.equals(Op.SUM) || op.equals(Op.RSUM)) { // small integers: exact in any order
        r = a + b;
      } else if (op.equals(Op.PROD)) {
        r = a * b;
      } else if (op.equals(Op.MIN)) {
        r = Math.min(a, b);
      } else {
        r = Math.max(a, b);
      }
      if (d == DType.F32) {
        r = (float) r;
      }
      return Double.doubleToLongBits(r);
    }
    long r;
    if (op.equals(Op.SUM)) {
      r = acc + x;
    } else if (op.equals(Op.PROD)) {
      r = acc * x;
    } else if (op.equals(Op.MIN)) {
      r = d == DType.U64 ? (Long.compareUnsigned(acc, x) <= 0 ? acc : x) : Math.min(acc, x);
    } else if (op.equals(Op.MAX)) {
      r = d == DType.U64 ? (Long.compareUnsigned(acc, x) >= 0 ? acc : x) : Math.max(acc, x);
    } else if (op.equals(Op.BAND)) {
      r = acc & x;
    } else if (op.equals(Op.BOR)) {
      r = acc | x;
    } else {
      r = acc ^ x;
    }
    return d == DType.I32 ? (int) r : r;
  }

  /** Expected sparse result: canonical values, nIn*width. first: the "first contribution" op. */
  static long[] expect(DType d, Op op, int width, long[][] outIdx, long[][] vals, long[] inIdx,
      boolean first) {
    long[] res = new long[inIdx.length * width];
    java.util.Map<Long, long[]> acc = new java.util.HashMap<>();
    for (int r = 0; r < outIdx.length; r++) {
      for (int k = 0; k < outIdx[r].length; k++) {
        long[] a = acc.get(outIdx[r][k]);
        if (a == null) {
          a = new long[width];
          for (int w = 0; w < width; w++) {
            a[w] = first ? canon(d, vals[r][k * width + w]) : identity(d, op);
          }
          acc.put(outIdx[r][k], a);
          if (first) {
            continue;
          }
        } else if (first) {
          continue;
        }
        for (int w = 0; w < width; w++) {
          a[w] = fold(d, op, a[w], canon(d, vals[r][k * width + w]));
        }
      }
    }
    for (int j = 0; j < inIdx.length; j++) {
      long[] a = acc.get(inIdx[j]);
      for (int w = 0; w < width; w++) {
        res[j * width + w] = a != null ? a[w] : first ? 0L : identity(d, op);
      }
    }
    return res;
  }

  /** Dense: elementwise fold over ranks. */
  static long[] expectDense(DType d, Op op, long[][] vals) {
    long[] res = new long[vals[0].length];
    for (int i = 0; i < res.length; i++) {
      long a = identity(d, op);
      for (long[] v : vals) {
        a = fold(d, op, a, canon(d, v[i]));
      }
      res[i] = a;
    }
    return res;
  }

  // ---- conversions between raw values and what the binding takes ----------------------------

  static ByteBuffer direct(int bytes) {
    return ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
  }

  /** A vector of n elements of d holding raw (or zeros if raw is null), in the given kind. */
  static Object make(DType d, long[] raw, int n, Kind k) {
    Object arr;
    switch (d) {
      case F32: {
        float[] a = new float[n];
        for (int i = 0; raw != null && i < n; i++) {
          a[i] = raw[i];
        }
        arr = a;
        break;
      }
      case F64: {
        double[] a = new double[n];
        for (int i = 0; raw != null && i < n; i++) {
          a[i] = raw[i];
        }
        arr = a;
        break;
      }
      case I32: {
        int[] a = new int[n];
        for (int i = 0; raw != null && i < n; i++) {
          a[i] = (int) raw[i];
        }
        arr = a;
        break;
      }
      default: {
        long[] a = new long[n];
        for (int i = 0; raw != null && i < n; i++) {
          a[i] = raw[i];
        }
        arr = a;
      }
    }
    if (k == Kind.ARRAY && d != DType.U64) {
      return arr;
    }
    if (k == Kind.HEAP_BUFFER || k == Kind.ARRAY) {
      return wrap(arr);
    }
    ByteBuffer bb = direct(n * d.size());
    if (arr instanceof float[]) {
      return bb.asFloatBuffer().put((float[]) arr).flip();
    }
    if (arr instanceof double[]) {
      return bb.asDoubleBuffer().put((double[]) arr).flip();
    }
    if (arr instanceof int[]) {
      return bb.asIntBuffer().put((int[]) arr).flip();
    }
    return bb.asLongBuffer().put((long[]) arr).flip();
  }

  static Buffer wrap(Object arr) {
    if (arr instanceof float[]) {
      return FloatBuffer.wrap((float[]) arr);
    }
    if (arr instanceof double[]) {
      return DoubleBuffer.wrap((double[]) arr);
    }
    if (arr instanceof int[]) {
      return IntBuffer.wrap((int[]) arr);
    }
    return LongBuffer.wrap((long[]) arr);
  }

  /** The canonical values of the first n elements of a vector made by make(). */
  static long[] read(DType d, Object v, int n) {
    long[] c = new long[n];
    for (int i = 0; i < n; i++) {
      long x;
      if (v instanceof float[]) {
        x = Double.doubleToLongBits(((float[]) v)[i]);
      } else if (v instanceof double[]) {
        x = Double.doubleToLongBits(((double[]) v)[i]);
      } else if (v instanceof int[]) {
        x = ((int[]) v)[i];
      } else if (v instanceof long[]) {
        x = ((long[]) v)[i];
      } else if (v instanceof FloatBuffer) {
        x = Double.doubleToLongBits(((FloatBuffer) v).get(i));
      } else if (v instanceof DoubleBuffer) {
        x = Double.doubleToLongBits(((DoubleBuffer) v).get(i));
      } else if (v instanceof IntBuffer) {
        x = ((IntBuffer) v).get(i);
      } else {
        x = ((LongBuffer) v).get(i);
      }
      c[i] = x;
    }
    return c;
  }

  /** Index of the first difference, or -1. */
  static int diff(long[] a, long[] b) {
    if (a.length != b.length) {
      return Math.min(a.length, b.length);
    }
    for (int i = 0; i < a.length; i++) {
      if (a[i] != b[i]) {
        return i;
      }
    }
    return -1;
  }

  static String show(DType d, long c) {
    if (!d.isInteger()) {
      return Double.toString(Double.longBitsToDouble(c));
    }
    return d == DType.U64 ? Long.toUnsignedString(c) : Long.toString(c);
  }
}
