package org.kylix;

/**
 * {@code KYLIX_ERR_ARG}: a bad argument, named in the message. Raised for the library's own
 * checks and for the binding's (null or too short arrays and buffers, checked before the call).
 *
 * <p>On a collective the rank still takes its turn, so its peers fail the same call with a
 * {@link MismatchException} naming this rank, and the comm stays usable on every rank.
 */
public class ArgumentException extends KylixException {
  private static final long serialVersionUID = 1L;

  private final String argument;

  /**
   * @param detail the message
   * @param argument the Java parameter at fault when the binding found it, else null
   */
  public ArgumentException(String detail, String argument) {
    super(KylixNative.KYLIX_ERR_ARG, detail);
    this.argument = argument;
  }

  /**
   * The name of the Java parameter at fault when the binding's own check found it (for example
   * {@code "inVals"}); null when the library found it (its message names the C argument).
   */
  public String argument() {
    return argument;
  }
}
