package page

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// The ledger's completeness and the registry's last read (SPEC §7, §12).

// registryData is what the registry task last recorded and where
// completeThrough stands.
type registryData struct {
	completeThrough *int64
	read            *registryRead
}

// registryRead is the part of the registry task's result the page shows
// (activities.RegistryReadKey in competition_state).
type registryRead struct {
	StartedAt    time.Time `json:"startedAt"`
	NotModified  bool      `json:"notModified"`
	Agents       int       `json:"agents"`
	Added        int       `json:"added"`
	Updated      int       `json:"updated"`
	Restored     int       `json:"restored"`
	Deregistered int       `json:"deregistered"`
}

func (p *Page) loadRegistry(ctx context.Context) (registryData, error) {
	var d registryData
	var err error
	if d.completeThrough, err = p.o.Store.CompleteThrough(ctx); err != nil {
		return d, fmt.Errorf("complete through: %w", err)
	}
	raw, ok, err := p.o.Store.GetState(ctx, "registry_last_read")
	if err != nil || !ok {
		return d, err
	}
	var r registryRead
	if json.Unmarshal([]byte(raw), &r) == nil {
		d.read = &r
	}
	return d, nil
}

// completeLine says how far the ledger is complete.
func (d registryData) completeLine(now time.Time) string {
	if d.completeThrough == nil {
		return "not yet known (a reader has not read, or agents' histories are being read)"
	}
	t := time.Unix(*d.completeThrough, 0).UTC()
	return t.Format("2006-01-02 15:04:05 UTC") + " (" + rel(now, t) + ")"
}

// registryLine is the registry's last read, or that there is none.
func (d registryData) registryLine(now time.Time) string {
	r := d.read
	if r == nil {
		return "no read yet (PACER_REGISTRY_URL unset, or the task has not run)"
	}
	if r.NotModified {
		return "read " + rel(now, r.StartedAt) + ": unchanged (304)"
	}
	return fmt.Sprintf("read %s: %d agents listed; %d added, %d updated, %d restored, %d deregistered",
		rel(now, r.StartedAt), r.Agents, r.Added, r.Updated, r.Restored, r.Deregistered)
}

func rel(now, t time.Time) string {
	return span(now.Sub(t).Round(time.Second)) + " ago"
}
