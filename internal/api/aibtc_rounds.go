package api

import (
	"context"
	"net/http"
	"regexp"

	"github.com/pacer-dev/pacer/internal/api/aibtc"
	"github.com/pacer-dev/pacer/internal/registry"
)

// RoundsReader reads finalized rounds (SPEC §13) for the landing page's
// rounds routes and the status's latestRoundResult. A round that is not
// finalized is not found: rounds in flight stay private.
type RoundsReader interface {
	// Rounds lists finalized rounds, newest first.
	Rounds(ctx context.Context, limit, offset int) ([]aibtc.Round, error)
	// Round is one finalized round with its results by rank and its
	// rewards; found is false for an unknown or unfinalized round.
	Round(ctx context.Context, id string) (d aibtc.RoundDetail, found bool, err error)
	// Result is one agent's result in a finalized round; placed is false
	// when the agent has none there.
	Result(ctx context.Context, id, stx string) (res aibtc.Result, placed bool, err error)
	// LatestResult is the agent's result in the newest finalized round it
	// placed in.
	LatestResult(ctx context.Context, stx string) (res aibtc.Result, placed bool, err error)
}

// noRounds is the rounds of a deployment that has finalized none.
type noRounds struct{}

func (noRounds) Rounds(context.Context, int, int) ([]aibtc.Round, error) { return nil, nil }
func (noRounds) Round(context.Context, string) (aibtc.RoundDetail, bool, error) {
	return aibtc.RoundDetail{}, false, nil
}
func (noRounds) Result(context.Context, string, string) (aibtc.Result, bool, error) {
	return aibtc.Result{}, false, nil
}
func (noRounds) LatestResult(context.Context, string) (aibtc.Result, bool, error) {
	return aibtc.Result{}, false, nil
}

// rounds is Options.Rounds, else none.
func (s *Server) rounds() RoundsReader {
	if s.o.Rounds != nil {
		return s.o.Rounds
	}
	return noRounds{}
}

// roundID is SPEC §13's round id: anything else names no round.
var roundID = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)

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
	rounds, err := s.rounds().Rounds(r.Context(), limit+1, offset)
	if err != nil {
		s.aibtcUnavailable(w, err)
		return
	}
	resp := aibtc.Rounds{Rounds: rounds, Pagination: aibtc.Pagination{Limit: limit, Offset: offset, HasMore: len(rounds) > limit}}
	if resp.Pagination.HasMore {
		resp.Rounds = rounds[:limit]
	}
	if resp.Rounds == nil {
		resp.Rounds = []aibtc.Round{}
	}
	s.writeRead(w, r, resp, RoundsMaxAge)
}

// maxRoundsOffset bounds offset= (a round a week for a thousand years).
const maxRoundsOffset = 1 << 20

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
	d, found, err := s.rounds().Round(r.Context(), id)
	switch {
	case err != nil:
		s.aibtcUnavailable(w, err)
	case !found:
		roundNotFound(w)
	default:
		if d.Results == nil {
			d.Results = []aibtc.Result{}
		}
		if d.Rewards == nil {
			d.Rewards = []aibtc.Reward{}
		}
		s.writeRead(w, r, d, RoundsMaxAge)
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
	ctx := r.Context()
	// The round first: a round in flight must not show that an agent has
	// a result in it.
	if _, found, err := s.rounds().Round(ctx, id); err != nil || !found {
		if err != nil {
			s.aibtcUnavailable(w, err)
			return
		}
		roundNotFound(w)
		return
	}
	res, placed, err := s.rounds().Result(ctx, id, stx)
	switch {
	case err != nil:
		s.aibtcUnavailable(w, err)
	case !placed:
		writeJSON(w, http.StatusNotFound, aibtc.NotFound{Error: aibtc.CodeAgentNotPlaced,
			Message: "the agent has no result in this round"})
	default:
		s.writeRead(w, r, aibtc.AgentResult{RoundID: id, Result: res}, RoundsMaxAge)
	}
}
