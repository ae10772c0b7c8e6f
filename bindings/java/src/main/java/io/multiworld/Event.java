package io.multiworld;

/**
 * A world state change, a data path change or a store outage, as {@code mw_next_event_info} reports them, in the order they
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

  /** What a {@link Type#PATH_DOWN} or {@link Type#PATH_UP} event says of the data path to {@link #peerRank()}. */
  public static final class Path {
    private final int index;
    private final String localAddress;
    private final String remoteAddress;
    private final long outstandingMessages;
    private final long outstandingBytes;

    Path(int index, String localAddress, String remoteAddress, long outstandingMessages, long outstandingBytes) {
      this.index = index;
      this.localAddress = localAddress;
      this.remoteAddress = remoteAddress;
      this.outstandingMessages = outstandingMessages;
      this.outstandingBytes = outstandingBytes;
    }

    /** The path's place in the context's data_addresses, from 0. */
    public int index() {
      return index;
    }

    /** This member's address of the path. */
    public String localAddress() {
      return localAddress;
    }

    /** The peer's address of the path. */
    public String remoteAddress() {
      return remoteAddress;
    }

    /** Messages this member held for the peer, sent and not yet acknowledged, when the path changed. */
    public long outstandingMessages() {
      return outstandingMessages;
    }

    /** Their payload bytes. */
    public long outstandingBytes() {
      return outstandingBytes;
    }

    @Override
    public String toString() {
      return "path " + index + " (" + localAddress + " to " + remoteAddress + ", " + outstandingMessages
          + " outstanding, " + outstandingBytes + " B)";
    }
  }

  private final Type type;
  private final World world;
  private final String worldName;
  private final long worldEpoch;
  private final int peerRank;
  private final int reason;
  private final String detail;
  private final Path path;

  Event(Type type, World world, String worldName, long worldEpoch, int peerRank, int reason, String detail,
        Path path) {
    this.type = type;
    this.world = world;
    this.worldName = worldName;
    this.worldEpoch = worldEpoch;
    this.peerRank = peerRank;
    this.reason = reason;
    this.detail = detail;
    this.path = path;
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

  /** The world's incarnation (its epoch); 0 for store events. */
  public long worldEpoch() {
    return worldEpoch;
  }

  /** For {@link Type#PATH_DOWN} and {@link Type#PATH_UP}: the path, as fields; otherwise null. */
  public Path path() {
    return path;
  }

  /** The member blamed, or whose path changed; -1 if unknown. */
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
        + (peerRank >= 0 ? " peer " + peerRank : "") + (path != null ? " " + path : "") + " " + reason() + ": "
        + detail;
  }
}
