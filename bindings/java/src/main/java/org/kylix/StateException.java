package org.kylix;

/** {@code KYLIX_ERR_STATE}: a call out of order, on a closed handle, or on a comm broken by an earlier timeout or peer failure. */
public class StateException extends KylixException {
  private static final long serialVersionUID = 1L;

  /** @param detail the library's message */
  public StateException(String detail) {
    super(KylixNative.KYLIX_ERR_STATE, detail);
  }
}
