package io.multiworld;

/** The state of a {@link World} as this process sees it. */
public enum WorldState {
  /** Every member is alive as far as this process knows. */
  READY,
  /** A member failed; every operation fails with {@link WorldBrokenException}. Close it. */
  BROKEN,
  /**
   * {@link World#shrink} or {@link World#grow} made its successor; every operation fails with
   * {@link InvalidArgumentException} naming the successor's epoch. Close it.
   */
  RETIRED,
  /** {@link World#close()} ran (or its context was closed). */
  CLOSED
}
