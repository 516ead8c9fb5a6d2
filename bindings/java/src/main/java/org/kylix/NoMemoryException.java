package org.kylix;

/** {@code KYLIX_ERR_NOMEM}: the library ran out of memory (or of user op ids). */
public class NoMemoryException extends KylixException {
  private static final long serialVersionUID = 1L;

  /** @param detail the library's message */
  public NoMemoryException(String detail) {
    super(KylixNative.KYLIX_ERR_NOMEM, detail);
  }
}
