package mw

// Internals the tests check for leaks.

// LiveBuffers is the number of C buffers allocated and not yet freed.
func LiveBuffers() int64 { return liveBuffers.Load() }

// InFlight is the number of requests of c not yet completed.
func InFlight(c *Context) int { return c.disp.inFlight() }
