// Package registry reads the competition's registry records (SPEC §12):
// agents and their claims, from an import file (NDJSON or CSV), the admin
// API's JSON or the registry URL's pages, validated alike. A bad record is
// named by its line or index and its field, and a file or request with one
// is refused whole: nothing of it is written.
package registry

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Agent is a registered agent as the registry lists it.
type Agent struct {
	STXAddress     string `json:"stxAddress"`
	BTCAddress     string `json:"btcAddress,omitempty"`
	DisplayName    string `json:"displayName,omitempty"`
	ERC8004AgentID *int64 `json:"erc8004AgentId"`
	// ClaimStatus is the claim filed under BTCAddress, when the record
	// carries one (the registry's pages); nil leaves claims alone.
	ClaimStatus *string `json:"claimStatus,omitempty"`
}

// Claim is a claim filed under a Bitcoin address.
type Claim struct {
	BTCAddress string `json:"btcAddress"`
	Status     string `json:"status"`
}

// Statuses are the claim statuses (SPEC §6).
var Statuses = []string{"pending", "verified", "rewarded", "failed"}

// Bounds of one record and of one file or request.
const (
	MaxDisplayName = 100
	// MaxRecords bounds one file, request or registry read.
	MaxRecords = 100_000
	// MaxAPIAgents is what one PUT /api/admin/agents may carry (SPEC §7).
	MaxAPIAgents = 10_000
	maxLine      = 64 << 10
)

// RecordError names a bad record: its line in a file (1-based; a CSV
// header is line 1) or its index in a JSON array (0-based), and the field.
type RecordError struct {
	Line  int // 0 when the record is known by its index
	Index int
	Field string
	Msg   string
}

func (e *RecordError) Error() string {
	where := fmt.Sprintf("line %d", e.Line)
	if e.Line == 0 {
		where = fmt.Sprintf("record %d", e.Index)
	}
	if e.Field == "" {
		return where + ": " + e.Msg
	}
	return where + ": " + e.Field + ": " + e.Msg
}

// Field names, as files and JSON spell them.
const (
	FieldSTX         = "stxAddress"
	FieldBTC         = "btcAddress"
	FieldDisplayName = "displayName"
	FieldERC8004     = "erc8004AgentId"
	FieldClaimStatus = "claimStatus"
	FieldStatus      = "status"
)

// fieldError is a record's problem before its position is known.
type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

func bad(field string, err error) error { return &fieldError{field: field, msg: err.Error()} }

// CheckAgent validates one agent record.
func CheckAgent(a Agent) error {
	if a.STXAddress == "" {
		return &fieldError{FieldSTX, "required"}
	}
	if err := CheckSTX(a.STXAddress); err != nil {
		return bad(FieldSTX, err)
	}
	if a.BTCAddress != "" {
		if err := checkBTC(a.BTCAddress); err != nil {
			return bad(FieldBTC, err)
		}
	}
	if err := checkName(a.DisplayName); err != nil {
		return bad(FieldDisplayName, err)
	}
	if a.ERC8004AgentID != nil && *a.ERC8004AgentID < 0 {
		return &fieldError{FieldERC8004, "must be a non-negative integer or null"}
	}
	if a.ClaimStatus != nil {
		if a.BTCAddress == "" {
			return &fieldError{FieldClaimStatus, "a claim needs a btcAddress"}
		}
		if !slices.Contains(Statuses, *a.ClaimStatus) {
			return &fieldError{FieldClaimStatus, "must be one of " + strings.Join(Statuses, ", ")}
		}
	}
	return nil
}

// CheckClaim validates one claim record.
func CheckClaim(c Claim) error {
	if c.BTCAddress == "" {
		return &fieldError{FieldBTC, "required"}
	}
	if err := checkBTC(c.BTCAddress); err != nil {
		return bad(FieldBTC, err)
	}
	if !slices.Contains(Statuses, c.Status) {
		return &fieldError{FieldStatus, "must be one of " + strings.Join(Statuses, ", ")}
	}
	return nil
}

func checkName(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	if utf8.RuneCountInString(s) > MaxDisplayName {
		return fmt.Errorf("longer than %d characters", MaxDisplayName)
	}
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return errors.New("contains a control character")
	}
	if i := strings.IndexFunc(s, invisible); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Errorf("contains the invisible format character U+%04X", r)
	}
	return nil
}

// zeroWidthJoiner joins emoji into one (a family, a flag); it reorders and
// hides nothing.
const zeroWidthJoiner = '\u200d'

// invisible says r is a format character (Unicode category Cf) other than
// the zero-width joiner: bidirectional overrides and isolates, which
// reorder what a page shows, and zero-width spaces and marks, which make
// two names that read alike differ. A name that carries them can pass for
// another agent's on the leaderboard.
func invisible(r rune) bool {
	return r != zeroWidthJoiner && unicode.Is(unicode.Cf, r)
}

