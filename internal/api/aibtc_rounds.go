package api

import (
	"net/http"
	"regexp"

	"github.com/pacer-dev/pacer/internal/api/aibtc"
	"github.com/pacer-dev/pacer/internal/registry"
)

// The landing page's rounds routes (SPEC §7.1, §13), over the store's
// public reads of finalized rounds: a round not yet final is not found, so
// rounds in flight stay private.

// roundID is SPEC §13's round id: anything else names no round.
var roundID = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)

// maxRoundsOffset bounds offset= (a round a week for twenty thousand years).
const maxRoundsOffset = 1 << 20

func (s *Server) aibtcRounds(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := clampedInt(q.Get("limit"), aibtc.DefaultRoundsLimit, 1, aibtc.MaxRoundsLimit)
	if !ok {
		writeJSON(w, http.StatusBadRequest, aibtc.BadRequest{Error: "invalid limit: expected an integer in [1, 100]"})
		return
	}
	offset, ok := clampedInt(q.Get("offset"), 0, 0, maxRoundsOffset)
	if !ok {
		writeJSON(w, http.StatusBadRequest, aibtc.BadRequest{Error: "invalid offset: expected a non-negative integer"})
		return
	}
	rounds, more, err := s.reads().FinalRounds(r.Context(), limit, offset)
	if err != nil {
		s.aibtcUnavailable(w, err)
		return
	}
	resp := aibtc.Rounds{Rounds: make([]aibtc.Round, len(rounds)), Pagination: aibtc.Pagination{Limit: limit, Offset: offset, HasMore: more}}
	for i, rd := range rounds {
		resp.Rounds[i] = aibtc.FromRound(rd)
	}
	s.writeRead(w, r, resp, RoundsMaxAge)
}

func roundNotFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, aibtc.NotFound{Error: aibtc.CodeRoundNotFound,
		Message: "no such round, or not finalized yet: only finalized rounds are public"})
}

func (s *Server) aibtcRound(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("roundId")
	if !roundID.MatchString(id) {
		roundNotFound(w)
		return
	}
	d, found, err := s.reads().FinalRound(r.Context(), id)
	switch {
	case err != nil:
		s.aibtcUnavailable(w, err)
	case !found:
		roundNotFound(w)
	default:
		s.writeRead(w, r, aibtc.FromDetail(d), RoundsMaxAge)
	}
}

func (s *Server) aibtcResult(w http.ResponseWriter, r *http.Request) {
	id, stx := r.PathValue("roundId"), r.PathValue("stxAddress")
	if registry.CheckSTX(stx) != nil {
		writeJSON(w, http.StatusBadRequest, aibtc.BadRequest{
			Error: "invalid stxAddress: expected a Stacks mainnet address (SP… or SM…)"})
		return
	}
	if !roundID.MatchString(id) {
		roundNotFound(w)
		return
	}
	res, roundFound, err := s.reads().FinalRoundResult(r.Context(), id, stx)
	switch {
	case err != nil:
		s.aibtcUnavailable(w, err)
	case !roundFound:
		roundNotFound(w)
	case res == nil:
		writeJSON(w, http.StatusNotFound, aibtc.NotFound{Error: aibtc.CodeAgentNotPlaced,
			Message: "the agent has no result in this round"})
	default:
		s.writeRead(w, r, aibtc.AgentResult{RoundID: id, Result: aibtc.FromResult(*res)}, RoundsMaxAge)
	}
}
