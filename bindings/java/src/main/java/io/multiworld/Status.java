package io.multiworld;

import io.multiworld.swig.mw_status_t;

/** The library's status codes ({@code mw_status_t}). */
public enum Status {
  OK(mw_status_t.MW_OK),
  IN_PROGRESS(mw_status_t.MW_IN_PROGRESS),
  INVALID_ARGUMENT(mw_status_t.MW_ERR_INVALID_ARGUMENT),
  NOT_FOUND(mw_status_t.MW_ERR_NOT_FOUND),
  ALREADY_EXISTS(mw_status_t.MW_ERR_ALREADY_EXISTS),
  TIMEOUT(mw_status_t.MW_ERR_TIMEOUT),
  WORLD_BROKEN(mw_status_t.MW_ERR_WORLD_BROKEN),
  STORE(mw_status_t.MW_ERR_STORE),
  BACKEND(mw_status_t.MW_ERR_BACKEND),
  UNSUPPORTED(mw_status_t.MW_ERR_UNSUPPORTED),
  CANCELLED(mw_status_t.MW_ERR_CANCELLED),
  INTERNAL(mw_status_t.MW_ERR_INTERNAL),
  NO_MEMORY(mw_status_t.MW_ERR_NO_MEMORY),
  /** A code this version of the binding does not know (a newer library). */
  UNKNOWN(Integer.MIN_VALUE);

  private final int code;

  Status(int code) {
    this.code = code;
  }

  /** The C value. */
  public int code() {
    return code;
  }

  /** The constant for a C value; {@link #UNKNOWN} for one this binding does not know. */
  public static Status fromCode(int code) {
    for (Status s : values()) {
      if (s.code == code && s != UNKNOWN) return s;
    }
    return UNKNOWN;
  }
}
