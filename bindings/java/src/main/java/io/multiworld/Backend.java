package io.multiworld;

import io.multiworld.swig.mw_backend_t;

/** Data-plane backends ({@code mw_backend_t}). */
public enum Backend {
  /** TCP, host buffers, a thread per world; kept as the baseline the benchmarks compare against. */
  GLOO(mw_backend_t.MW_BACKEND_GLOO),
  /**
   * GPU buffers ({@link DeviceBuffer}); only where the NCCL plugin, a CUDA driver and a device are
   * present (see {@link MultiWorld#backendAvailable}).
   */
  NCCL(mw_backend_t.MW_BACKEND_NCCL),
  /**
   * Host buffers over UCX: TCP on one host and across hosts, RDMA where present,
   * one progress engine per context. The host backend to use where it is available.
   */
  UCX(mw_backend_t.MW_BACKEND_UCX);

  private final int code;

  Backend(int code) {
    this.code = code;
  }

  /** The C value. */
  public int code() {
    return code;
  }

  /** The host backend for new worlds: {@link #UCX} where it is available, else {@link #GLOO}. */
  public static Backend host() {
    return MultiWorld.backendAvailable(UCX) ? UCX : GLOO;
  }

  /** Whether this backend moves device memory ({@link DeviceBuffer}) rather than host memory. */
  boolean movesDeviceMemory() {
    return this == NCCL;
  }
}
