package sim

import (
	"cmp"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Hiro's routes, as keyed in Stats.
const (
	HiroAddressTransactionsRoute   = "GET /extended/v1/address/{principal}/transactions"
	HiroPrincipalTransactionsRoute = "GET /extended/v3/principals/{principal}/transactions"
	HiroTxRoute                    = "GET /extended/v1/tx/{txid}"
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
	// Sunset turns on the v9 API's sunset answers: every deprecated route
	// the simulator serves (SunsetRoutes) answers 410
	// {"error":"Gone","message":"This endpoint has been disabled. …"}
	// before doing anything, as the server does once
	// ENABLE_DEPRECATED_ENDPOINTS is off (src/api/deprecation-plugin.ts).
	// The request still counts against the limits: they are the gateway's.
	Sunset bool
	// NoV3 makes the current cursor endpoint
	// (/extended/v3/principals/{principal}/transactions) answer 404, as an
	// older server does.
	NoV3 bool
	// Costs is what a request of each route (a Hiro*Route) costs against
	// the quotas, sent as x-ratelimit-cost-stacks. Default 1 each.
	Costs map[string]int

	// Activity gives the genesis agents activity tiers, 5% hot, 15% warm,
	// 80% cold, with swap rates spread within each (Agent.Tier,
	// Agent.SwapsPerDay), and the busy agent bursts of hundreds of swaps;
	// their swaps keep arriving as long as the clock runs. Lists then grow
	// past one page: only a sweep that pages reads them whole.
	Activity bool
	// Features adds named transactions (see SweepFeatures).
	Features Features
	// Reorgs rolls blocks back and re-applies their transactions later.
	Reorgs Reorgs
	// Chain is the strangers' traffic in the same blocks (chain.go):
	// DefaultChainVolume calls a day unless set.
	Chain ChainConfig
}

var (
	defaultHiroAnonymous = Limits{PerMinute: 50, Type: "ip"} // no month quota
	defaultHiroKeyed     = Limits{PerMinute: 500, PerMonth: 150_000, Type: "key"}
)

// withDefaults fills the zero fields; origin is the clock's time at New.
func (c HiroConfig) withDefaults(origin time.Time) HiroConfig {
	c.Agents = cmp.Or(max(c.Agents, 0), DefaultAgents)
	// Block times are whole seconds; so is every time of the world.
	c.CompetitionStart = cmp.Or(c.CompetitionStart, DefaultCompetitionStart).Truncate(time.Second).UTC()
	c.Origin = cmp.Or(c.Origin, origin).Truncate(time.Second).UTC()
	c.History = cmp.Or(max(c.History, 0), defaultHistory)
	c.Arrivals = cmp.Or(max(c.Arrivals, 0), defaultArrivals)
	c.Anonymous = c.Anonymous.withDefaults(defaultHiroAnonymous)
	c.Keyed = c.Keyed.withDefaults(defaultHiroKeyed)
	return c
}

type hiroSim struct {
	world *World
	*plans
	cfg HiroConfig
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
		world: newWorld(seed, cfg, s.Tokens(), price),
		plans: newPlans(cfg.Anonymous, cfg.Keyed, cfg.APIKeys),
		cfg:   cfg,
	}
}

// World returns the world the Hiro simulation serves.
func (s *Server) World() *World { return s.hiro.world }

// worldDoc is GET /_sim/world: the whole world, for people poking at
// `pacer sim`, with the verdicts now keyed by txid, and the strangers'
// calls a day and how many have been mined by now (they are not among
// the transactions).
func (s *Server) worldDoc() any {
	world, now := s.hiro.world, s.now()
	return doc{
		"competitionStart": world.CompetitionStart(),
		"origin":           world.Origin(),
		"now":              now.UTC(),
		"agents":           world.Agents(),
		"claims":           world.claims,
		"transactions":     world.Transactions(),
		"outcomes":         world.ExpectedOutcomes(now),
		"chainVolume":      max(world.chain.cfg.Volume, 0),
		"strangerCalls":    world.StrangerCalls(now),
	}
}

