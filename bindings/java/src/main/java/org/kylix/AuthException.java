package org.kylix;

/** {@code KYLIX_ERR_AUTH}: a peer failed the handshake (wrong secret, job or version). */
public class AuthException extends KylixException {
  private static final long serialVersionUID = 1L;

  /** @param detail the library's message */
  public AuthException(String detail) {
    super(KylixNative.KYLIX_ERR_AUTH, detail);
  }
}
