package aibtc

// The contract's error bodies. Each shape is one the landing page answers
// and the client's documentation promises; retryable is always written
// where the contract has it, false included.

// BadRequest is a 400: a malformed parameter or body.
type BadRequest struct {
	Error   string `json:"error"`
	Example string `json:"example,omitempty"`
}

// Refusal is a 404 or 422 of the submit route: code is a rejection reason
// of SPEC §5.5 (the landing page's own codes).
type Refusal struct {
	Error     string `json:"error"`
	Code      string `json:"code"`
	Retryable bool   `json:"retryable"`
}

// CodeAlreadyVerified is the 409 of a txid the ledger already holds.
const CodeAlreadyVerified = "txid_already_verified"

// Conflict is the 409: the txid is already in the ledger, as this row.
type Conflict struct {
	Error       string `json:"error"`
	Code        string `json:"code"`
	Retryable   bool   `json:"retryable"`
	ExistingRow *Row   `json:"existing_row"`
}

// Accepted is the 202 of a transaction still pending.
type Accepted struct {
	Accepted bool   `json:"accepted"`
	Note     string `json:"note"`
}

// Limited is a 429: the client's own limit (or the fast path's share of
// the upstream budget) is spent; RetryAfter is in seconds, as the
// Retry-After header.
type Limited struct {
	Error      string `json:"error"`
	RetryAfter int64  `json:"retryAfter"`
}

// Unavailable is a 503 (and, with code tx_fetch_failed, a 502): retry
// after RetryAfter seconds, as the Retry-After header.
type Unavailable struct {
	Error      string `json:"error"`
	Code       string `json:"code"`
	Retryable  bool   `json:"retryable"`
	RetryAfter int64  `json:"retry_after,omitempty"`
}

// Codes of the 503s pacer adds to the landing page's db_unavailable.
const (
	CodeDBUnavailable = "db_unavailable"
	// CodeBusy is the fast path's process-wide cap, or the public reads'.
	CodeBusy = "busy"
)

// NotFound is the rounds routes' 404.
type NotFound struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}
