package competition

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
)

func TestAllReasonsInSpecOrder(t *testing.T) {
	t.Parallel()
	want := []Reason{
		"sender_not_registered", "sender_not_genesis", "contract_not_allowlisted",
		"tx_not_found", "tx_fetch_failed", "tx_failed", "before_comp_start",
		"malformed_tx", "invalid_amount", "incomplete_events", "not_canonical",
		"db_unavailable", "verify_threw",
	}
	require.Equal(t, want, AllReasons())

	AllReasons()[0] = "changed"
	require.Equal(t, want, AllReasons(), "callers cannot change the list")
}

func TestReasonValid(t *testing.T) {
	t.Parallel()

	tests := []struct {
		give Reason
		want bool
	}{
		{give: ReasonVerifyThrew, want: true},
		{give: ReasonSenderNotRegistered, want: true},
		{give: "no_transfer_events", want: false},
		{give: "", want: false},
	}
	for _, tt := range tests {
		t.Run(string(tt.give), func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.give.Valid())
		})
	}
}

func TestReasonFinal(t *testing.T) {
	t.Parallel()
	notFinal := map[Reason]bool{
		ReasonTxNotFound: true, ReasonTxFetchFailed: true, ReasonDBUnavailable: true, ReasonVerifyThrew: true,
	}
	for _, r := range AllReasons() {
		require.Equal(t, !notFinal[r], r.Final(), string(r))
	}
	require.False(t, Reason("no_transfer_events").Final(), "an unknown reason is never kept")
}

func TestRejectionReasons(t *testing.T) {
	t.Parallel()

	allZero := map[string]int{
		"sender_not_registered": 0, "sender_not_genesis": 0, "contract_not_allowlisted": 0,
		"tx_not_found": 0, "tx_fetch_failed": 0, "tx_failed": 0, "before_comp_start": 0,
		"malformed_tx": 0, "invalid_amount": 0, "incomplete_events": 0, "not_canonical": 0,
		"db_unavailable": 0, "verify_threw": 0,
	}
	with := func(changes map[string]int) map[string]int {
		m := map[string]int{}
		for k, v := range allZero {
			m[k] = v
		}
		for k, v := range changes {
			m[k] = v
		}
		return m
	}

	tests := []struct {
		name       string
		giveCounts map[Reason]int
		wantMap    map[string]int
	}{
		{name: "nil gives every key at zero", giveCounts: nil, wantMap: allZero},
		{
			name:       "counts are carried",
			giveCounts: map[Reason]int{ReasonTxFailed: 3, ReasonVerifyThrew: 1},
			wantMap:    with(map[string]int{"tx_failed": 3, "verify_threw": 1}),
		},
		{
			name:       "unknown keys do not leak into the contract",
			giveCounts: map[Reason]int{"no_transfer_events": 2, ReasonMalformedTx: 1},
			wantMap:    with(map[string]int{"malformed_tx": 1}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.wantMap, RejectionReasons(tt.giveCounts))
		})
	}
}

func TestOutcomeAddsToASweepResult(t *testing.T) {
	t.Parallel()
	var r pacer.SweepResult
	limited := &fault.Error{Class: pacer.ClassRateLimit, Op: "hiro", Err: errors.New("429")}
	for _, o := range []Outcome{
		{Status: StatusInserted},
		{Status: StatusAlreadyKnown},
		{Status: StatusPending},
		{Status: StatusRejected, Reason: ReasonTxFailed},
		{Status: StatusRejected, Reason: ReasonTxFetchFailed, Err: limited},
		{Status: StatusRejected, Reason: ReasonTxFailed},
	} {
		o.AddTo(&r)
	}
	want := pacer.SweepResult{Found: 6, Inserted: 1, AlreadyKnown: 1, Pending: 1, Rejected: 3,
		RejectionReasons: map[string]int{"tx_failed": 2, "tx_fetch_failed": 1}}
	want.Run.Rejected, want.UpstreamFailed = 1, 1 // the rate limit's class
	require.Equal(t, want, r)
}
