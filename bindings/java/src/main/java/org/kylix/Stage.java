package org.kylix;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import java.lang.ref.Reference;

/**
 * The pointers of one blocking call. Direct buffers are passed as they are (zero copy); arrays
 * and heap buffers are copied into the comm's native scratch memory before the call (inputs) and
 * out of it after a successful call (outputs): one copy each way, where JNA's own array passing
 * would allocate and copy every array both ways. Used in try-with-resources around the native
 * call: {@link #close()} keeps the arguments reachable until the call is over.
 */
final class Stage implements AutoCloseable {
  static final int IN = 1; // read by the library
  static final int OUT = 2; // written by the library
  static final int INOUT = IN | OUT;

  private static final int ALIGN = 64;
  private static final int MAX = 6;

  private final Scratch scratch;
  private final Vals[] vals = new Vals[MAX];
  private final long[] bytes = new long[MAX];
  private final int[] modes = new int[MAX];
  private final long[] offsets = new long[MAX];
  private final Pointer[] ptrs = new Pointer[MAX];
  private final int[] alias = new int[MAX];
  private int n;
  private Memory mem;

  Stage(Scratch scratch) {
    this.scratch = scratch;
  }

  /**
   * Adds an argument of which the call uses {@code bytes} bytes; returns its slot. A slot whose
   * Vals is already in the stage (send == recv) shares the earlier pointer.
   */
  int add(Vals v, long bytes, int mode) {
    vals[n] = v;
    this.bytes[n] = bytes;
    modes[n] = mode;
    return n++;
  }

  /** Allocates scratch for the staged arguments, copies the inputs in, and fixes the pointers. */
  Stage prepare() {
    long total = 0;
    for (int i = 0; i < n; i++) {
      offsets[i] = -1;
      alias[i] = -1;
      Vals v = vals[i];
      if (v.owner == null || bytes[i] == 0) {
        continue;
      }
      if (v.isDirect()) {
        ptrs[i] = v.address();
        continue;
      }
      int same = sameAs(i);
      if (same >= 0) {
        alias[i] = same;
        modes[same] |= modes[i];
        bytes[same] = Math.max(bytes[same], bytes[i]);
        continue;
      }
      offsets[i] = total;
      total += (bytes[i] + ALIGN - 1) / ALIGN * ALIGN;
    }
    if (total > 0) {
      mem = scratch.get(total);
    }
    for (int i = 0; i < n; i++) {
      if (offsets[i] >= 0) {
        ptrs[i] = mem.share(offsets[i]);
        if ((modes[i] & IN) != 0) {
          vals[i].copyTo(ptrs[i], bytes[i]);
        }
      }
    }
    for (int i = 0; i < n; i++) {
      if (alias[i] >= 0) {
        ptrs[i] = ptrs[alias[i]];
      }
    }
    return this;
  }

  /** The earlier slot staging the same heap object as slot i, or -1. */
  private int sameAs(int i) {
    for (int j = 0; j < i; j++) {
      if (offsets[j] >= 0 && sameMemory(vals[j], vals[i])) {
        return j;
      }
    }
    return -1;
  }

  private static boolean sameMemory(Vals a, Vals b) {
    return a.owner == b.owner
        || (a.owner.hasArray() && b.owner.hasArray() && a.owner.array() == b.owner.array()
            && a.owner.arrayOffset() + a.owner.position()
                == b.owner.arrayOffset() + b.owner.position());
  }

  Pointer ptr(int slot) {
    return ptrs[slot];
  }

  /** After a successful call: copies the staged outputs back into their arrays or buffers. */
  void finish() {
    for (int i = 0; i < n; i++) {
      if (offsets[i] >= 0 && (modes[i] & OUT) != 0) {
        vals[i].copyFrom(ptrs[i], bytes[i]);
      }
    }
  }

  /**
   * Keeps every staged argument's buffer reachable up to here: the GC must not free a direct
   * buffer while the library reads or writes it.
   */
  @Override
  public void close() {
    Reference.reachabilityFence(vals);
  }

  // ---- the lean path ----------------------------------------------------------------------
  //
  // A blocking call on Java arrays (no direct buffer, so no byte order, read-only or position to
  // look at) needs none of the above: the callers check the arguments themselves (null, length,
  // op) and, when everything is as expected, stage the arrays with these: no Vals, no Stage, no
  // wrapping buffers, nothing allocated per call. The interpreter and the JIT see a handful of
  // small methods instead of a few dozen, which on a 1-2 us collective is most of the cost while
  // the JVM warms up. Anything else takes the general path above, which reports what is wrong.

  /** Bytes rounded up to the staging alignment. */
  static long aligned(long bytes) {
    return (bytes + ALIGN - 1) / ALIGN * ALIGN;
  }

  /** Copies the first n elements of a primitive array (float/double/int/long/byte[]) to dst. */
  static void put(Pointer dst, Object a, int n) {
    if (a instanceof float[]) {
      dst.write(0, (float[]) a, 0, n);
    } else if (a instanceof double[]) {
      dst.write(0, (double[]) a, 0, n);
    } else if (a instanceof int[]) {
      dst.write(0, (int[]) a, 0, n);
    } else if (a instanceof long[]) {
      dst.write(0, (long[]) a, 0, n);
    } else {
      dst.write(0, (byte[]) a, 0, n);
    }
  }

  /** Copies n elements from src into the start of a primitive array (as {@link #put}). */
  static void get(Pointer src, Object a, int n) {
    if (a instanceof float[]) {
      src.read(0, (float[]) a, 0, n);
    } else if (a instanceof double[]) {
      src.read(0, (double[]) a, 0, n);
    } else if (a instanceof int[]) {
      src.read(0, (int[]) a, 0, n);
    } else if (a instanceof long[]) {
      src.read(0, (long[]) a, 0, n);
    } else {
      src.read(0, (byte[]) a, 0, n);
    }
  }

  /** A comm's grow-only native scratch memory (one comm is used by one thread at a time). */
  static final class Scratch {
    private Memory mem;
    private Pointer at; // mem.share(atOffset), kept for the lean path's second argument
    private long atOffset = -1;

    Memory get(long size) {
      if (mem == null || mem.size() < size) {
        if (mem != null) {
          mem.close();
        }
        long cap = Math.max(size, mem == null ? 0 : Math.min(2 * mem.size(), size + (64 << 20)));
        mem = new Memory(cap);
        at = null;
        atOffset = -1;
      }
      return mem;
    }

    /**
     * After {@link #get}: the scratch memory from {@code offset} on, the same Pointer object as
     * long as the memory and the offset stay the same (no allocation per call).
     */
    Pointer at(long offset) {
      if (offset != atOffset) {
        at = mem.share(offset);
        atOffset = offset;
      }
      return at;
    }

    void release() {
      if (mem != null) {
        mem.close();
        mem = null;
        at = null;
        atOffset = -1;
      }
    }
  }
}
