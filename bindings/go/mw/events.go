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
	EventPathDown    EventType = C.MW_EVENT_PATH_DOWN    // a data path to PeerRank failed; the world lives on
	EventPathUp      EventType = C.MW_EVENT_PATH_UP      // that path carries traffic again
)

func (t EventType) String() string {
	switch t {
	case EventWorldBroken:
		return "world-broken"
	case EventStoreDown:
		return "store-down"
	case EventStoreUp:
		return "store-up"
	case EventPathDown:
		return "path-down"
	case EventPathUp:
		return "path-up"
	}
	return "EventType(" + strconv.Itoa(int(t)) + ")"
}

// Event is a world state change, a data path change or a store outage,
// delivered in the order they happened.
type Event struct {
	Type       EventType
	World      *World // nil for store events and for worlds already closed
	WorldName  string
	WorldEpoch uint64 // the world's incarnation; 0 for store events
	PeerRank   int    // the member blamed, or whose path changed; -1 if unknown
	Reason     Code   // e.g. ErrWorldBroken; 0 when there is none
	Detail     string // for people, not programs
	Path       *Path  // EventPathDown and EventPathUp; nil otherwise
}

// Path is what a path event says of the data path to PeerRank.
type Path struct {
	Index               int    // in the context's data_addresses, from 0
	LocalAddress        string // this member's address of the path
	RemoteAddress       string // the peer's address of the path
	OutstandingMessages uint64 // held for the peer, sent and not yet acknowledged, when the path changed
	OutstandingBytes    uint64 // their payload bytes
}

func (e Event) String() string {
	s := e.Type.String()
	if e.WorldName != "" {
		s += " world=" + strconv.Quote(e.WorldName)
	}
	if e.PeerRank >= 0 {
		s += " peer=" + strconv.Itoa(e.PeerRank)
	}
	if e.Path != nil {
		s += " path=" + strconv.Itoa(e.Path.Index) + " " + e.Path.LocalAddress + "->" + e.Path.RemoteAddress
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// NextEvent waits for the next event of the context (mw_next_event_info), or
// until ctx is done (ctx.Err()). Each event goes to one receiver, whether
// it came through NextEvent or Events. After Close it fails with an error
// wrapping ErrClosed.
func (c *Context) NextEvent(ctx context.Context) (Event, error) {
	if err := ctx.Err(); err != nil {
		return Event{}, err
	}
	select {
	case ev, ok := <-c.Events():
		if !ok {
			return Event{}, closedError(ErrInvalidArgument, "context")
		}
		return ev, nil
	case <-ctx.Done():
		return Event{}, ctx.Err()
	}
}

// Events returns the channel carrying the context's events, closed by
// Close. One goroutine, started on the first call, sleeps in mw_next_event_info
// with no timeout and hands over one event at a time: events nobody reads
// wait in the library's queue.
func (c *Context) Events() <-chan Event {
	// Not under c.mu: Close holds it while it runs evOnce too. The once
	// orders this read of c.h before Close clears it.
	c.evOnce.Do(func() {
		select {
		case <-c.stop:
			close(c.evCh)
			close(c.evDone)
		default:
			go c.pumpEvents(c.h)
		}
	})
	return c.evCh
}

// pumpEvents feeds evCh until Close, whose mw_context_wake ends the wait
// in mw_next_event_info (it then returns MW_ERR_TIMEOUT). Close frees h only
// after this goroutine ended.
func (c *Context) pumpEvents(h *C.mw_context_t) {
	defer close(c.evDone)
	defer close(c.evCh)
	var ev C.mw_event_info_t
	for {
		select {
		case <-c.stop:
			return
		default:
		}
		ev.size = C.sizeof_mw_event_info_t
		err := call(func() C.mw_status_t { return C.mw_next_event_info(h, &ev, -1) })
		if errors.Is(err, ErrTimeout) {
			continue // woken
		}
		if err != nil {
			return // only a bad argument fails, which h never is
		}
		e := eventOf(&ev)
		e.World = c.lookup(ev.world)
		select {
		case c.evCh <- e:
		case <-c.stop:
			return
		}
	}
}

// eventOf converts an mw_event_info_t, all but its World.
func eventOf(ev *C.mw_event_info_t) Event {
	e := Event{
		Type:       EventType(ev._type),
		WorldName:  C.GoString(&ev.world_name[0]),
		WorldEpoch: uint64(ev.world_epoch),
		PeerRank:   int(ev.peer_rank),
		Reason:     Code(ev.reason),
		Detail:     C.GoString(&ev.detail[0]),
	}
	if ev.path_index >= 0 {
		e.Path = &Path{
			Index:               int(ev.path_index),
			LocalAddress:        C.GoString(&ev.local_address[0]),
			RemoteAddress:       C.GoString(&ev.remote_address[0]),
			OutstandingMessages: uint64(ev.outstanding_messages),
			OutstandingBytes:    uint64(ev.outstanding_bytes),
		}
	}
	return e
}
