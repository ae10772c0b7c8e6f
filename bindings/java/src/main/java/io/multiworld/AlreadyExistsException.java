package io.multiworld;

/** {@link Status#ALREADY_EXISTS}: e.g. a rank of a world claimed by another live process. */
public class AlreadyExistsException extends MultiWorldException {
  private static final long serialVersionUID = 1L;

  public AlreadyExistsException(String detail) {
    super(Status.ALREADY_EXISTS.code(), detail);
  }
}
