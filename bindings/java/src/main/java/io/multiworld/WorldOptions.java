package io.multiworld;

import io.multiworld.swig.mw_path_failover_t;
import java.time.Duration;
import java.util.Objects;

/**
 * The settings a world may set for itself ({@code mw_world_params_t}), for
 * {@link Context#createWorld(String, int, int, Backend, int, Duration, WorldOptions)}. Immutable;
 * each setter returns a copy. What is left alone keeps the context's value.
 *
 * <pre>{@code
 * WorldOptions o = WorldOptions.defaults().opTimeout(Duration.ofSeconds(5)).pathFailover(false);
 * }</pre>
 */
public final class WorldOptions {
  private final int opTimeoutMs;   // 0: the context's, -1: no limit
  private final int pathFailover;  // mw_path_failover_t

  private WorldOptions(int opTimeoutMs, int pathFailover) {
    this.opTimeoutMs = opTimeoutMs;
    this.pathFailover = pathFailover;
  }

  /** Every setting as the context has it. */
  public static WorldOptions defaults() {
    return new WorldOptions(0, mw_path_failover_t.MW_PATH_FAILOVER_DEFAULT);
  }

  /**
   * This world's op_timeout_ms: an operation running longer breaks the world. Rounded up to a
   * millisecond.
   */
  public WorldOptions opTimeout(Duration limit) {
    Objects.requireNonNull(limit, "limit");
    if (limit.isNegative() || limit.isZero()) {
      throw new IllegalArgumentException("op timeout " + limit + " must be positive; see noOpTimeout()");
    }
    long ms = limit.plusNanos(999_999).toMillis();
    return new WorldOptions((int) Math.min(Integer.MAX_VALUE, ms), pathFailover);
  }

  /** No operation time limit for this world, whatever the context's op_timeout_ms. */
  public WorldOptions noOpTimeout() {
    return new WorldOptions(-1, pathFailover);
  }

  /**
   * Path failover on or off for this world. On needs the context's path_failover on and a UCX or
   * NCCL world ({@link InvalidArgumentException} otherwise); one member's off puts the whole world
   * on one path.
   */
  public WorldOptions pathFailover(boolean on) {
    return new WorldOptions(opTimeoutMs, on ? mw_path_failover_t.MW_PATH_FAILOVER_ON
                                            : mw_path_failover_t.MW_PATH_FAILOVER_OFF);
  }

  int opTimeoutMs() {
    return opTimeoutMs;
  }

  int pathFailoverCode() {
    return pathFailover;
  }
}
