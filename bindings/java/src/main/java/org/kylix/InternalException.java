package org.kylix;

/**
 * {@code KYLIX_ERR_INTERNAL}: a bug in the library, a call it does not implement yet, or (raised
 * by the binding) a {@link UserOp} that threw during the call, whose exception is the cause.
 */
public class InternalException extends KylixException {
  private static final long serialVersionUID = 1L;

  /** @param detail the library's message */
  public InternalException(String detail) {
    super(KylixNative.KYLIX_ERR_INTERNAL, detail);
  }

  /**
   * @param detail the message
   * @param cause what caused it
   */
  public InternalException(String detail, Throwable cause) {
    super(KylixNative.KYLIX_ERR_INTERNAL, detail, cause);
  }
}
