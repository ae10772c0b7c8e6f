package io.multiworld;

/** {@link Status#STORE}: Redis unreachable, an authentication failure or bad data in it. */
public class StoreException extends MultiWorldException {
  private static final long serialVersionUID = 1L;

  public StoreException(String detail) {
    super(Status.STORE.code(), detail);
  }
}
