package io.multiworld;

import io.multiworld.swig.Multiworld;
import io.multiworld.swig.mw_status_t;
import java.nio.Buffer;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongFunction;

/**
 * How {@link World} turns an operation's arguments into one {@code mw_submit}: checks the buffers
 * against the world (host memory for host worlds, device memory of its device for NCCL worlds,
 * sizes), prepares them, registers the {@link Operation} under its user_data and issues it.
 */
final class WorldIssuer {
  /** One mw_submit of a prepared operation. */
  @FunctionalInterface
  private interface Submit {
    int call(long world, long userData, long[] request);
  }

  private final World world;

  WorldIssuer(World world) {
    this.world = world;
  }

  static long bytes(long count, DataType type, long blocks) {
    Objects.requireNonNull(type, "type");
    if (count < 0) throw new IllegalArgumentException("negative count " + count);
    return Math.multiplyExact(Math.multiplyExact(count, (long) type.size()), blocks);
  }

  /**
   * The bytes one buffer used for both sides needs: the larger side, and for gathers at least
   * this rank's block of the result.
   */
  private long inPlaceBytes(long count, DataType type, long sendBlocks, long recvBlocks, boolean gathers) {
    long need = Math.max(bytes(count, type, sendBlocks), bytes(count, type, recvBlocks));
    return gathers ? Math.max(need, bytes(count, type, world.size())) : need;
  }

  NativeBuffer host(Buffer b, long bytes, boolean reads, boolean writes, String what) {
    if (b != null && world.backend().movesDeviceMemory()) {
      throw new IllegalArgumentException(what + " is host memory (" + b.getClass().getSimpleName() + "), but "
          + world + " is an NCCL world, which moves device memory: pass a DeviceBuffer of device " + world.device());
    }
    return NativeBuffer.of(b, bytes, reads, writes, what);
  }

  DeviceBuffer onDevice(DeviceBuffer b, long bytes, String what) {
    if (b == null) {
      if (bytes == 0) return null;
      throw new NullPointerException(what + " is null but " + bytes + " bytes are needed");
    }
    if (!world.backend().movesDeviceMemory()) {
      throw new IllegalArgumentException(what + " is device memory (" + b + "), but " + world
          + " moves host memory: pass a java.nio.Buffer or an array, or use an NCCL world for device memory");
    }
    if (b.device() != world.device()) {
      throw new IllegalArgumentException(what + " is memory of device " + b.device() + ", but " + world
          + " runs on device " + world.device());
    }
    if (bytes > b.byteSize()) {
      throw new IllegalArgumentException(what + " has " + b.byteSize() + " bytes, " + bytes + " are needed");
    }
    return b;
  }

  /**
   * A (send, recv) pair of host buffers; {@code sendBlocks}/{@code recvBlocks} are their sizes on
   * this rank in multiples of {@code count} (0: not used here, may be null). The same object for
   * both is in place.
   */
  CompletableFuture<Void> twoHost(int kind, String what, Buffer send, Buffer recv, long count, DataType type,
      long sendBlocks, long recvBlocks, boolean gathers, ReduceOp op, int peer) {
    NativeBuffer s;
    NativeBuffer d;
    if (send != null && send == recv) {
      long need = inPlaceBytes(count, type, sendBlocks, recvBlocks, gathers);
      s = d = host(send, need, true, true, what + " buffer (in place)");
    } else {
      s = sendBlocks == 0 ? NativeBuffer.NONE : host(send, bytes(count, type, sendBlocks), true, false, what + " send buffer");
      d = recvBlocks == 0 ? NativeBuffer.NONE : host(recv, bytes(count, type, recvBlocks), false, true, what + " recv buffer");
    }
    return submitHost(kind, s, d, count, type, op, peer);
  }

  /** {@link #twoHost} for device buffers. */
  CompletableFuture<Void> twoDevice(int kind, String what, DeviceBuffer send, DeviceBuffer recv, long count,
      DataType type, long sendBlocks, long recvBlocks, boolean gathers, ReduceOp op, int peer) {
    DeviceBuffer s;
    DeviceBuffer d;
    if (send != null && send == recv) {
      s = d = onDevice(send, inPlaceBytes(count, type, sendBlocks, recvBlocks, gathers), what + " buffer (in place)");
    } else {
      s = sendBlocks == 0 ? null : onDevice(send, bytes(count, type, sendBlocks), what + " send buffer");
      d = recvBlocks == 0 ? null : onDevice(recv, bytes(count, type, recvBlocks), what + " recv buffer");
    }
    return submitDevice(kind, s, d, count, type, op, peer);
  }

  CompletableFuture<Void> submitHost(int kind, NativeBuffer s, NativeBuffer d, long count, DataType type,
      ReduceOp op, int peer) {
    int redop = op == null ? 0 : op.code();
    return issue(id -> Operation.onHost(id, world, s, d),
        (w, id, r) -> Multiworld.mwj_submit(w, kind, s.address, d.address, count, type.code(), redop, peer, id, r));
  }

  CompletableFuture<Void> submitDevice(int kind, DeviceBuffer s, DeviceBuffer d, long count, DataType type,
      ReduceOp op, int peer) {
    int redop = op == null ? 0 : op.code();
    long sendAddress = s == null ? 0 : s.address();
    long recvAddress = d == null ? 0 : d.address();
    return issue(id -> Operation.onDevice(id, world, s, d),
        (w, id, r) -> Multiworld.mwj_submit_device(w, kind, sendAddress, recvAddress, count, type.code(), redop, peer, id, r));
  }

  /**
   * Issues one operation with its user_data (the pending table's key) fixed at issue time: the
   * operation is in the table before the library can complete it.
   */
  private CompletableFuture<Void> issue(LongFunction<Operation> prepare, Submit submit) {
    Context context = world.context();
    context.lifecycle.readLock().lock();
    try {
      world.lock().readLock().lock();
      try {
        long h = world.handle();
        if (h == 0 || context.isClosing()) throw new IllegalStateException(world + " is closed");
        Operation op = prepare.apply(context.poller.nextId());
        context.poller.add(op);
        long[] request = new long[1];
        int st;
        try {
          st = submit.call(h, op.id, request);
        } catch (RuntimeException e) {  // the JNI layer refused an argument: nothing was issued
          context.poller.remove(op);
          op.finish(mw_status_t.MW_ERR_INVALID_ARGUMENT, String.valueOf(e.getMessage()));
          throw e;
        }
        if (st != mw_status_t.MW_OK) {
          String detail = Multiworld.mw_last_error();
          context.poller.remove(op);
          op.finish(st, detail);
          return op;
        }
        op.issued(request[0]);
        return op;
      } finally {
        world.lock().readLock().unlock();
      }
    } finally {
      context.lifecycle.readLock().unlock();
    }
  }
}