// swapsDoc is GET /_sim/swaps: the oracle's side of a discovery-delay
// measurement for a test that runs the simulator out of process.
func (s *Server) swapsDoc() any {
	now := s.now()
	return doc{"now": now.UTC(), "swaps": s.hiro.world.SwapTimes(now)}
}

// Hiro's list page size: the default and the most it accepts (SPEC §9).
const (
	hiroDefaultLimit = 20
	hiroMaxLimit     = 50
)

// The v9 API's deprecation (src/api/deprecation-plugin.ts, init.ts): a
// deprecated route sends Warning: 299 with the default message, and once
// deprecated endpoints are off answers 410 with it.
const (
	deprecatedMessage  = "See https://docs.hiro.so/stacks/api for more information"
	deprecationWarning = `299 - "Deprecated: ` + deprecatedMessage + `"`
	// HiroV2AddressTransactionsRoute is served only to answer its sunset.
	HiroV2AddressTransactionsRoute = "GET /extended/v2/addresses/{address}/transactions"
)

// SunsetRoutes are the deprecated routes the simulator serves, as keyed
// in Stats: they send the deprecation warning, and answer 410 with Sunset.
var SunsetRoutes = []string{HiroAddressTransactionsRoute, HiroTxRoute, HiroTxListRoute, HiroV2AddressTransactionsRoute}

// deprecated serves a deprecated route: its sunset answer when Sunset is
// on, else h with the deprecation warning.
func (s *Server) deprecated(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.hiro.cfg.Sunset {
			writeJSON(w, http.StatusGone, doc{"error": "Gone", "message": "This endpoint has been disabled. " + deprecatedMessage})
			return
		}
		w.Header().Set("Warning", deprecationWarning)
		h(w, r)
	}
}

// principalPattern accepts a standard principal or a contract id, the two
// things Hiro lists transactions for. c32check writes each leading zero byte
// of the hash as one '0', so real addresses can be much shorter than the
// ones the simulator generates: SP000000000000000000002Q6VF78 is the burn
// address.
var principalPattern = regexp.MustCompile(`^S[PMTN][0-9A-HJKMNP-TV-Z]{26,41}(\.[A-Za-z][A-Za-z0-9_-]{0,127})?$`)

// txidPattern is a transaction id with or without its 0x.
var txidPattern = regexp.MustCompile(`^(0x)?[0-9a-fA-F]{64}$`)

// hiroAddressTransactions serves an address's transactions, newest first.
// Unlike Hiro, which lists mempool transactions on a separate endpoint, the
// list shows pending and dropped ones too, so that a sweep meets the
// pending and tx_failed paths of SPEC §5.5.
func (s *Server) hiroAddressTransactions(w http.ResponseWriter, r *http.Request) {
	principal, limit, offset, ok := listQuery(w, r, "offset")
	if !ok {
		return
	}
	writeList(w, s.hiro.world.principalList(principal, s.now()), limit, offset)
}

// principalList is a principal's list at at (listOf): an agent's
// transactions, or the calls made to a contract, strangers' included.
func (w *World) principalList(principal string, at time.Time) merged {
	if strings.Contains(principal, ".") {
		return w.chainList(principal, at, func(tx *worldTx) bool { return tx.call != nil && tx.call.ContractID == principal })
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.generate(principal, at)
	return listOf(w.lists[principal], at, nil)
}

// listQuery reads a principal's list route: its principal, then its page
// (pageQuery's limit, and offsetName's start when set), answering 400 at
// the first that is not one Hiro takes.
func listQuery(w http.ResponseWriter, r *http.Request, offsetName string) (principal string, limit, offset int, ok bool) {
	principal = r.PathValue("principal")
	if !principalPattern.MatchString(principal) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("invalid principal %q", principal))
		return "", 0, 0, false
	}
	limit, offset, ok = pageQuery(w, r.URL.Query(), "limit", hiroDefaultLimit, hiroMaxLimit, offsetName)
	return principal, limit, offset, ok
}

