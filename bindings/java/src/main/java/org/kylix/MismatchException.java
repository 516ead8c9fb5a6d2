package org.kylix;

/** {@code KYLIX_ERR_MISMATCH}: the ranks disagree on the collective, dtype, op, width or count, or a rank rejected its arguments. Raised on every rank of the call; the comm stays usable. */
public class MismatchException extends KylixException {
  private static final long serialVersionUID = 1L;

  /** @param detail the library's message */
  public MismatchException(String detail) {
    super(KylixNative.KYLIX_ERR_MISMATCH, detail);
  }
}
