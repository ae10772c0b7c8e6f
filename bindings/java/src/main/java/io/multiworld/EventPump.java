package io.multiworld;

import io.multiworld.swig.Multiworld;
import io.multiworld.swig.mw_event_info_t;
import io.multiworld.swig.mw_event_type_t;
import io.multiworld.swig.mw_status_t;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * The event side of one context: the thread {@code multiworld-events-N}, which blocks in
 * {@code mw_next_event_info} with no timeout, tells each world that broke who is blamed, and hands
 * every event to the listeners and to the bounded queue. {@link #stop} plus
 * {@code mw_context_wake} make it return.
 */
final class EventPump extends ContextThread {
  private static final int CAPACITY = 1024;

  private final Context context;
  final List<EventListener> listeners = new CopyOnWriteArrayList<>();
  final BlockingQueue<Event> queue = new LinkedBlockingQueue<>(CAPACITY);
  // Break events of worlds the context did not hold yet (a world that broke while being registered).
  private final Map<Long, Event> unclaimedBreaks = new LinkedHashMap<>(16, 0.75f, false) {
    private static final long serialVersionUID = 1L;

    @Override
    protected boolean removeEldestEntry(Map.Entry<Long, Event> eldest) {
      return size() > 256;
    }
  };

  EventPump(Context context, String name) {
    super(name);
    this.context = context;
  }

  /** A world was just registered: it hears of a break event that came before. */
  void claim(World world, long handle) {
    Event e;
    synchronized (unclaimedBreaks) {
      e = unclaimedBreaks.remove(handle);
    }
    if (e != null && e.worldName().equals(world.name())) world.notice.heard(e.peerRank());
  }

  @Override
  void run() {
    mw_event_info_t ev = new mw_event_info_t();
    try {
      while (!stopping()) {
        // Blocks until an event comes or close() wakes it (MW_ERR_TIMEOUT).
        int st = Multiworld.mwj_next_event_info(context.handle(), ev, -1);
        if (st == mw_status_t.MW_OK) {
          dispatch(ev);
        } else if (st != mw_status_t.MW_ERR_TIMEOUT) {
          System.err.println("multiworld: mw_next_event_info failed, events stop: " + Multiworld.mw_last_error());
          return;
        }
      }
      while (Multiworld.mwj_next_event_info(context.handle(), ev, 0) == mw_status_t.MW_OK) dispatch(ev);
    } catch (Throwable t) {
      System.err.println("multiworld: event thread failed: " + t);
      t.printStackTrace();
    } finally {
      ev.delete();
    }
  }

  private void dispatch(mw_event_info_t ev) {
    Event.Type type = typeOf(ev.getType());
    long handle = ev.getWorld();
    String name = ev.getWorld_name();
    World world = handle == 0 ? null : context.worldOf(handle, name);
    Event e = new Event(type, world, name, ev.getWorld_epoch(), ev.getPeer_rank(), ev.getReason(), ev.getDetail(),
        pathOf(ev));
    if (type == Event.Type.WORLD_BROKEN) {
      if (world == null && handle != 0) {
        synchronized (unclaimedBreaks) {
          unclaimedBreaks.put(handle, e);
        }
        world = context.worldOf(handle, name);  // registered meanwhile?
      }
      if (world != null) world.notice.heard(e.peerRank());
    }
    while (!queue.offer(e)) queue.poll();
    for (EventListener l : listeners) {
      try {
        l.onEvent(e);
      } catch (RuntimeException ex) {
        System.err.println("multiworld: event listener threw " + ex);
        ex.printStackTrace();
      }
    }
  }

  /** The path fields of a path event; null for other events. */
  static Event.Path pathOf(mw_event_info_t ev) {
    if (ev.getPath_index() < 0) return null;
    return new Event.Path(ev.getPath_index(), ev.getLocal_address(), ev.getRemote_address(),
        ev.getOutstanding_messages(), ev.getOutstanding_bytes());
  }

  private static Event.Type typeOf(int type) {
    switch (type) {
      case mw_event_type_t.MW_EVENT_WORLD_BROKEN:
        return Event.Type.WORLD_BROKEN;
      case mw_event_type_t.MW_EVENT_STORE_DOWN:
        return Event.Type.STORE_DOWN;
      case mw_event_type_t.MW_EVENT_STORE_UP:
        return Event.Type.STORE_UP;
      case mw_event_type_t.MW_EVENT_PATH_DOWN:
        return Event.Type.PATH_DOWN;
      case mw_event_type_t.MW_EVENT_PATH_UP:
        return Event.Type.PATH_UP;
      default:
        return Event.Type.UNKNOWN;
    }
  }
}
