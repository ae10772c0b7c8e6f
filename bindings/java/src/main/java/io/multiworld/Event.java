package io.multiworld;

/**
 * A world state change, a data path change or a store outage, as {@code mw_next_event} reports them, in the order they
 * happened. Delivered to {@link EventListener}s and to {@link Context#events()}.
 */
public final class Event {
  /** What happened. */
  public enum Type {
    /** A world broke; {@link #world()}, {@link #peerRank()} and {@link #detail()} say which, whom, why. */
    WORLD_BROKEN,
    /** Redis became unreachable; data keeps flowing, world creation fails until it is back. */
    STORE_DOWN,
    /** Redis is reachable again. */
    STORE_UP,
    /** A data path to {@link #peerRank()} of {@link #world()} failed; the world lives on. */
    PATH_DOWN,
    /** That path carries traffic again. */
    PATH_UP,
    /** A type this binding does not know. */
    UNKNOWN
  }

  private final Type type;
  private final World world;
  private final String worldName;
  private final int peerRank;
  private final int reason;
  private final String detail;

  Event(Type type, World world, String worldName, int peerRank, int reason, String detail) {
    this.type = type;
    this.world = world;
    this.worldName = worldName;
    this.peerRank = peerRank;
    this.reason = reason;
    this.detail = detail;
  }

  public Type type() {
    return type;
  }

  /** The world, or null for store events and for worlds already closed. */
  public World world() {
    return world;
  }

  /** The world's name; empty for store events. */
  public String worldName() {
    return worldName;
  }

  /** The member blamed, -1 if unknown. */
  public int peerRank() {
    return peerRank;
  }

  /** The status that describes the change, e.g. {@link Status#WORLD_BROKEN}. */
  public Status reason() {
    return Status.fromCode(reason);
  }

  public String detail() {
    return detail;
  }

  @Override
  public String toString() {
    return type + (worldName.isEmpty() ? "" : " world '" + worldName + "'")
        + (peerRank >= 0 ? " peer " + peerRank : "") + " " + reason() + ": " + detail;
  }
}
