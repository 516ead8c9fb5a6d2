package org.kylix;

/** {@code KYLIX_ERR_PEER}: a peer failed (its connection closed); the message names it. The comm is broken afterwards: see {@link Comm#failedRanks()} and {@link Comm#shrink()}. */
public class PeerException extends KylixException {
  private static final long serialVersionUID = 1L;

  /** @param detail the library's message */
  public PeerException(String detail) {
    super(KylixNative.KYLIX_ERR_PEER, detail);
  }
}
