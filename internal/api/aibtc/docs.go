package aibtc

import "strconv"

// Doc is a route's description of itself, the answer to ?docs=1 on any GET
// of the contract (agents read it to learn the route). It is built from
// constants: answering it touches nothing.
type Doc struct {
	Endpoint         string            `json:"endpoint"`
	Methods          []string          `json:"methods"`
	Description      string            `json:"description"`
	PathParameters   map[string]Param  `json:"pathParameters,omitempty"`
	QueryParameters  map[string]Param  `json:"queryParameters"`
	ResponseFormat   map[string]any    `json:"responseFormat"`
	Post             *PostDoc          `json:"post,omitempty"`
	ErrorResponses   map[string]string `json:"errorResponses"`
	RelatedEndpoints map[string]string `json:"relatedEndpoints"`
	Notes            []string          `json:"notes,omitempty"`
}

// Param is one parameter of a route.
type Param struct {
	Type        string `json:"type"`
	Required    bool   `json:"required,omitempty"`
	Description string `json:"description"`
	Example     string `json:"example,omitempty"`
}

// PostDoc describes the submit route, beside the list's GET.
type PostDoc struct {
	Description string            `json:"description"`
	RequestBody map[string]string `json:"requestBody"`
	Responses   map[string]string `json:"responses"`
}

// The routes of the contract, as Docs names them.
const (
	RouteTrades    = "/trades"
	RouteStatus    = "/status"
	RouteAllowlist = "/allowlist"
	RouteRounds    = "/rounds"
	RouteRound     = "/rounds/{roundId}"
	RouteResult    = "/rounds/{roundId}/results/{stxAddress}"
)

const exampleAddress = "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE"

var docsParam = Param{Type: "string", Description: "?docs=1 answers this description instead of data", Example: "?docs=1"}

func addressParam(required bool) Param {
	return Param{Type: "string", Required: required, Description: "Stacks mainnet address (SP… or SM…)", Example: exampleAddress}
}

// Field descriptions, one per JSON field of the answer types (a test holds
// them to the types' fields).
var (
	// RowFields describes Row.
	RowFields = map[string]any{
		"txid":            "string (0x-prefixed transaction id)",
		"sender":          "string (the agent's STX address)",
		"contract_id":     "string (the allowlisted contract called)",
		"function_name":   "string (its swap function)",
		"token_in":        "string (asset the agent gave: 'stx' or a contract id with ::asset)",
		"amount_in":       "integer (base units, every digit exact, above 2^53 too)",
		"token_out":       "string (asset the agent got)",
		"amount_out":      "integer (base units, every digit exact)",
		"burn_block_time": "integer (unix seconds)",
		"tx_status":       "string ('success': pacer keeps successful swaps only)",
		"source":          "string (agent | cron | chainhook; cron is pacer's readers)",
		"scored_value":    "null (no nightly scoring in pacer)",
		"scored_at":       "null",
	}
	// StatusFields describes Status.
	StatusFields = map[string]any{
		"address":              "string (STX address asked for)",
		"agent_id":             "integer | null (ERC-8004 identity id; null until registered on-chain)",
		"registered":           "boolean (a registered competition agent)",
		"trade_count":          "integer (swaps recorded for the address)",
		"verified_trade_count": "integer (of them, tx_status success: all of them in pacer)",
		"first_trade_at":       "integer | null (unix seconds of the earliest swap)",
		"last_trade_at":        "integer | null (unix seconds of the latest swap)",
		"latestRoundResult":    "object, absent when none (the agent's result in the newest finalized round; fields as in GET " + Prefix + RouteRound + ")",
	}
	// AllowlistFields describes Allowlist.
	AllowlistFields = map[string]any{
		"entries":          []map[string]string{{"contract_id": "string", "functions": "string[]"}},
		"total_contracts":  "integer (entries)",
		"total_functions":  "integer (functions over all entries)",
		"provider_address": "string (Bitflow provider attribution: recorded, never a gate)",
		"protocols":        "object (entries by protocol)",
	}
	// RoundFields describes Round.
	RoundFields = map[string]any{
		"round_id":               "string",
		"starts_at":              "integer (unix seconds)",
		"ends_at":                "integer (unix seconds)",
		"grace_ends_at":          "integer (unix seconds)",
		"status":                 "string (finalized)",
		"min_volume_usd":         "number",
		"min_priced_trade_count": "integer",
		"created_at":             "string (ISO-8601)",
		"finalized_at":           "string | null (ISO-8601)",
	}
	// ResultFields describes Result.
	ResultFields = map[string]any{
		"round_id":             "string",
		"rank":                 "integer",
		"stx_address":          "string",
		"btc_address":          "string",
		"erc8004_agent_id":     "integer | null",
		"trade_count":          "integer",
		"priced_trade_count":   "integer",
		"unpriced_trade_count": "integer",
		"volume_usd":           "number",
		"received_usd":         "number",
		"pnl_usd":              "number",
		"pnl_percent":          "number | null (a fraction: 0.15 is 15%; null at zero volume)",
		"latest_trade_at":      "integer | null (unix seconds)",
		"result_json":          map[string]string{"source_counts": "{agent, cron, chainhook}", "unpriced_tokens": "string[]"},
		"calculated_at":        "string (ISO-8601)",
	}
	// RewardFields describes Reward.
	RewardFields = map[string]any{
		"round_id":         "string",
		"category":         "string (overall_pnl | volume | return)",
		"rank":             "integer",
		"stx_address":      "string",
		"erc8004_agent_id": "integer | null",
		"amount_sats":      "integer",
		"status":           "string",
		"payout_txid":      "string | null",
		"paid_at":          "string | null (ISO-8601)",
		"notes":            "string | null",
		"created_at":       "string (ISO-8601)",
	}
)

