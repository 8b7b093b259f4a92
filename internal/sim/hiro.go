package sim

import (
	"crypto/subtle"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Hiro's routes, as keyed in Stats.
const (
	HiroAddressTransactionsRoute = "GET /extended/v1/address/{principal}/transactions"
	HiroTxRoute                  = "GET /extended/v1/tx/{txid}"
)

// HiroConfig configures the Hiro simulation and the world it serves. The
// zero value is a 30-agent world around the default competition start, with
// Hiro's public limits.
type HiroConfig struct {
	// Agents is how many registered agents the world has. Default 30; a
	// world has at least 10, so that every outcome has an agent to happen on.
	Agents int
	// CompetitionStart is the first second whose swaps count. Default
	// DefaultCompetitionStart (COMPETITION_START's default).
	CompetitionStart time.Time
	// Origin is the world's present: swaps before it are history, later
	// ones arrive as the clock passes their time. Default: the clock's
	// time when New runs, so `pacer sim` shows swaps arriving. Set it for
	// a world that does not depend on when it was built.
	Origin time.Time
	// History is how far before Origin counted swaps reach (never before
	// CompetitionStart). Default 24 h.
	History time.Duration
	// Arrivals is how long after Origin (or CompetitionStart, if later)
	// new transactions keep arriving. Default 2 h.
	Arrivals time.Duration

	// Anonymous is the plan of requests without x-api-key, one budget per
	// client IP. Default 50/min and no month quota, type "ip".
	Anonymous Limits
	// Keyed is the plan of requests with x-api-key, one budget per key.
	// Default 500/min and 150,000/month, type "key".
	Keyed Limits
	// APIKeys, when set, are the only keys accepted; any other key gets a
	// 401. Empty accepts every key.
	APIKeys []string
	// Retired makes the deprecated v1 list endpoint answer 410 Gone, as
	// Hiro may once it switches it off (SPEC §9).
	Retired bool
}

// noMonthQuota stands for an unlimited month: Hiro's anonymous plan has none,
// and the shared limiter needs a number.
const noMonthQuota = math.MaxInt32

var (
	defaultHiroAnonymous = Limits{PerMinute: 50, PerMonth: noMonthQuota, Type: "ip"}
	defaultHiroKeyed     = Limits{PerMinute: 500, PerMonth: 150_000, Type: "key"}
)

// withDefaults fills the zero fields; origin is the clock's time at New.
func (c HiroConfig) withDefaults(origin time.Time) HiroConfig {
	if c.Agents <= 0 {
		c.Agents = DefaultAgents
	}
	if c.CompetitionStart.IsZero() {
		c.CompetitionStart = DefaultCompetitionStart
	}
	if c.Origin.IsZero() {
		c.Origin = origin
	}
	// Burn block times are whole seconds; so is every time of the world.
	c.CompetitionStart = c.CompetitionStart.Truncate(time.Second).UTC()
	c.Origin = c.Origin.Truncate(time.Second).UTC()
	if c.History <= 0 {
		c.History = defaultHistory
	}
	if c.Arrivals <= 0 {
		c.Arrivals = defaultArrivals
	}
	c.Anonymous = c.Anonymous.withDefaults(defaultHiroAnonymous)
	c.Keyed = c.Keyed.withDefaults(defaultHiroKeyed)
	return c
}

type hiroSim struct {
	world     *World
	anonymous *limiter
	keyed     *limiter
	apiKeys   []string
	retired   bool
}

// newHiroSim builds the world of seed from the Tenero world's tokens, so the
// tokens agents trade are ones the price refresh can look up.
func newHiroSim(seed int64, cfg HiroConfig, s *Server) *hiroSim {
	cfg = cfg.withDefaults(s.now())
	price := func(t Token, at time.Time) float64 {
		if p, ok := s.PriceAt(t.Address, at); ok {
			if f, err := strconv.ParseFloat(p, 64); err == nil && f > 0 {
				return f
			}
		}
		return fallbackPrice(t)
	}
	return &hiroSim{
		world:     newWorld(seed, cfg, s.Tokens(), price),
		anonymous: newLimiter(cfg.Anonymous),
		keyed:     newLimiter(cfg.Keyed),
		apiKeys:   cfg.APIKeys,
		retired:   cfg.Retired,
	}
}

// World returns the world the Hiro simulation serves.
func (s *Server) World() *World { return s.hiro.world }

// worldDoc is GET /_sim/world: the whole world, for people poking at
// `pacer sim`.
type worldDoc struct {
	CompetitionStart time.Time `json:"competitionStart"`
	Origin           time.Time `json:"origin"`
	Now              time.Time `json:"now"`
	Agents           []Agent   `json:"agents"`
	Claims           []Claim   `json:"claims"`
	Transactions     []WorldTx `json:"transactions"`
	// Outcomes are the verdicts at Now, keyed by txid.
	Outcomes map[string]Outcome `json:"outcomes"`
}

func (s *Server) getWorld(w http.ResponseWriter, _ *http.Request) {
	world, now := s.hiro.world, s.now()
	writeJSON(w, http.StatusOK, worldDoc{
		CompetitionStart: world.CompetitionStart(),
		Origin:           world.Origin(),
		Now:              now.UTC(),
		Agents:           world.Agents(),
		Claims:           world.Claims(),
		Transactions:     world.Transactions(),
		Outcomes:         world.ExpectedOutcomes(now),
	})
}

// Hiro's list page size: the default and the most it accepts (SPEC §9).
const (
	hiroDefaultLimit = 20
	hiroMaxLimit     = 50
)

// deprecationWarning is what Hiro sends on its deprecated v1 list endpoints.
const deprecationWarning = `299 - "Deprecated: this endpoint is deprecated and will be removed; use /extended/v2/addresses/{address}/transactions instead"`

// principalPattern accepts a standard principal or a contract id, the two
// things Hiro lists transactions for. c32check writes each leading zero byte
// of the hash as one '0', so real addresses can be much shorter than the
// ones the simulator generates: SP000000000000000000002Q6VF78 is the burn
// address.
var principalPattern = regexp.MustCompile(`^S[PMTN][0-9A-HJKMNP-TV-Z]{26,41}(\.[A-Za-z][A-Za-z0-9_-]{0,127})?$`)

// txidPattern is a transaction id with or without its 0x.
var txidPattern = regexp.MustCompile(`^(0x)?[0-9a-fA-F]{64}$`)

type txListJSON struct {
	Limit   int      `json:"limit"`
	Offset  int      `json:"offset"`
	Total   int      `json:"total"`
	Results []txJSON `json:"results"`
}

// hiroAddressTransactions serves an address's transactions, newest first.
// Unlike Hiro, which lists mempool transactions on a separate endpoint, the
// list shows pending and dropped ones too, so that a sweep meets the
// pending and tx_failed paths of SPEC §5.5.
func (s *Server) hiroAddressTransactions(w http.ResponseWriter, r *http.Request) {
	if s.hiro.retired {
		writeError(w, http.StatusGone, "this endpoint has been removed; use /extended/v2/addresses/{address}/transactions")
		return
	}
	principal := r.PathValue("principal")
	if !principalPattern.MatchString(principal) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("invalid principal %q", principal))
		return
	}
	q := r.URL.Query()
	limit, err := queryInt(q, "limit", hiroDefaultLimit)
	if err == nil && limit > hiroMaxLimit {
		err = fmt.Errorf("querystring/limit must be <= %d", hiroMaxLimit)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	offset, err := queryInt(q, "offset", 0)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}

	now := s.now()
	listed := s.hiro.world.listed(principal, now)
	page := listed[min(offset, len(listed)):min(offset+limit, len(listed))]
	results := make([]txJSON, len(page))
	for i, tx := range page {
		// List results never carry events; event_count still tells how many.
		results[i] = tx.render(now, false)
	}
	w.Header().Set("Warning", deprecationWarning)
	writeJSON(w, http.StatusOK, txListJSON{Limit: limit, Offset: offset, Total: len(listed), Results: results})
}

