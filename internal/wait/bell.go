package wait

import (
	"context"
	"sync"
	"time"
)

// Bell wakes every waiter at once. A waiter takes C before it looks at
// what the bell announces (a table, a queue) and waits on it after, so a
// ring between the look and the wait is not lost: Ring closes the channel
// handed out so far and hands out a new one from then on. A nil Bell
// never rings (its C is nil, which blocks for ever).
type Bell struct {
	mu sync.Mutex
	ch chan struct{}
}

// C is the channel the next Ring closes.
func (b *Bell) C() <-chan struct{} {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

// Ring wakes whoever waits on a C taken before it.
func (b *Bell) Ring() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}

// SleepOr is Sleep that also ends when rung is closed; rang reports that
// it did (a nil rung never does).
func SleepOr(ctx context.Context, d time.Duration, rung <-chan struct{}) (rang bool, err error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-t.C:
		return false, nil
	case <-rung:
		return true, nil
	}
}
