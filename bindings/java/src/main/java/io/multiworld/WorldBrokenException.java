package io.multiworld;

/**
 * {@link Status#WORLD_BROKEN}: a member of the world died, hung or was cut off, so the world is
 * unusable; every other world keeps running. Close the world and, to go on, create its name again
 * (a new incarnation).
 */
public class WorldBrokenException extends MultiWorldException {
  private static final long serialVersionUID = 1L;

  private final transient World world;
  private final String worldName;
  private final int peerRank;

  public WorldBrokenException(World world, String worldName, int peerRank, String detail) {
    super(Status.WORLD_BROKEN.code(), detail);
    this.world = world;
    this.worldName = worldName != null ? worldName : world != null ? world.name() : null;
    this.peerRank = peerRank;
  }

  /** The world that broke, or null where unknown. */
  public World world() {
    return world;
  }

  /** Its name, or null where unknown. */
  public String worldName() {
    return worldName;
  }

  /** The rank of the member blamed for the break, -1 if unknown. */
  public int peerRank() {
    return peerRank;
  }

  @Override
  public String getMessage() {
    return super.getMessage() + " [world " + (worldName == null ? "?" : "'" + worldName + "'")
        + ", peer rank " + peerRank + "]";
  }
}
