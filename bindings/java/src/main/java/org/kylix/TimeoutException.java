package org.kylix;

/** {@code KYLIX_ERR_TIMEOUT}: a peer did not answer within timeout_ms; the message names it. The comm is broken afterwards. */
public class TimeoutException extends KylixException {
  private static final long serialVersionUID = 1L;

  /** @param detail the library's message */
  public TimeoutException(String detail) {
    super(KylixNative.KYLIX_ERR_TIMEOUT, detail);
  }
}
