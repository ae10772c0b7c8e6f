package io.multiworld;

/**
 * A failure reported by the library: carries the {@link Status} (and the raw C code) and the
 * library's detail message ({@code mw_last_error()} or the request's reason).
 *
 * <p>Unchecked. Futures returned by {@link World}'s operations complete exceptionally with one of
 * these (so {@code future.get()} throws an {@code ExecutionException} whose cause is it, and
 * {@code future.join()} a {@code CompletionException}). Subclasses exist for the statuses a
 * program typically handles: {@link WorldBrokenException}, {@link TimeoutException},
 * {@link StoreException}, {@link OperationCancelledException}, {@link AlreadyExistsException},
 * {@link InvalidArgumentException}.
 */
public class MultiWorldException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int code;
  private final String detail;

  public MultiWorldException(int code, String detail) {
    super(message(code, detail));
    this.code = code;
    this.detail = detail == null ? "" : detail;
  }

  /** The library's messages already start with the status name (MW_ERR_...); others get it. */
  private static String message(int code, String detail) {
    if (detail != null && detail.startsWith("MW_")) return detail;
    String name = Status.fromCode(code) == Status.UNKNOWN ? "status " + code : "MW_ERR_" + Status.fromCode(code);
    return detail == null || detail.isEmpty() ? name : name + ": " + detail;
  }

  /** The status; {@link Status#UNKNOWN} for a code this binding does not know. */
  public Status status() {
    return Status.fromCode(code);
  }

  /** The C status code ({@code mw_status_t}). */
  public int code() {
    return code;
  }

  /** The library's message, without the status prefix. */
  public String detail() {
    return detail;
  }

  /**
   * The exception for a status other than {@link Status#OK}: the matching subclass, else this
   * class. {@link Status#WORLD_BROKEN} gives a {@link WorldBrokenException} that knows no world.
   */
  public static MultiWorldException of(int code, String detail) {
    switch (Status.fromCode(code)) {
      case TIMEOUT:
        return new TimeoutException(detail);
      case WORLD_BROKEN:
        return new WorldBrokenException(null, null, -1, detail);
      case STORE:
        return new StoreException(detail);
      case CANCELLED:
        return new OperationCancelledException(detail);
      case ALREADY_EXISTS:
        return new AlreadyExistsException(detail);
      case INVALID_ARGUMENT:
        return new InvalidArgumentException(detail);
      default:
        return new MultiWorldException(code, detail);
    }
  }
}
