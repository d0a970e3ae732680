package cfnfake

import (
	"sync"
	"time"
)

// Clock is a virtual clock shared by the fake and the code under test.
// Waiting on it (After) advances it at once by the duration waited, so a
// ten-minute operation is tested in milliseconds and every timing
// assertion is about the logic, never about wall time. Concurrent waiters
// each advance it; time then runs faster, which scripts tolerate.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

// Epoch is the default start of a Clock.
var Epoch = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)

// NewClock returns a Clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After advances the clock by d and returns a channel that has already fired.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.now = c.now.Add(max(d, 0))
	c.waits = append(c.waits, d)
	now := c.now
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- now
	return ch
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(max(d, 0))
}

// Waits returns every duration passed to After, in order.
func (c *Clock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}
