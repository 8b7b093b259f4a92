package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/pacer-dev/pacer/internal/registry"
)

// MaxRegistryBody bounds PUT /api/admin/agents and /claims: 10,000
// records of a few hundred bytes each.
const MaxRegistryBody = 8 << 20

// putAgents upserts a JSON array of at most registry.MaxAPIAgents agents
// in one transaction (SPEC §7, §12); ?dryRun=true says what would change.
// A bad record is a 400 naming its index and field, and nothing is written.
func (h *handler) putAgents(w http.ResponseWriter, r *http.Request) {
	raw, dry, ok := h.decodeArray(w, r)
	if !ok {
		return
	}
	agents, err := registry.DecodeAgents(raw, false)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	out, err := h.op.ImportAgents(r.Context(), agents, nil, dry)
	h.reply(w, r, http.StatusOK, out, err)
}

// putClaims files a JSON array of claims in one transaction.
func (h *handler) putClaims(w http.ResponseWriter, r *http.Request) {
	raw, dry, ok := h.decodeArray(w, r)
	if !ok {
		return
	}
	claims, err := registry.DecodeClaims(raw)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	out, err := h.op.ImportClaims(r.Context(), claims, nil, dry)
	h.reply(w, r, http.StatusOK, out, err)
}

// deleteAgent deregisters one agent: kept with its swaps, no longer
// visited nor ranked.
func (h *handler) deleteAgent(w http.ResponseWriter, r *http.Request) {
	stx := r.PathValue("stxAddress")
	at, err := h.op.DeregisterAgent(r.Context(), stx)
	h.reply(w, r, http.StatusOK, map[string]any{"stxAddress": stx, "deregisteredAt": at.UTC()}, err)
}

// decodeArray reads a JSON array body (application/json, bounded, at most
// registry.MaxAPIAgents items) and the dryRun parameter.
func (h *handler) decodeArray(w http.ResponseWriter, r *http.Request) ([]json.RawMessage, bool, bool) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		writeError(w, http.StatusUnsupportedMediaType, "send Content-Type: application/json")
		return nil, false, false
	}
	var dry bool
	switch v := r.URL.Query().Get("dryRun"); v {
	case "", "false":
	case "true":
		dry = true
	default:
		writeError(w, http.StatusBadRequest, "dryRun: want true or false")
		return nil, false, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRegistryBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", MaxRegistryBody))
		return nil, false, false
	}
	var raw []json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil || raw == nil {
		writeError(w, http.StatusBadRequest, "want a JSON array of records")
		return nil, false, false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "invalid JSON: trailing data after the array")
		return nil, false, false
	}
	if len(raw) > registry.MaxAPIAgents {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%d records; at most %d a request", len(raw), registry.MaxAPIAgents))
		return nil, false, false
	}
	return raw, dry, true
}
