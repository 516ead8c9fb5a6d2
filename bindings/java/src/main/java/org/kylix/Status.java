package org.kylix;

/** The status values of the C library ({@code enum kylix_status}); they never change. */
public enum Status {
  OK(KylixNative.KYLIX_OK),
  /** Bad argument: null, negative index, width &lt; 1, too short a buffer... */
  ERR_ARG(KylixNative.KYLIX_ERR_ARG),
  /** Call out of order, handle freed, or comm broken by an earlier fault. */
  ERR_STATE(KylixNative.KYLIX_ERR_STATE),
  /** A peer did not answer within timeout_ms. */
  ERR_TIMEOUT(KylixNative.KYLIX_ERR_TIMEOUT),
  /** A peer failed and no replica could stand in. */
  ERR_PEER(KylixNative.KYLIX_ERR_PEER),
  /** Ranks disagree: different collective, dtype, op, width or count. */
  ERR_MISMATCH(KylixNative.KYLIX_ERR_MISMATCH),
  /** A peer failed the handshake: wrong secret, job or version. */
  ERR_AUTH(KylixNative.KYLIX_ERR_AUTH),
  /** Socket error: cannot bind, connect, resolve. */
  ERR_NET(KylixNative.KYLIX_ERR_NET),
  /** Out of memory. */
  ERR_NOMEM(KylixNative.KYLIX_ERR_NOMEM),
  /** A bug in the library. */
  ERR_INTERNAL(KylixNative.KYLIX_ERR_INTERNAL),
  /** A status value this version of the bindings does not know. */
  UNKNOWN(-1);

  private final int code;

  Status(int code) {
    this.code = code;
  }

  /** The C enum value (-1 for {@link #UNKNOWN}). */
  public int code() {
    return code;
  }

  /** The Status of a C status value; {@link #UNKNOWN} for values this version does not know. */
  public static Status of(int code) {
    for (Status s : values()) {
      if (s.code == code) {
        return s;
      }
    }
    return UNKNOWN;
  }
}
