package io.multiworld;

/** {@link Status#CANCELLED}: the operation's world was closed (destroyed) before it finished. */
public class OperationCancelledException extends MultiWorldException {
  private static final long serialVersionUID = 1L;

  public OperationCancelledException(String detail) {
    super(Status.CANCELLED.code(), detail);
  }
}
