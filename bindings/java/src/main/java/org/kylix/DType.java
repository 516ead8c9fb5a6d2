package org.kylix;

/** Element types of reduced values ({@code enum kylix_dtype}). */
public enum DType {
  /** 32-bit IEEE float ({@code float}, {@code FloatBuffer}). */
  F32(KylixNative.KYLIX_F32, 4),
  /** 64-bit IEEE float ({@code double}, {@code DoubleBuffer}). */
  F64(KylixNative.KYLIX_F64, 8),
  /** 32-bit signed integer ({@code int}, {@code IntBuffer}). */
  I32(KylixNative.KYLIX_I32, 4),
  /** 64-bit signed integer ({@code long}, {@code LongBuffer}). */
  I64(KylixNative.KYLIX_I64, 8),
  /** 64-bit unsigned integer, carried in Java {@code long}s (see {@link Long#toUnsignedString}). */
  U64(KylixNative.KYLIX_U64, 8);

  private final int code;
  private final int size;

  DType(int code, int size) {
    this.code = code;
    this.size = size;
  }

  /** The C enum value. */
  public int code() {
    return code;
  }

  /** Bytes per element. */
  public int size() {
    return size;
  }

  /** Whether this is an integer type (the bitwise ops need one). */
  public boolean isInteger() {
    return this != F32 && this != F64;
  }

  /** The DType of a C enum value, or null. */
  public static DType of(int code) {
    for (DType d : values()) {
      if (d.code == code) {
        return d;
      }
    }
    return null;
  }
}
