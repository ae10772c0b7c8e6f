package io.multiworld;

import io.multiworld.swig.mw_status_t;
import java.util.concurrent.CompletableFuture;

/**
 * The future of one issued operation, and its entry in the context's pending table: it keeps the
 * operation's buffers (and heap copies) reachable until the library reports the request finished,
 * whatever happens to the future meanwhile.
 *
 * <p>{@link #cancel} asks the library to stop the operation ({@code mw_request_cancel}) and
 * promises that no result reaches the caller's heap array or buffer afterwards; the library's own
 * completion still comes, and only then are the buffers released ({@link #released}).
 *
 * <p>Dependent stages ({@code thenApply}, ...) are plain {@link CompletableFuture}s: cancelling one
 * of them does not cancel the operation.
 */
final class Operation extends CompletableFuture<Void> {
  /** The request's user_data, fixed at issue time: the key of the pending table. */
  final long id;
  final World world;
  private final NativeBuffer hostSend;
  private final NativeBuffer hostRecv;
  private final DeviceBuffer deviceSend;  // null when the operation uses no device memory
  private final DeviceBuffer deviceRecv;
  /** Completes once the library no longer uses this operation's buffers. */
  final CompletableFuture<Void> released = new CompletableFuture<>();

  private final Object lock = new Object();
  private long request;       // guarded by lock: the handle, until the completion came
  private boolean delivered;  // guarded by lock: the completion came; the handle is freed
  private boolean cancelled;  // guarded by lock: cancel() won; no result reaches the caller
  private boolean committed;  // guarded by lock: the result is being written to the caller's buffers

  private Operation(long id, World world, NativeBuffer hostSend, NativeBuffer hostRecv,
      DeviceBuffer deviceSend, DeviceBuffer deviceRecv) {
    this.id = id;
    this.world = world;
    this.hostSend = hostSend;
    this.hostRecv = hostRecv;
    this.deviceSend = deviceSend;
    this.deviceRecv = deviceRecv;
  }

  static Operation onHost(long id, World world, NativeBuffer send, NativeBuffer recv) {
    return new Operation(id, world, send, recv, null, null);
  }

  /** Takes a use of each device buffer (refused when closed), given back once the library is done. */
  static Operation onDevice(long id, World world, DeviceBuffer send, DeviceBuffer recv) {
    if (send != null) send.acquire();
    try {
      if (recv != null && recv != send) recv.acquire();
    } catch (RuntimeException e) {
      if (send != null) send.release();
      throw e;
    }
    return new Operation(id, world, NativeBuffer.NONE, NativeBuffer.NONE, send, recv);
  }

  /** The issuer: the library accepted the operation as {@code request}. */
  void issued(long request) {
    synchronized (lock) {
      if (!delivered) this.request = request;
    }
  }

  /**
   * The library reported the request finished. Returns the handle the issuer recorded (0 when the
   * completion came first); from now on nobody else touches it, so the caller frees it.
   */
  long delivered() {
    synchronized (lock) {
      delivered = true;
      long r = request;
      request = 0;
      return r;
    }
  }

  /** After {@link #delivered}, or for an operation the library refused at issue. */
  void finish(int status, String detail) {
    if (deviceSend != null) deviceSend.release();
    if (deviceRecv != null && deviceRecv != deviceSend) deviceRecv.release();
    released.complete(null);
    if (status == mw_status_t.MW_OK) {
      succeed();
    } else if (!isDone()) {
      world.fail(this, status, detail);
    }
  }

  private void succeed() {
    synchronized (lock) {
      if (cancelled || isDone()) return;
      committed = true;
    }
    try {
      hostSend.complete();
      if (hostRecv != hostSend) hostRecv.complete();
    } catch (RuntimeException e) {
      completeExceptionally(e);
      return;
    }
    complete(null);
  }

  /**
   * Stops the operation: the library cancels the request ({@code mw_request_cancel}: a receive no
   * message matched yet is taken back and its world stays usable on UCX; anything else breaks the
   * world), and no result is written to the caller's buffers from now on. False when the result
   * was already being delivered or the future was done.
   */
  @Override
  public boolean cancel(boolean mayInterruptIfRunning) {
    synchronized (lock) {
      if (committed || isDone()) return false;
      cancelled = true;
      if (!delivered && request != 0) world.cancelRequest(request);
    }
    super.cancel(mayInterruptIfRunning);
    return isCancelled();
  }
}
