package org.kylix;

/**
 * A span of the caller's own work on the timeline, from {@link Comm#span(String)} to {@link
 * #close()}: use it in try-with-resources. Closing twice ends it once.
 */
public final class Span implements AutoCloseable {
  private final Comm comm;
  private final String name;
  private boolean closed;

  Span(Comm comm, String name) {
    this.comm = comm;
    this.name = name;
  }

  /** The span's name. */
  public String name() {
    return name;
  }

  /**
   * Ends the span ({@code KYLIX_MARK_END}).
   *
   * @throws StateException when an inner span of the same comm is still open
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    comm.mark(name, KylixNative.KYLIX_MARK_END);
  }
}
