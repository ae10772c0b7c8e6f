package io.multiworld;

/**
 * Receives a context's events on its poller thread, in order. It must return quickly and must not
 * wait for operations of the same context (their futures are completed by that same thread).
 * Exceptions it throws are printed and otherwise ignored.
 */
@FunctionalInterface
public interface EventListener {
  void onEvent(Event event);
}
