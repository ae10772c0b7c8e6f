package io.multiworld;

import io.multiworld.swig.Multiworld;
import io.multiworld.swig.mw_status_t;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The completion side of one context: the table of pending operations, keyed by the user_data
 * each request carries from issue time ({@code mw_submit}), and the thread
 * {@code multiworld-poller-N}, which blocks in {@code mw_poll_info} with no timeout (so it adds no
 * latency and burns no CPU while idle) and completes the operations' futures. {@link #stop} plus
 * {@code mw_context_wake} make it return.
 */
final class CompletionPoller extends ContextThread {
  private static final int BATCH = 64;
  // Longs per completion from mwj_poll_info: request, world, user_data, status, kind, bytes.
  private static final int STRIDE = 6;

  private final Context context;
  private final AtomicLong ids = new AtomicLong();
  private final Object table = new Object();
  private final Map<Long, Operation> pending = new HashMap<>();  // guarded by table

  CompletionPoller(Context context, String name) {
    super(name);
    this.context = context;
  }

  /** A user_data no other operation of this context has. */
  long nextId() {
    return ids.incrementAndGet();
  }

  /** Before the operation is issued, so its completion always finds it. */
  void add(Operation op) {
    synchronized (table) {
      pending.put(op.id, op);
    }
  }

  /** The library refused the operation at issue. */
  void remove(Operation op) {
    synchronized (table) {
      pending.remove(op.id);
      if (pending.isEmpty()) table.notifyAll();
    }
  }

  /** Waits until no operation is pending or the deadline ({@link System#nanoTime}) passed. */
  void awaitEmpty(long deadline) throws InterruptedException {
    synchronized (table) {
      while (!pending.isEmpty()) {
        long left = deadline - System.nanoTime();
        if (left <= 0) return;
        TimeUnit.NANOSECONDS.timedWait(table, left);
      }
    }
  }

  /**
   * From close(), the thread gone and the worlds destroyed: delivers what is queued, then frees
   * the requests that never reported and returns their operations, for close() to finish once
   * the context is freed (only then is the library surely done with their buffers).
   */
  List<Operation> closeOut(long context) {
    long[] quads = new long[STRIDE * BATCH];
    long[] n = new long[1];
    do {
      if (Multiworld.mwj_poll_info(context, quads, 0, n) != mw_status_t.MW_OK) break;
      deliver(quads, (int) n[0]);
    } while (n[0] == BATCH);
    List<Operation> left;
    synchronized (table) {
      left = new ArrayList<>(pending.values());
      pending.clear();
      table.notifyAll();
    }
    for (Operation op : left) {
      long request = op.delivered();
      if (request != 0) Multiworld.mw_request_free(request);
    }
    return left;
  }

  @Override
  void run() {
    long[] quads = new long[STRIDE * BATCH];
    long[] n = new long[1];
    try {
      while (!stopping()) {
        // Blocks until completions come or close() wakes it (n = 0).
        int st = Multiworld.mwj_poll_info(context.handle(), quads, -1, n);
        if (st != mw_status_t.MW_OK) {
          System.err.println("multiworld: mw_poll_info failed, completions stop: " + Multiworld.mw_last_error());
          return;
        }
        deliver(quads, (int) n[0]);
      }
    } catch (Throwable t) {
      System.err.println("multiworld: poller thread failed: " + t);
      t.printStackTrace();
    }
  }

  private void deliver(long[] quads, int n) {
    for (int i = 0; i < n; ++i) {
      long request = quads[STRIDE * i];
      long userData = quads[STRIDE * i + 2];
      int status = (int) quads[STRIDE * i + 3];
      String detail = "";
      if (status != mw_status_t.MW_OK) {
        Multiworld.mw_test(request);  // leaves the request's reason as this thread's last error
        detail = Multiworld.mw_last_error();
      }
      Operation op;
      synchronized (table) {
        op = pending.remove(userData);
        if (pending.isEmpty()) table.notifyAll();
      }
      if (op != null) op.delivered();  // from now on no cancel() touches the handle
      Multiworld.mw_request_free(request);
      if (op != null) {
        op.finish(status, detail);
      } else {
        System.err.println("multiworld: a completion for no pending operation (user_data " + userData + ")");
      }
    }
  }
}
