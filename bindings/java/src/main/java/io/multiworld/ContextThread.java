package io.multiworld;

/**
 * One of a context's two daemon threads: it loops around a native wait with no timeout
 * ({@code mw_poll_info}, {@code mw_next_event_info}) until {@link #stop} was called and
 * {@code mw_context_wake} made that wait return.
 */
abstract class ContextThread {
  private final Thread thread;
  private volatile boolean stopping;

  ContextThread(String name) {
    thread = new Thread(this::run, name);
    thread.setDaemon(true);
  }

  /** The thread's body: waits and handles until {@link #stopping()}. */
  abstract void run();

  final void start() {
    thread.start();
  }

  final boolean isCurrentThread() {
    return Thread.currentThread() == thread;
  }

  /** Makes the thread leave after its current wait; the caller then wakes it (mw_context_wake). */
  final void stop() {
    stopping = true;
  }

  final boolean stopping() {
    return stopping;
  }

  /** Waits for the thread to end; true if interrupted meanwhile. */
  final boolean join() {
    boolean interrupted = false;
    while (thread.isAlive()) {
      try {
        thread.join();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    return interrupted;
  }
}
