package page

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/store"
)

// The competition's rounds (SPEC §13): each open round's state, and the
// newest finalized round's winners.

// maxRoundsShown bounds the line: the open rounds and the newest final one.
const maxRoundsShown = 4

func (p *Page) loadRounds(ctx context.Context, now time.Time) (string, error) {
	rounds, err := p.o.Store.Rounds(ctx)
	if err != nil {
		return "", fmt.Errorf("rounds: %w", err)
	}
	var parts []string
	shownFinal := false
	for _, r := range rounds {
		if len(parts) == maxRoundsShown {
			break
		}
		if !r.Final() {
			parts = append(parts, r.ID+" "+openRoundState(r, now))
			continue
		}
		if shownFinal {
			continue
		}
		shownFinal = true
		d, _, err := p.o.Store.FinalRound(ctx, r.ID)
		if err != nil {
			return "", fmt.Errorf("round %s: %w", r.ID, err)
		}
		parts = append(parts, r.ID+" finalized "+rel(now, *r.FinalizedAt)+winners(d))
	}
	if len(parts) == 0 {
		return "none (pacer rounds add ID --starts T --ends T)", nil
	}
	return strings.Join(parts, "; "), nil
}

// openRoundState says where a round not yet final stands.
func openRoundState(r store.Round, now time.Time) string {
	switch {
	case now.Before(r.StartsAt):
		return "upcoming (starts " + stamp(r.StartsAt) + ")"
	case now.Before(r.EndsAt):
		return "running (ends " + stamp(r.EndsAt) + ")"
	case now.Before(r.GraceEndsAt):
		return "in its grace (until " + stamp(r.GraceEndsAt) + ")"
	}
	return "due: waiting for completeThrough to reach its end"
}

// winners lists a final round's rewards, ": overall_pnl SP…, …".
func winners(d store.RoundDetail) string {
	if len(d.Rewards) == 0 {
		return ": no results"
	}
	var w []string
	for _, r := range d.Rewards {
		w = append(w, r.Category+" "+r.STXAddress)
	}
	return fmt.Sprintf(" (%d results): %s", len(d.Results), strings.Join(w, ", "))
}
