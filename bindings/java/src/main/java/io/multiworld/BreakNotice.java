package io.multiworld;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Why one world broke, from its WORLD_BROKEN event, and the failures waiting to name the peer.
 *
 * <p>The library queues a world's break event before any of its requests completes with
 * MW_ERR_WORLD_BROKEN, but the event thread and the poller thread run apart, so a failure can
 * reach the poller first: it then waits here until the event thread has heard the break, or the
 * world is closed (the peer then stays unknown, -1).
 */
final class BreakNotice {
  private final World world;
  private boolean settled;    // guarded by this: heard, or the world closed
  private int peerRank = -1;  // guarded by this
  private final List<Waiting> waiting = new ArrayList<>();  // guarded by this

  private static final class Waiting {
    final CompletableFuture<Void> future;
    final String detail;

    Waiting(CompletableFuture<Void> future, String detail) {
      this.future = future;
      this.detail = detail;
    }
  }

  BreakNotice(World world) {
    this.world = world;
  }

  /** The member blamed, once the break event came; -1 before or when unknown. */
  synchronized int peerRank() {
    return peerRank;
  }

  /** Fails {@code f} with a WorldBrokenException naming the peer, now or once it is known. */
  void fail(CompletableFuture<Void> f, String detail) {
    int peer;
    synchronized (this) {
      if (!settled) {
        waiting.add(new Waiting(f, detail));
        return;
      }
      peer = peerRank;
    }
    f.completeExceptionally(new WorldBrokenException(world, world.name(), peer, detail));
  }

  /** The event thread heard the break, blaming {@code peer}. */
  void heard(int peer) {
    settle(peer);
  }

  /** The world is closed: no event will name the peer any more. */
  void closed() {
    settle(-1);
  }

  private void settle(int peer) {
    List<Waiting> due;
    synchronized (this) {
      if (settled) return;
      settled = true;
      peerRank = peer;
      due = new ArrayList<>(waiting);
      waiting.clear();
    }
    for (Waiting w : due) {
      w.future.completeExceptionally(new WorldBrokenException(world, world.name(), peer, w.detail));
    }
  }
}
