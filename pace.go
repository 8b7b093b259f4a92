package pacer

import (
	"encoding/json"
	"regexp"
)

// A paced task (tenero, sweep) is paced by its activity (SPEC §3.8): the
// workflow carries the adaptive controller's state without reading it,
// hands it to each run with the bounds its config sets, and stores what
// the run returns. Changing the controller is then an activity change,
// which no history replays.

// PaceInput is what a paced run is given to pace itself.
type PaceInput struct {
	// State is the controller's state as the last run left it (empty on
	// the first run: a new controller).
	State json.RawMessage `json:"state,omitempty"`
	// Cadence is the task's configured interval, the fastest it may run;
	// LastCadence the one State was bounded by (a reconfigure changed it
	// when they differ).
	Cadence     Duration `json:"cadence"`
	LastCadence Duration `json:"lastCadence,omitempty"`
	// Tune is an operator's tune or reset the run applies first.
	Tune *PaceTune `json:"tune,omitempty"`
}

// PaceTune is an operator's tune (batch, interval, 0 = unchanged) or reset.
type PaceTune struct {
	Reset    bool     `json:"reset,omitempty"`
	Batch    int      `json:"batch,omitempty"`
	Interval Duration `json:"interval,omitempty"`
}

// Pace is what a paced run returns: the controller's new state, the
// interval to the next run (it starts no sooner), and the pacing the
// status document shows.
type Pace struct {
	State   json.RawMessage `json:"state"`
	Cadence Duration        `json:"cadence"`
	Every   Duration        `json:"every"`
	Status  PaceStatus      `json:"status"`
}

// PaceZone is where the controller's success rate puts a task.
type PaceZone string

// PaceStatus is a task's pacing in the status document, as its last run
// decided it; durations are Go duration text, as the document's "every" is.
type PaceStatus struct {
	Zone PaceZone `json:"zone"`
	// Batch is 0 (and absent) for a task without one: the sweep.
	Batch    int    `json:"batch,omitempty"`
	Interval string `json:"interval"`
	// CooldownRemaining is "0s" outside the cooldown zone.
	CooldownRemaining string `json:"cooldownRemaining"`
	// SuccessRate over the window's Samples outcomes, with its 95% Wilson
	// interval [SuccessLow, SuccessHigh] as the confidence.
	SuccessRate float64 `json:"successRate"`
	Samples     int     `json:"samples"`
	SuccessLow  float64 `json:"successLow"`
	SuccessHigh float64 `json:"successHigh"`
	// CompletionsPerMinute is the successes per minute over the window.
	CompletionsPerMinute float64 `json:"completionsPerMinute"`
	// RunsPerDay and ProjectedPerDay are where the decision leads: runs a
	// day, and items completed a day (absent without a batch). (The
	// upstream's budget is Postgres's, SPEC §5.4: the operator's page
	// shows it.)
	RunsPerDay      float64 `json:"runsPerDay"`
	ProjectedPerDay float64 `json:"projectedPerDay,omitempty"`
	// ActionsPerDay is the Temporal actions the task costs a day at this
	// pace, with runs lasting the last run's duration.
	ActionsPerDay float64 `json:"actionsPerDay"`
	// HeldBy names what set Interval when the controller's own would be
	// faster: "month" (the month's remaining requests paced to its end,
	// SPEC §4.7); empty when the controller's interval stands.
	HeldBy string `json:"heldBy,omitempty"`
}

// PrincipalPattern is the principal of a token id as SPEC §4.1 states it:
// the version letter (P/M mainnet, T/N testnet) and 38 to 40 characters of
// c32 (Crockford base 32: digits and upper case letters without I, L, O,
// U).
const PrincipalPattern = `S[PMTN][0-9A-HJKMNP-TV-Z]{38,40}`

// principal is an agent's address: any length c32check gives a standard
// principal. It writes each leading zero byte of the 24 (hash and
// checksum) as one '0' and the rest as a number without leading zeros, so
// the length after the version runs from 27 (SP000000000000000000002Q6VF78,
// the boot address) to 39: a hash whose first byte is below 8 has 37
// (about 3 % of addresses), which PrincipalPattern would refuse.
var principal = regexp.MustCompile(`^S[PMTN][0-9A-HJKMNP-TV-Z]{27,40}$`)

// ValidPrincipal reports whether s is a standard Stacks principal (an
// agent's address).
func ValidPrincipal(s string) bool { return principal.MatchString(s) }