var related = map[string]string{
	"trades":    "GET " + Prefix + RouteTrades + "?address={stx}",
	"submit":    "POST " + Prefix + RouteTrades,
	"status":    "GET " + Prefix + RouteStatus + "?address={stx}",
	"allowlist": "GET " + Prefix + RouteAllowlist,
	"rounds":    "GET " + Prefix + RouteRounds,
}

const (
	unavailable = "the database is unavailable: retry after retry_after seconds"
	limited     = "this client's requests a minute are spent: retry after Retry-After seconds"
)

// Docs is the description of one of the routes above; ok is false for
// another.
func Docs(route string) (Doc, bool) {
	d := Doc{Endpoint: Prefix + route, Methods: []string{"GET"}, RelatedEndpoints: related,
		QueryParameters: map[string]Param{"docs": docsParam},
		ErrorResponses:  map[string]string{"429": limited, "503": unavailable}}
	switch route {
	case RouteTrades:
		d.Methods = []string{"GET", "POST"}
		d.Description = "An agent's swaps, newest first by (burn_block_time, txid), paged by an opaque cursor; POST verifies one swap by txid now."
		d.QueryParameters["address"] = addressParam(true)
		d.QueryParameters["limit"] = Param{Type: "integer", Description: "page size, 1-" + strconv.Itoa(MaxTradesLimit) +
			", default " + strconv.Itoa(DefaultTradesLimit) + " (out-of-range values are clamped)", Example: "?limit=200"}
		d.QueryParameters["cursor"] = Param{Type: "string", Description: "next_cursor of the page before; omit for the first page"}
		d.ResponseFormat = map[string]any{"trades": []map[string]any{RowFields}, "next_cursor": "string | null (null on the last page)"}
		d.ErrorResponses["400"] = "address missing or malformed, limit not an integer, or a cursor this route did not give"
		d.Post = &PostDoc{
			Description: "Verify a confirmed swap by txid through the same gates as pacer's readers; the first writer of a txid wins.",
			RequestBody: map[string]string{"txid": "string (64 hex characters, 0x prefix optional)"},
			Responses: map[string]string{
				"200": "written now: the bare row (fields as in the list)",
				"202": "{accepted: true, note}: the transaction is still pending; retry in a few seconds",
				"400": "malformed txid or body",
				"404": "{error, code: tx_not_found, retryable: false}",
				"409": "{error, code: txid_already_verified, retryable: false, existing_row}: already in the ledger (existing_row.source says who wrote it)",
				"422": "{error, code, retryable: false}: code is the rejection reason (sender_not_registered, sender_not_genesis, contract_not_allowlisted, tx_failed, before_comp_start, invalid_amount, incomplete_events, malformed_tx, not_canonical)",
				"429": "{error, retryAfter}: this client's submissions, or the fast path's share of the chain API, are spent (Retry-After)",
				"502": "{error, code: tx_fetch_failed, retryable: true}: the chain API failed (Retry-After)",
				"503": "{error, code, retryable: true, retry_after}: the database or the fast path is unavailable (Retry-After)",
			},
		}
	case RouteStatus:
		d.Description = "An address's standing: registration, ERC-8004 id, swap counts, and its newest finalized round result. An unregistered address is 200 with registered false."
		d.QueryParameters["address"] = addressParam(true)
		d.ResponseFormat = StatusFields
		d.ErrorResponses["400"] = "address missing or malformed"
	case RouteAllowlist:
		d.Description = "The (contract_id, function) pairs whose swaps count; a swap through anything else is rejected with contract_not_allowlisted."
		d.ResponseFormat = AllowlistFields
		delete(d.ErrorResponses, "503")
	case RouteRounds:
		d.Description = "Finalized competition rounds, newest first; rounds still open or finalizing are not listed."
		d.QueryParameters["limit"] = Param{Type: "integer", Description: "page size, 1-" + strconv.Itoa(MaxRoundsLimit) +
			", default " + strconv.Itoa(DefaultRoundsLimit) + " (clamped)"}
		d.QueryParameters["offset"] = Param{Type: "integer", Description: "rounds to skip, default 0"}
		d.ResponseFormat = map[string]any{"rounds": []map[string]any{RoundFields},
			"pagination": map[string]string{"limit": "integer", "offset": "integer", "hasMore": "boolean"}}
		d.ErrorResponses["400"] = "limit or offset not an integer"
	case RouteRound:
		d.Description = "One finalized round: the round, every agent's result by rank, and the rewards."
		d.PathParameters = map[string]Param{"roundId": {Type: "string", Description: "the round's id (a-z, 0-9, -)"}}
		d.ResponseFormat = map[string]any{"round": RoundFields, "results": []map[string]any{ResultFields},
			"rewards": []map[string]any{RewardFields}}
		d.ErrorResponses["404"] = CodeRoundNotFound + ": no such round, or not finalized yet"
	case RouteResult:
		d.Description = "One agent's result in one finalized round."
		d.PathParameters = map[string]Param{"roundId": {Type: "string", Description: "the round's id"},
			"stxAddress": addressParam(true)}
		d.ResponseFormat = map[string]any{"round_id": "string", "result": ResultFields}
		d.ErrorResponses["400"] = "stxAddress malformed"
		d.ErrorResponses["404"] = CodeRoundNotFound + " (no such finalized round) or " + CodeAgentNotPlaced + " (no result for the agent)"
	default:
		return Doc{}, false
	}
	return d, true
}

// Trades' page sizes, as on the landing page.
const (
	DefaultTradesLimit = 50
	MaxTradesLimit     = 200
)