// pageQuery reads a page's size (def when absent, at most most) and, when
// offsetName is set, its start, answering 400 as Hiro does when they are
// not numbers it takes.
func pageQuery(w http.ResponseWriter, q url.Values, limitName string, def, most int, offsetName string) (limit, offset int, ok bool) {
	limit, err := queryInt(q, limitName, def)
	if err == nil && limit > most {
		err = fmt.Errorf("querystring/%s must be <= %d", limitName, most)
	}
	if err == nil && offsetName != "" {
		offset, err = queryInt(q, offsetName, 0)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
	}
	return limit, offset, err == nil
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

// Hiro's events paging on /tx/: 20 unless event_limit asks for more, at
// most 100 (SPEC §9).
const (
	hiroDefaultEventLimit = 20
	hiroMaxEventLimit     = 100
)

func (s *Server) hiroTx(w http.ResponseWriter, r *http.Request) {
	raw := r.PathValue("txid")
	if !txidPattern.MatchString(raw) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("invalid tx_id %q", raw))
		return
	}
	limit, offset, ok := pageQuery(w, r.URL.Query(), "event_limit", hiroDefaultEventLimit, hiroMaxEventLimit, "event_offset")
	if !ok {
		return
	}
	txid := "0x" + strings.ToLower(strings.TrimPrefix(raw, "0x"))
	now := s.now()
	tx, ok := s.hiro.world.tx(txid, now)
	if ok && tx.detail == detailFails {
		writeError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	if !ok {
		writeJSON(w, http.StatusNotFound, doc{"error": "could not find transaction by ID", "message": "could not find transaction by ID " + txid})
		return
	}
	s.trace.served(&s.trace.tr.Detail, false, tx)
	writeJSON(w, http.StatusOK, tx.render(now, eventWindow{offset: offset, limit: limit}))
}

// v3 cursor pages (SPEC §9): block_height:microblock_sequence:tx_index of
// the first entry of a page; anchored transactions have the largest
// microblock sequence.
const anchoredSequence = 2147483647

var v3CursorPattern = regexp.MustCompile(`^([0-9]{1,19}):([0-9]{1,19}):([0-9]{1,19})$`)

// hiroPrincipalTransactions serves the current cursor endpoint: mined,
// canonical transactions only, newest first by position, limit at most 50.
func (s *Server) hiroPrincipalTransactions(w http.ResponseWriter, r *http.Request) {
	if s.hiro.cfg.NoV3 {
		notFound(w, r)
		return
	}
	principal, limit, _, ok := listQuery(w, r, "")
	if !ok {
		return
	}
	if limit < 1 {
		writeError(w, http.StatusBadRequest, "querystring/limit must be >= 1")
		return
	}
	now := s.now()
	m := s.hiro.world.principalList(principal, now)
	// Mined, canonical transactions only.
	m.top, m.agents = nil, slices.DeleteFunc(m.agents, func(tx *worldTx) bool { return tx.fork })
	start := 0
	if c := r.URL.Query().Get("cursor"); c != "" {
		at := v3CursorPattern.FindStringSubmatch(c)
		if at == nil {
			writeError(w, http.StatusBadRequest, "querystring/cursor must match pattern \"^[0-9]+:[0-9]+:[0-9]+$\"")
			return
		}
		h, _ := strconv.ParseInt(at[1], 10, 64)
		i, _ := strconv.ParseInt(at[3], 10, 64)
		start = m.rankAt(position{height: h, index: i})
	}
	// Strangers' calls on a losing fork are passed over here (the total
	// still counts them: they are a few in a thousand).
	results, k := []doc{}, start
	for ; len(results) < limit && k < m.mined(); k++ {
		if tx := m.tx(m.items(k, 1)[0]); !tx.fork {
			results = append(results, tx.renderV3(principal, now))
		}
	}
	cursorOf := func(i int) *string {
		its := m.items(i, 1)
		if len(its) == 0 {
			return nil
		}
		p := m.position(its[0])
		return new(fmt.Sprintf("%d:%d:%d", p.height, anchoredSequence, p.index))
	}
	var previous *string
	if start > 0 {
		previous = cursorOf(max(0, start-limit))
	}
	writeJSON(w, http.StatusOK, doc{"limit": limit, "total": m.mined(), "results": results,
		"cursor": doc{"next": cursorOf(k), "previous": previous, "current": cursorOf(start)}})
}