// queryInt reads a non-negative integer parameter; absent means def. The
// message is worded the way Hiro's request validation words it.
func queryInt(q url.Values, name string, def int) (int, error) {
	s := q.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("querystring/%s must be a non-negative integer", name)
	}
	return n, nil
}

func (s *Server) hiroTx(w http.ResponseWriter, r *http.Request) {
	raw := r.PathValue("txid")
	if !txidPattern.MatchString(raw) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("invalid tx_id %q", raw))
		return
	}
	txid := "0x" + strings.ToLower(strings.TrimPrefix(raw, "0x"))
	now := s.now()
	tx, ok := s.hiro.world.tx(txid, now)
	if ok && tx.detail == detailFails {
		writeError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	if !ok || tx.detail == detailNotFound {
		writeJSON(w, http.StatusNotFound, struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}{"could not find transaction by ID", "could not find transaction by ID " + txid})
		return
	}
	writeJSON(w, http.StatusOK, tx.render(now, true))
}

// Hiro's rate-limit headers (SPEC §5.8).
const (
	hiroHeaderLimit           = "ratelimit-limit"
	hiroHeaderRemaining       = "ratelimit-remaining"
	hiroHeaderReset           = "ratelimit-reset"
	hiroHeaderMinuteLimit     = "x-ratelimit-limit-stacks-minute"
	hiroHeaderMinuteRemaining = "x-ratelimit-remaining-stacks-minute"
	hiroHeaderMonthLimit      = "x-ratelimit-limit-stacks-month"
	hiroHeaderMonthRemaining  = "x-ratelimit-remaining-stacks-month"
)

