package io.multiworld;

import io.multiworld.swig.mw_backend_t;

/** Data-plane backends ({@code mw_backend_t}). */
public enum Backend {
  /** TCP, host buffers; what every test without a GPU runs on. */
  GLOO(mw_backend_t.MW_BACKEND_GLOO),
  /** GPU buffers; only where the library was built with it (see {@link MultiWorld#backendAvailable}). */
  NCCL(mw_backend_t.MW_BACKEND_NCCL);

  private final int code;

  Backend(int code) {
    this.code = code;
  }

  /** The C value. */
  public int code() {
    return code;
  }
}
