package io.multiworld;

import io.multiworld.swig.mw_redop_t;

/**
 * Reduction operations ({@code mw_redop_t}). {@link #AVG} is the sum divided by the world size;
 * on integer types the division truncates toward zero and the sum wraps modulo 2^bits.
 */
public enum ReduceOp {
  SUM(mw_redop_t.MW_SUM),
  PROD(mw_redop_t.MW_PROD),
  MIN(mw_redop_t.MW_MIN),
  MAX(mw_redop_t.MW_MAX),
  AVG(mw_redop_t.MW_AVG);

  private final int code;

  ReduceOp(int code) {
    this.code = code;
  }

  /** The C value. */
  public int code() {
    return code;
  }
}
