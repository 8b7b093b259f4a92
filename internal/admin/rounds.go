package admin

import (
	"net/http"
	"time"

	"github.com/pacer-dev/pacer/internal/operate"
)

// roundRequest is PUT /api/admin/rounds/{id}'s body: the window (RFC3339),
// optionally the grace (a Go duration; default PACER_ROUND_GRACE) and the
// floors (defaults 50 USD, 3 priced trades).
type roundRequest struct {
	StartsAt            string   `json:"startsAt"`
	EndsAt              string   `json:"endsAt"`
	Grace               *string  `json:"grace"`
	MinVolumeUSD        *float64 `json:"minVolumeUsd"`
	MinPricedTradeCount *int     `json:"minPricedTradeCount"`
}

// putRound adds a round or changes one not yet finalized (SPEC §13),
// audited as the token's name: 201 when added, 200 when changed, 400 for
// bad input, 409 for a finalized round (left as it is).
func (h *handler) putRound(w http.ResponseWriter, r *http.Request) {
	var in roundRequest
	if !h.decode(w, r, &in, false) {
		return
	}
	ri := operate.RoundInput{ID: r.PathValue("id"), MinVolumeUSD: in.MinVolumeUSD, MinPricedTradeCount: in.MinPricedTradeCount}
	var ok bool
	for _, f := range []struct {
		raw, name string
		to        *time.Time
	}{{in.StartsAt, "startsAt", &ri.StartsAt}, {in.EndsAt, "endsAt", &ri.EndsAt}} {
		if f.raw == "" {
			writeError(w, http.StatusBadRequest, f.name+": required (RFC3339)")
			return
		}
		if *f.to, ok = timeParam(w, f.raw, f.name); !ok {
			return
		}
	}
	if in.Grace != nil {
		g, err := time.ParseDuration(*in.Grace)
		if err != nil {
			writeError(w, http.StatusBadRequest, "grace: want a Go duration, like 1h or 30m")
			return
		}
		ri.Grace = &g
	}
	round, created, err := h.op.PutRound(r.Context(), ri)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	h.reply(w, r, status, map[string]any{"round": round, "created": created}, err)
}