// renderV3 is a mined transaction as the v3 summaries show it: its v1
// rendering, reshaped.
func (tx *worldTx) renderV3(principal string, at time.Time) doc {
	v1 := tx.render(at, eventWindow{})
	t := doc{
		"tx_id": v1.TxID, "sender": doc{"address": v1.SenderAddress, "nonce": v1.Nonce}, "sponsor": nil, "fee_rate": v1.FeeRate,
		"block": doc{"height": v1.BlockHeight, "hash": v1.BlockHash, "index_hash": blockHash(^v1.BlockHeight),
			"time": v1.BlockTime, "tx_index": v1.TxIndex},
		"bitcoin_block": doc{"height": v1.BurnBlockHeight, "time": v1.BurnBlockTime},
		"status":        tx.status, "type": tx.txType,
	}
	switch {
	case tx.call != nil:
		t["contract_call"] = doc{"contract_id": tx.call.ContractID, "function_name": tx.call.FunctionName}
	case tx.transfer != nil:
		t["token_transfer"] = doc{"recipient": tx.transfer.RecipientAddress, "amount": tx.transfer.Amount, "memo": nil}
	case tx.deploy != nil:
		t["smart_contract"] = doc{"clarity_version": tx.deploy.ClarityVersion, "contract_id": tx.deploy.ContractID}
	}
	involvement := "affected"
	if principal == tx.Sender {
		involvement = "sender"
	}
	sent, received := new(big.Int), new(big.Int)
	if principal == tx.Sender {
		if fee, ok := new(big.Int).SetString(v1.FeeRate, 10); ok {
			sent.Add(sent, fee)
		}
	}
	ft := false
	for _, e := range tx.events {
		if e.Asset == nil {
			continue
		}
		if e.EventType != "stx_asset" {
			ft = ft || e.Asset.Sender == principal || e.Asset.Recipient == principal
			continue
		}
		amount, ok := new(big.Int).SetString(e.Asset.Amount, 10)
		if !ok {
			continue
		}
		if e.Asset.Sender == principal {
			sent.Add(sent, amount)
		}
		if e.Asset.Recipient == principal {
			received.Add(received, amount)
		}
	}
	// Hiro's PrincipalTransactionSchema (src/api/schemas/v3/entities/
	// principal-transactions.ts, in openapi.yaml): the principal's STX
	// moves (the fee counts as sent) and which kinds of balance moved.
	return doc{
		"transaction": t,
		"involvement": involvement,
		"balance_changes": doc{"stx": doc{"sent": sent.String(), "received": received.String(),
			"net": new(big.Int).Sub(received, sent).String()}},
		"affected_balances": doc{"stx": sent.Sign() != 0 || received.Sign() != 0, "ft": ft, "nft": false},
	}
}

// Hiro's rate-limit headers (SPEC §5.4).
const (
	hiroHeaderCost            = "x-ratelimit-cost-stacks"
	hiroHeaderLimit           = "ratelimit-limit"
	hiroHeaderRemaining       = "ratelimit-remaining"
	hiroHeaderReset           = "ratelimit-reset"
	hiroHeaderMinuteLimit     = "x-ratelimit-limit-stacks-minute"
	hiroHeaderMinuteRemaining = "x-ratelimit-remaining-stacks-minute"
	hiroHeaderMonthLimit      = "x-ratelimit-limit-stacks-month"
	hiroHeaderMonthRemaining  = "x-ratelimit-remaining-stacks-month"
)

