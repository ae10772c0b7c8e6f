package io.multiworld;

import io.multiworld.swig.mw_dtype_t;

/**
 * Element types ({@code mw_dtype_t}). Counts passed to {@link World}'s operations are in elements
 * of the given type. {@link #FLOAT16} is IEEE binary16 and {@link #BFLOAT16} the upper half of a
 * binary32; both travel as 16-bit values (a {@code short} in Java).
 */
public enum DataType {
  INT8(mw_dtype_t.MW_INT8, 1),
  UINT8(mw_dtype_t.MW_UINT8, 1),
  INT32(mw_dtype_t.MW_INT32, 4),
  UINT32(mw_dtype_t.MW_UINT32, 4),
  INT64(mw_dtype_t.MW_INT64, 8),
  UINT64(mw_dtype_t.MW_UINT64, 8),
  FLOAT16(mw_dtype_t.MW_FLOAT16, 2),
  BFLOAT16(mw_dtype_t.MW_BFLOAT16, 2),
  FLOAT32(mw_dtype_t.MW_FLOAT32, 4),
  FLOAT64(mw_dtype_t.MW_FLOAT64, 8);

  private final int code;
  private final int size;

  DataType(int code, int size) {
    this.code = code;
    this.size = size;
  }

  /** The C value. */
  public int code() {
    return code;
  }

  /** Bytes per element. */
  public int size() {
    return size;
  }
}
