package mw

/*
#include <multiworld/multiworld.h>
*/
import "C"

import (
	"context"
	"errors"
	"strconv"
)

// EventType is the kind of an Event (mw_event_type_t).
type EventType int

const (
	EventWorldBroken EventType = C.MW_EVENT_WORLD_BROKEN // a world of this context broke
	EventStoreDown   EventType = C.MW_EVENT_STORE_DOWN   // Redis became unreachable
	EventStoreUp     EventType = C.MW_EVENT_STORE_UP     // Redis is back
)

func (t EventType) String() string {
	switch t {
	case EventWorldBroken:
		return "world-broken"
	case EventStoreDown:
		return "store-down"
	case EventStoreUp:
		return "store-up"
	}
	return "EventType(" + strconv.Itoa(int(t)) + ")"
}

// Event is a world state change or a store outage, delivered in the order
// they happened.
type Event struct {
	Type      EventType
	World     *World // nil for store events and for worlds already closed
	WorldName string
	PeerRank  int  // the member blamed, -1 if unknown
	Reason    Code // e.g. ErrWorldBroken; 0 when there is none
	Detail    string
}

func (e Event) String() string {
	s := e.Type.String()
	if e.WorldName != "" {
		s += " world=" + strconv.Quote(e.WorldName)
	}
	if e.PeerRank >= 0 {
		s += " peer=" + strconv.Itoa(e.PeerRank)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// NextEvent waits for the next event of the context (mw_next_event), or
// until ctx is done (ctx.Err()). Each event goes to one caller: do not mix
// NextEvent with Events.
func (c *Context) NextEvent(ctx context.Context) (Event, error) {
	for {
		if err := ctx.Err(); err != nil {
			return Event{}, err
		}
		c.mu.RLock()
		if c.h == nil {
			c.mu.RUnlock()
			return Event{}, closedError(ErrInvalidArgument, "context")
		}
		var ev C.mw_event_t
		h := c.h
		err := call(func() C.mw_status_t { return C.mw_next_event(h, &ev, pollSliceMs) })
		c.mu.RUnlock()
		if err == nil {
			return Event{
				Type:      EventType(ev._type),
				World:     c.lookup(ev.world),
				WorldName: C.GoString(&ev.world_name[0]),
				PeerRank:  int(ev.peer_rank),
				Reason:    Code(ev.reason),
				Detail:    C.GoString(&ev.detail[0]),
			}, nil
		}
		if !errors.Is(err, ErrTimeout) {
			return Event{}, err
		}
	}
}

// Events returns a channel carrying the context's events, fed by a
// goroutine started on the first call and closed by Close. Events that
// nobody reads wait in the library's queue. Do not mix with NextEvent.
func (c *Context) Events() <-chan Event {
	c.evOnce.Do(func() {
		c.evCh = make(chan Event, 16)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-c.stop
			cancel()
		}()
		go func() {
			defer close(c.evCh)
			for {
				ev, err := c.NextEvent(ctx)
				if err != nil {
					return
				}
				select {
				case c.evCh <- ev:
				case <-c.stop:
					return
				}
			}
		}()
	})
	return c.evCh
}