// hiroLimitFor spends the caller's budget by the route's cost and sends
// Hiro's headers, with a 429 and retry-after once it is gone. The month
// headers come only with a plan that has a month quota, as Hiro sends them
// to keyed callers only. With a hidden limit the plan's limit is what the
// headers advertise, and ratelimit-remaining what is really left.
func (s *Server) hiroLimitFor(route string, next http.Handler) http.Handler {
	cost := max(s.hiro.cfg.Costs[route], 1)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := s.now()
		plan, d, ok := s.hiro.take(r, now, cost)
		if !ok {
			writeError(w, http.StatusUnauthorized, "Invalid API key")
			return
		}
		d.WriteHiroHeaders(w.Header(), plan, now, cost)
		if !d.Allowed {
			writeError(w, http.StatusTooManyRequests, "Too Many Requests")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// WriteHiroHeaders sets the rate-limit headers Hiro sends with the answer
// a to a request of cost under the plan l at now (the advertised limit,
// what is really left, the month only on a plan that has one, retry-after
// with a refusal). The HTTP simulator sends them, and the benchmarks hand
// them to the header parsing the service runs.
func (a Answer) WriteHiroHeaders(h http.Header, l Limits, now time.Time, cost int) {
	h.Set(hiroHeaderCost, strconv.Itoa(cost))
	perMinute := strconv.Itoa(l.PerMinute)
	h.Set(hiroHeaderLimit, perMinute)
	h.Set(hiroHeaderRemaining, strconv.Itoa(a.MinuteRemaining))
	h.Set(hiroHeaderReset, strconv.FormatInt(retryAfterSeconds(now.Truncate(time.Minute).Add(time.Minute).Sub(now)), 10))
	h.Set(hiroHeaderMinuteLimit, perMinute)
	h.Set(hiroHeaderMinuteRemaining, strconv.Itoa(a.MinuteRemaining))
	if l.HasMonth() {
		h.Set(hiroHeaderMonthLimit, strconv.Itoa(l.PerMonth))
		h.Set(hiroHeaderMonthRemaining, strconv.Itoa(a.MonthRemaining))
	}
	if !a.Allowed {
		h.Set("retry-after", strconv.FormatInt(retryAfterSeconds(a.RetryAfter), 10))
	}
}

// txTypeContractCall is the tx_type of contract calls.
const txTypeContractCall = "contract_call"

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
	// A mined transaction has its block's fields, one in the mempool the
	// time it was received instead.
	*minedJSON
	ReceiptTime    int64              `json:"receipt_time,omitempty"`
	ReceiptTimeISO string             `json:"receipt_time_iso,omitempty"`
	Events         []eventJSON        `json:"events"`
	ContractCall   *contractCallJSON  `json:"contract_call,omitempty"`
	TokenTransfer  *tokenTransferJSON `json:"token_transfer,omitempty"`
	SmartContract  *smartContractJSON `json:"smart_contract,omitempty"`
}

type minedJSON struct {
	BlockHash           string       `json:"block_hash"`
	BlockHeight         int64        `json:"block_height"`
	BlockTime           int64        `json:"block_time"`
	BlockTimeISO        string       `json:"block_time_iso"`
	BurnBlockTime       int64        `json:"burn_block_time"`
	BurnBlockTimeISO    string       `json:"burn_block_time_iso"`
	BurnBlockHeight     int64        `json:"burn_block_height"`
	Canonical           bool         `json:"canonical"`
	MicroblockCanonical bool         `json:"microblock_canonical"`
	TxIndex             int64        `json:"tx_index"`
	TxResult            clarityValue `json:"tx_result"`
	EventCount          int          `json:"event_count"`
	// The rest of what Hiro's schema requires of a mined transaction
	// (TransactionSchema, openapi.yaml; internal/hiro/openapi holds the
	// simulator to it). Nakamoto blocks have no microblocks: Hiro sends
	// microblock_hash "0x" and microblock_sequence 2147483647 for them.
	ParentBlockHash          string  `json:"parent_block_hash"`
	ParentBurnBlockTime      int64   `json:"parent_burn_block_time"`
	ParentBurnBlockTimeISO   string  `json:"parent_burn_block_time_iso"`
	IsUnanchored             bool    `json:"is_unanchored"`
	MicroblockHash           string  `json:"microblock_hash"`
	MicroblockSequence       int64   `json:"microblock_sequence"`
	ExecutionCostReadCount   int64   `json:"execution_cost_read_count"`
	ExecutionCostReadLength  int64   `json:"execution_cost_read_length"`
	ExecutionCostRuntime     int64   `json:"execution_cost_runtime"`
	ExecutionCostWriteCount  int64   `json:"execution_cost_write_count"`
	ExecutionCostWriteLength int64   `json:"execution_cost_write_length"`
	VMError                  *string `json:"vm_error"`
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

// functionArgJSON's hex is empty: Hiro's schema requires the field, nothing
// in pacer reads it, and encoding principals would need real c32check
// addresses.
type functionArgJSON struct {
	Hex  string `json:"hex"`
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
// ten minutes, each beginning a Nakamoto tenure of Stacks blocks every
// stacksBlockPeriod seconds (150 a tenure), so that a block's transactions
// keep the order of their times. A mined transaction's time is its block's
// (the generator puts every one on a block: BlockOf).
const (
	heightEpoch       = 1_700_000_000
	burnHeightAt      = 818_000
	stacksHeightAt    = 130_000
	burnBlockPeriod   = 600
	stacksBlockPeriod = 4
)

// heightAt is the Stacks block of a moment.
func heightAt(t time.Time) int64 {
	return stacksHeightAt + floorDiv(t.Unix()-heightEpoch, stacksBlockPeriod)
}

// BlockPeriod is how far apart Stacks blocks are: the benchmarks' chain
// (internal/ingest/bench) lays its blocks out as the simulator does.
const BlockPeriod = stacksBlockPeriod * time.Second

// blockFloor is the time of the Stacks block slot holding t.
func blockFloor(t time.Time) time.Time {
	return time.Unix(heightEpoch+floorDiv(t.Unix()-heightEpoch, stacksBlockPeriod)*stacksBlockPeriod, 0).UTC()
}

// BlockOf is the first block at or after t: the block a transaction sent
// at t is mined in (the slot of the last nanosecond before the next one).
func BlockOf(t time.Time) time.Time { return blockFloor(t.Add(BlockPeriod - time.Nanosecond)) }

// eventWindow is the part of a transaction's events an answer carries; the
// zero value carries none, as list results do.
type eventWindow struct{ offset, limit int }

// render is the transaction as Hiro answers at at, with the events of win.
func (tx *worldTx) render(at time.Time, win eventWindow) txJSON {
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
		out.ReceiptTime, out.ReceiptTimeISO = tx.AppearsAt.Unix(), isoTime(tx.AppearsAt)
		return out
	}

	burn := BurnBlockOf(tx.minedAt())
	// A transaction that did not succeed had its transfers rolled back.
	var events []eventJSON
	if status == statusSuccess {
		events = tx.events
	}
	p, block := tx.position(at), tx.minedAt()
	out.minedJSON = &minedJSON{
		BlockHash:           blockHash(p.height),
		BlockHeight:         p.height,
		BlockTime:           block.Unix(),
		BlockTimeISO:        isoTime(block),
		BurnBlockTime:       burn.Unix(),
		BurnBlockTimeISO:    isoTime(burn),
		BurnBlockHeight:     burnHeightAt + (burn.Unix()-heightEpoch)/burnBlockPeriod,
		Canonical:           !tx.fork,
		MicroblockCanonical: true,
		TxIndex:             p.index,
		TxResult:            tx.result,
		EventCount:          len(events),
		ParentBlockHash:     blockHash(p.height - 1),
		// The burn block before the transaction's: a Nakamoto tenure's
		// parent is the previous tenure's burn block.
		ParentBurnBlockTime:    burn.Unix() - burnBlockPeriod,
		ParentBurnBlockTimeISO: isoTime(burn.Add(-burnBlockPeriod * time.Second)),
		MicroblockHash:         "0x",
		MicroblockSequence:     2147483647,
	}
	from, to := min(win.offset, len(events)), min(win.offset+win.limit, len(events))
	out.Events = make([]eventJSON, 0, to-from)
	for i, e := range events[from:to] {
		e.EventIndex, e.TxID = from+i, tx.TxID
		out.Events = append(out.Events, e)
	}
	return out
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// blockHash is a stable hash for a block height.
func blockHash(height int64) string {
	h := uint64(height)
	return fmt.Sprintf("0x%016x%016x%016x%016x", Mix(h), Mix(h^1), Mix(h^2), Mix(h^3))
}
