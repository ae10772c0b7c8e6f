package io.multiworld;

/** {@link Status#INVALID_ARGUMENT}: rejected by the library, e.g. a bad config value, a peer rank out of range, or a recv whose size differs from the matching send. */
public class InvalidArgumentException extends MultiWorldException {
  private static final long serialVersionUID = 1L;

  public InvalidArgumentException(String detail) {
    super(Status.INVALID_ARGUMENT.code(), detail);
  }
}