// hiroLimit spends the caller's budget and sends Hiro's headers, with a 429
// and retry-after once it is gone. The month headers come only with a plan
// that has a month quota, as Hiro sends them to keyed callers only.
func (s *Server) hiroLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lim, caller := s.hiro.anonymous, "ip:"+clientIP(r)
		if key := r.Header.Get("x-api-key"); key != "" {
			if !s.hiro.validKey(key) {
				writeError(w, http.StatusUnauthorized, "Invalid API key")
				return
			}
			lim, caller = s.hiro.keyed, "key:"+key
		}
		now := s.now()
		d := lim.take(caller, now)
		h := w.Header()
		perMinute := strconv.Itoa(lim.limits.PerMinute)
		h.Set(hiroHeaderLimit, perMinute)
		h.Set(hiroHeaderRemaining, strconv.Itoa(d.minuteRemaining))
		h.Set(hiroHeaderReset, strconv.FormatInt(retryAfterSeconds(now.Truncate(time.Minute).Add(time.Minute).Sub(now)), 10))
		h.Set(hiroHeaderMinuteLimit, perMinute)
		h.Set(hiroHeaderMinuteRemaining, strconv.Itoa(d.minuteRemaining))
		if lim.limits.PerMonth < noMonthQuota {
			h.Set(hiroHeaderMonthLimit, strconv.Itoa(lim.limits.PerMonth))
			h.Set(hiroHeaderMonthRemaining, strconv.Itoa(d.monthRemaining))
		}
		if !d.allowed {
			h.Set("retry-after", strconv.FormatInt(retryAfterSeconds(d.retryAfter), 10))
			writeError(w, http.StatusTooManyRequests, "Too Many Requests")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (h *hiroSim) validKey(key string) bool {
	if len(h.apiKeys) == 0 {
		return true
	}
	for _, k := range h.apiKeys {
		if subtle.ConstantTimeCompare([]byte(k), []byte(key)) == 1 {
			return true
		}
	}
	return false
}

// The JSON of a Hiro transaction: the fields of the real API that a client
// might read, mined and mempool shapes alike.

type txJSON struct {
	TxID              string `json:"tx_id"`
	Nonce             int    `json:"nonce"`
	FeeRate           string `json:"fee_rate"`
	SenderAddress     string `json:"sender_address"`
	Sponsored         bool   `json:"sponsored"`
	PostConditionMode string `json:"post_condition_mode"`
	PostConditions    []any  `json:"post_conditions"`
	AnchorMode        string `json:"anchor_mode"`
	TxStatus          string `json:"tx_status"`
	TxType            string `json:"tx_type"`
	// Exactly one of the two is set.
	*minedJSON
	*mempoolJSON
	Events        []eventJSON        `json:"events"`
	ContractCall  *contractCallJSON  `json:"contract_call,omitempty"`
	TokenTransfer *tokenTransferJSON `json:"token_transfer,omitempty"`
	SmartContract *smartContractJSON `json:"smart_contract,omitempty"`
}

type minedJSON struct {
	BlockHash        string       `json:"block_hash"`
	BlockHeight      int64        `json:"block_height"`
	BlockTime        int64        `json:"block_time"`
	BlockTimeISO     string       `json:"block_time_iso"`
	BurnBlockTime    int64        `json:"burn_block_time"`
	BurnBlockTimeISO string       `json:"burn_block_time_iso"`
	BurnBlockHeight  int64        `json:"burn_block_height"`
	Canonical        bool         `json:"canonical"`
	TxIndex          int          `json:"tx_index"`
	TxResult         clarityValue `json:"tx_result"`
	EventCount       int          `json:"event_count"`
}

type mempoolJSON struct {
	ReceiptTime    int64  `json:"receipt_time"`
	ReceiptTimeISO string `json:"receipt_time_iso"`
}

type clarityValue struct {
	Hex  string `json:"hex"`
	Repr string `json:"repr"`
}

type contractCallJSON struct {
	ContractID        string            `json:"contract_id"`
	FunctionName      string            `json:"function_name"`
	FunctionSignature string            `json:"function_signature"`
	FunctionArgs      []functionArgJSON `json:"function_args"`
}

// functionArgJSON leaves out Hiro's hex: nothing in pacer reads it, and
// encoding principals would need real c32check addresses.
type functionArgJSON struct {
	Repr string `json:"repr"`
	Name string `json:"name"`
	Type string `json:"type"`
}

type tokenTransferJSON struct {
	RecipientAddress string `json:"recipient_address"`
	Amount           string `json:"amount"`
	Memo             string `json:"memo"`
}

type smartContractJSON struct {
	ClarityVersion int    `json:"clarity_version"`
	ContractID     string `json:"contract_id"`
	SourceCode     string `json:"source_code"`
}

type eventJSON struct {
	EventIndex  int              `json:"event_index"`
	EventType   string           `json:"event_type"`
	TxID        string           `json:"tx_id,omitempty"`
	Asset       *assetJSON       `json:"asset,omitempty"`
	ContractLog *contractLogJSON `json:"contract_log,omitempty"`
}

type assetJSON struct {
	AssetEventType string `json:"asset_event_type"`
	AssetID        string `json:"asset_id,omitempty"`
	Sender         string `json:"sender"`
	Recipient      string `json:"recipient"`
	Amount         string `json:"amount"`
}

type contractLogJSON struct {
	ContractID string       `json:"contract_id"`
	Topic      string       `json:"topic"`
	Value      clarityValue `json:"value"`
}

// transferEvent is a transfer of token as Hiro reports it: STX as stx_asset
// without an asset id, anything else as a fungible token.
func transferEvent(token, sender, recipient, amount string) eventJSON {
	e := eventJSON{EventType: "stx_asset", Asset: &assetJSON{
		AssetEventType: "transfer", Sender: sender, Recipient: recipient, Amount: amount,
	}}
	if token != "stx" {
		e.EventType, e.Asset.AssetID = "fungible_token_asset", token
	}
	return e
}

// printEvent is the log a swap contract prints: its function name, as a
// Clarity string-ascii (type 0x0d, 4-byte length, the bytes).
func printEvent(contract, text string) eventJSON {
	return eventJSON{EventType: "smart_contract_log", ContractLog: &contractLogJSON{
		ContractID: contract,
		Topic:      "print",
		Value:      clarityValue{Hex: fmt.Sprintf("0x0d%08x%x", len(text), text), Repr: strconv.Quote(text)},
	}}
}

// clarityErrUint is (err uN), the result of a contract call that aborted.
func clarityErrUint(n uint64) clarityValue {
	return clarityValue{Hex: fmt.Sprintf("0x0801%032x", n), Repr: fmt.Sprintf("(err u%d)", n)}
}

func numberEvents(events []eventJSON) {
	for i := range events {
		events[i].EventIndex = i
	}
}

func newContractCall(contract, function string, args []functionArgJSON) *contractCallJSON {
	params := make([]string, len(args))
	for i, a := range args {
		params[i] = "(" + a.Name + " " + a.Type + ")"
	}
	return &contractCallJSON{
		ContractID:        contract,
		FunctionName:      function,
		FunctionSignature: "(define-public (" + function + " " + strings.Join(params, " ") + "))",
		FunctionArgs:      args,
	}
}

// Block numbers follow the clock from a fixed point: a Bitcoin block every
// ten minutes, a Stacks block every five seconds.
const (
	heightEpoch     = 1_700_000_000
	burnHeightAt    = 818_000
	stacksHeightAt  = 130_000
	burnBlockPeriod = 600
	stacksPeriod    = 5
)

// render is the transaction as Hiro answers at at; withEvents false gives
// the list form, whose events are always empty.
func (tx *worldTx) render(at time.Time, withEvents bool) txJSON {
	status := tx.statusAt(at)
	out := txJSON{
		TxID:              tx.TxID,
		Nonce:             tx.nonce,
		FeeRate:           strconv.FormatInt(tx.feeRate, 10),
		SenderAddress:     tx.Sender,
		PostConditionMode: "deny",
		PostConditions:    []any{},
		AnchorMode:        "any",
		TxStatus:          status,
		TxType:            tx.txType,
		Events:            []eventJSON{},
		ContractCall:      tx.call,
		TokenTransfer:     tx.transfer,
		SmartContract:     tx.deploy,
	}
	if inMempool(status) {
		out.mempoolJSON = &mempoolJSON{ReceiptTime: tx.AppearsAt.Unix(), ReceiptTimeISO: isoTime(tx.AppearsAt)}
		return out
	}

	burn := tx.burnTime()
	// A transaction that did not succeed had its transfers rolled back.
	var events []eventJSON
	if status == "success" {
		events = tx.events
	}
	secs := burn.Unix() - heightEpoch
	blockTime := burn.Add(time.Duration(tx.txIndex%5) * time.Second)
	out.minedJSON = &minedJSON{
		BlockHash:        blockHash(secs / stacksPeriod),
		BlockHeight:      stacksHeightAt + secs/stacksPeriod,
		BlockTime:        blockTime.Unix(),
		BlockTimeISO:     isoTime(blockTime),
		BurnBlockTime:    burn.Unix(),
		BurnBlockTimeISO: isoTime(burn),
		BurnBlockHeight:  burnHeightAt + secs/burnBlockPeriod,
		Canonical:        true,
		TxIndex:          tx.txIndex,
		TxResult:         tx.result,
		EventCount:       len(events),
	}
	if withEvents {
		out.Events = make([]eventJSON, len(events))
		for i, e := range events {
			e.TxID = tx.TxID
			out.Events[i] = e
		}
	}
	return out
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// blockHash is a stable hash for a block height.
func blockHash(height int64) string {
	h := uint64(height)
	return fmt.Sprintf("0x%016x%016x%016x%016x", mix(h), mix(h^1), mix(h^2), mix(h^3))
}