// position turns a record's problem into a RecordError at line or index.
func position(err error, line, index int) error {
	var fe *fieldError
	if errors.As(err, &fe) {
		return &RecordError{Line: line, Index: index, Field: fe.field, Msg: fe.msg}
	}
	return &RecordError{Line: line, Index: index, Msg: err.Error()}
}

// CheckAgents validates a whole list (the API's array, a registry read):
// every record, and no address twice.
func CheckAgents(agents []Agent, lines []int) error {
	seenSTX := map[string]bool{}
	seenBTC := map[string]bool{}
	for i, a := range agents {
		line := 0
		if lines != nil {
			line = lines[i]
		}
		if err := CheckAgent(a); err != nil {
			return position(err, line, i)
		}
		if seenSTX[a.STXAddress] {
			return &RecordError{Line: line, Index: i, Field: FieldSTX, Msg: "listed twice"}
		}
		seenSTX[a.STXAddress] = true
		if a.BTCAddress != "" {
			if seenBTC[a.BTCAddress] {
				return &RecordError{Line: line, Index: i, Field: FieldBTC, Msg: "listed for two agents"}
			}
			seenBTC[a.BTCAddress] = true
		}
	}
	return nil
}

// CheckClaims validates a whole list of claims: every record, no address twice.
func CheckClaims(claims []Claim, lines []int) error {
	seen := map[string]bool{}
	for i, c := range claims {
		line := 0
		if lines != nil {
			line = lines[i]
		}
		if err := CheckClaim(c); err != nil {
			return position(err, line, i)
		}
		if seen[c.BTCAddress] {
			return &RecordError{Line: line, Index: i, Field: FieldBTC, Msg: "listed twice"}
		}
		seen[c.BTCAddress] = true
	}
	return nil
}

// Records are the records of a file, each with its line.
type Records[T any] struct {
	Items []T
	Lines []int
}

// ReadAgents reads an agents file: NDJSON (its first character is '{') or
// CSV with a header row naming stxAddress, btcAddress, displayName,
// erc8004AgentId (any order; btcAddress onward optional). Every record is
// validated; the first bad one is the error.
func ReadAgents(r io.Reader) (Records[Agent], error) {
	var out Records[Agent]
	err := readFile(r, []string{FieldSTX, FieldBTC, FieldDisplayName, FieldERC8004}, []string{FieldSTX},
		func(line int, obj map[string]json.RawMessage) error {
			a, err := agentFromJSON(obj, false)
			if err != nil {
				return position(err, line, 0)
			}
			out.Items, out.Lines = append(out.Items, a), append(out.Lines, line)
			return nil
		},
		func(line int, rec map[string]string) error {
			a := Agent{STXAddress: rec[FieldSTX], BTCAddress: rec[FieldBTC], DisplayName: rec[FieldDisplayName]}
			if v := rec[FieldERC8004]; v != "" {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 0 {
					return &RecordError{Line: line, Field: FieldERC8004, Msg: "must be a non-negative integer or empty"}
				}
				a.ERC8004AgentID = &n
			}
			out.Items, out.Lines = append(out.Items, a), append(out.Lines, line)
			return nil
		})
	if err != nil {
		return Records[Agent]{}, err
	}
	return out, CheckAgents(out.Items, out.Lines)
}

// ReadClaims reads a claims file: NDJSON or CSV with btcAddress, status.
func ReadClaims(r io.Reader) (Records[Claim], error) {
	var out Records[Claim]
	err := readFile(r, []string{FieldBTC, FieldStatus}, []string{FieldBTC, FieldStatus},
		func(line int, obj map[string]json.RawMessage) error {
			var c Claim
			for k, raw := range obj {
				var dst *string
				switch k {
				case FieldBTC:
					dst = &c.BTCAddress
				case FieldStatus:
					dst = &c.Status
				default:
					return &RecordError{Line: line, Field: clip(k), Msg: "unknown field (use btcAddress, status)"}
				}
				if err := json.Unmarshal(raw, dst); err != nil {
					return &RecordError{Line: line, Field: k, Msg: "must be a string"}
				}
			}
			out.Items, out.Lines = append(out.Items, c), append(out.Lines, line)
			return nil
		},
		func(line int, rec map[string]string) error {
			out.Items, out.Lines = append(out.Items, Claim{BTCAddress: rec[FieldBTC], Status: rec[FieldStatus]}), append(out.Lines, line)
			return nil
		})
	if err != nil {
		return Records[Claim]{}, err
	}
	return out, CheckClaims(out.Items, out.Lines)
}

