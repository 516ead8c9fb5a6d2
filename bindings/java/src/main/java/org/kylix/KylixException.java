package org.kylix;

/**
 * A failed Kylix call: the C status, as a subclass per status, and the library's message
 * ({@code kylix_errmsg}), which names the bad argument or the rank at fault.
 *
 * <p>Unchecked, like {@link IllegalArgumentException}: a collective can fail on any call, and
 * most programs handle that in one place. Catch the subclasses to tell the causes apart:
 * {@link ArgumentException}, {@link StateException}, {@link TimeoutException},
 * {@link PeerException}, {@link MismatchException}, {@link AuthException},
 * {@link NetworkException}, {@link NoMemoryException}, {@link InternalException}.
 */
public class KylixException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int code;
  private final String detail;

  /**
   * @param code the C status value
   * @param detail the library's message (or the binding's, for checks done in Java)
   */
  public KylixException(int code, String detail) {
    this(code, detail, null);
  }

  /**
   * @param code the C status value
   * @param detail the library's message (or the binding's, for checks done in Java)
   * @param cause what caused it, or null
   */
  public KylixException(int code, String detail, Throwable cause) {
    super(format(code, detail), cause);
    this.code = code;
    this.detail = detail == null ? "" : detail;
  }

  private static String format(int code, String detail) {
    String name = Status.of(code).name();
    if (detail == null || detail.isEmpty()) {
      return name;
    }
    return name + ": " + detail;
  }

  /** The status. */
  public Status status() {
    return Status.of(code);
  }

  /** The C status value. */
  public int code() {
    return code;
  }

  /** The library's message for the failure ({@code kylix_errmsg}), without the status name. */
  public String detail() {
    return detail;
  }

  /** The exception of the right subclass for a status (not {@code KYLIX_OK}). */
  public static KylixException of(int code, String detail) {
    switch (code) {
      case KylixNative.KYLIX_ERR_ARG:
        return new ArgumentException(detail, null);
      case KylixNative.KYLIX_ERR_STATE:
        return new StateException(detail);
      case KylixNative.KYLIX_ERR_TIMEOUT:
        return new TimeoutException(detail);
      case KylixNative.KYLIX_ERR_PEER:
        return new PeerException(detail);
      case KylixNative.KYLIX_ERR_MISMATCH:
        return new MismatchException(detail);
      case KylixNative.KYLIX_ERR_AUTH:
        return new AuthException(detail);
      case KylixNative.KYLIX_ERR_NET:
        return new NetworkException(detail);
      case KylixNative.KYLIX_ERR_NOMEM:
        return new NoMemoryException(detail);
      case KylixNative.KYLIX_ERR_INTERNAL:
        return new InternalException(detail);
      default:
        return new KylixException(code, detail);
    }
  }
}
