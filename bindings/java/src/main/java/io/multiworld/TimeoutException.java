package io.multiworld;

/** {@link Status#TIMEOUT}: a world did not form within its timeout, or a wait ran out. */
public class TimeoutException extends MultiWorldException {
  private static final long serialVersionUID = 1L;

  public TimeoutException(String detail) {
    super(Status.TIMEOUT.code(), detail);
  }
}