// agentFromJSON reads one agent object strictly: known fields only, each
// of its type. withClaim accepts claimStatus (the registry's pages).
func agentFromJSON(obj map[string]json.RawMessage, withClaim bool) (Agent, error) {
	var a Agent
	for k, raw := range obj {
		null := string(bytes.TrimSpace(raw)) == "null"
		var err error
		switch k {
		case FieldSTX:
			err = json.Unmarshal(raw, &a.STXAddress)
		case FieldBTC:
			if !null {
				err = json.Unmarshal(raw, &a.BTCAddress)
			}
		case FieldDisplayName:
			if !null {
				err = json.Unmarshal(raw, &a.DisplayName)
			}
		case FieldERC8004:
			if !null {
				var n json.Number
				dec := json.NewDecoder(bytes.NewReader(raw))
				dec.UseNumber()
				if dec.Decode(&n) != nil {
					return a, &fieldError{k, "must be a non-negative integer or null"}
				}
				v, perr := strconv.ParseInt(n.String(), 10, 64)
				if perr != nil || v < 0 {
					return a, &fieldError{k, "must be a non-negative integer or null"}
				}
				a.ERC8004AgentID = &v
			}
		case FieldClaimStatus:
			if !withClaim {
				return a, &fieldError{clip(k), "unknown field (use stxAddress, btcAddress, displayName, erc8004AgentId)"}
			}
			if !null {
				var st string
				err = json.Unmarshal(raw, &st)
				a.ClaimStatus = &st
			}
		default:
			return a, &fieldError{clip(k), "unknown field"}
		}
		if err != nil {
			return a, &fieldError{k, "must be a string"}
		}
	}
	return a, nil
}

// DecodeAgents reads a JSON array of agent objects (the admin API's body,
// a registry page's "agents"), each named by its index when bad.
func DecodeAgents(raw []json.RawMessage, withClaim bool) ([]Agent, error) {
	out := make([]Agent, 0, len(raw))
	for i, r := range raw {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(r, &obj); err != nil || obj == nil {
			return nil, &RecordError{Index: i, Msg: "not a JSON object"}
		}
		a, err := agentFromJSON(obj, withClaim)
		if err != nil {
			return nil, position(err, 0, i)
		}
		out = append(out, a)
	}
	return out, nil
}

// DecodeClaims reads a JSON array of claim objects.
func DecodeClaims(raw []json.RawMessage) ([]Claim, error) {
	out := make([]Claim, 0, len(raw))
	for i, r := range raw {
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		var c Claim
		if err := dec.Decode(&c); err != nil {
			return nil, &RecordError{Index: i, Msg: "want {\"btcAddress\": \"…\", \"status\": \"…\"}"}
		}
		out = append(out, c)
	}
	return out, nil
}

func clip(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}

// MaxFileBytes bounds an import file.
const MaxFileBytes = 256 << 20

// readFile splits a file into records: NDJSON objects or CSV rows keyed by
// the header. Blank lines are skipped in both.
func readFile(r io.Reader, fields, required []string,
	onJSON func(line int, obj map[string]json.RawMessage) error,
	onCSV func(line int, rec map[string]string) error) error {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return err
	}
	if len(data) > MaxFileBytes {
		return &RecordError{Line: 1, Msg: fmt.Sprintf("the file is larger than %d MiB", MaxFileBytes>>20)}
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return &RecordError{Line: 1, Msg: "the file is empty"}
	}
	n := 0
	if trimmed[0] == '{' {
		for i, text := range bytes.Split(data, []byte("\n")) {
			line := i + 1
			text = bytes.TrimSpace(text)
			if len(text) == 0 {
				continue
			}
			if len(text) > maxLine {
				return &RecordError{Line: line, Msg: fmt.Sprintf("longer than %d bytes", maxLine)}
			}
			if n++; n > MaxRecords {
				return &RecordError{Line: line, Msg: fmt.Sprintf("more than %d records in one file", MaxRecords)}
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(text, &obj); err != nil || obj == nil {
				return &RecordError{Line: line, Msg: "not a JSON object"}
			}
			if err := onJSON(line, obj); err != nil {
				return err
			}
		}
		return nil
	}
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err != nil {
		return &RecordError{Line: 1, Msg: "no CSV header row"}
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if !slices.Contains(fields, h) {
			return &RecordError{Line: 1, Field: clip(h), Msg: "unknown column (use " + strings.Join(fields, ", ") + ")"}
		}
		if _, dup := col[h]; dup {
			return &RecordError{Line: 1, Field: h, Msg: "column given twice"}
		}
		col[h] = i
	}
	for _, f := range required {
		if _, ok := col[f]; !ok {
			return &RecordError{Line: 1, Field: f, Msg: "required column missing"}
		}
	}
	for {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return &RecordError{Line: pe.Line, Msg: "malformed CSV: " + pe.Err.Error()}
			}
			return err
		}
		line, _ := cr.FieldPos(0)
		if len(row) != len(header) {
			return &RecordError{Line: line, Msg: fmt.Sprintf("%d columns, the header has %d", len(row), len(header))}
		}
		if n++; n > MaxRecords {
			return &RecordError{Line: line, Msg: fmt.Sprintf("more than %d records in one file", MaxRecords)}
		}
		rec := map[string]string{}
		for name, i := range col {
			rec[name] = strings.TrimSpace(row[i])
		}
		if err := onCSV(line, rec); err != nil {
			return err
		}
	}
}
