package org.kylix;

/** {@code KYLIX_ERR_NET}: a socket error: cannot bind, connect or resolve. */
public class NetworkException extends KylixException {
  private static final long serialVersionUID = 1L;

  /** @param detail the library's message */
  public NetworkException(String detail) {
    super(KylixNative.KYLIX_ERR_NET, detail);
  }
}
