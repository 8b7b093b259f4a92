package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
)

// Platform serves the routes of Hiro's Chainhooks platform API that
// `pacer chainhook ensure` and the chainhook task call, as Hiro documents
// them for the hosted Chainhooks 2.0 (paths relative to the base URL):
// GET and POST /me/ (list, with limit and offset; register), GET and
// PATCH /me/{uuid}, PATCH /me/{uuid}/enabled, POST /me/{uuid}/evaluate
// (204, the block recorded), each refused with 401 without the key in
// x-api-key. A test changes a hook's state (Interrupt) and reads what was
// asked (Evaluated, Calls). Its answers are built from Hiro's documented
// shapes, never by pacer's chainhook package.
type Platform struct {
	key  string
	mux  *http.ServeMux
	mu   sync.Mutex
	seq  int
	hook map[string]doc // uuid → the hook as GET answers it
	// order keeps the hooks in creation order.
	order     []string
	evaluated map[string][]int64
	calls     map[string]int
}

// NewPlatform serves a platform that accepts apiKey.
func NewPlatform(apiKey string) *Platform {
	p := &Platform{key: apiKey, mux: http.NewServeMux(), hook: map[string]doc{},
		evaluated: map[string][]int64{}, calls: map[string]int{}}
	p.mux.HandleFunc("GET /me/{$}", p.list)
	p.mux.HandleFunc("POST /me/{$}", p.create)
	p.mux.HandleFunc("GET /me/{uuid}", p.get)
	p.mux.HandleFunc("PATCH /me/{uuid}", p.update)
	p.mux.HandleFunc("PATCH /me/{uuid}/enabled", p.enable)
	p.mux.HandleFunc("POST /me/{uuid}/evaluate", p.evaluate)
	return p
}

func (p *Platform) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("x-api-key") != p.key {
		writePlatform(w, http.StatusUnauthorized, doc{"error": "Unauthorized", "details": "missing or invalid API key"})
		return
	}
	p.mu.Lock()
	p.calls[r.Method+" "+r.URL.Path]++
	p.mu.Unlock()
	p.mux.ServeHTTP(w, r)
}

func writePlatform(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

func (p *Platform) list(w http.ResponseWriter, r *http.Request) {
	limit, offset := 20, 0
	if v, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && v > 0 {
		limit = min(v, 60)
	}
	if v, err := strconv.Atoi(r.URL.Query().Get("offset")); err == nil && v >= 0 {
		offset = v
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	results := []doc{}
	for i := offset; i < len(p.order) && len(results) < limit; i++ {
		results = append(results, p.hook[p.order[i]])
	}
	writePlatform(w, http.StatusOK, doc{"limit": limit, "offset": offset, "total": len(p.order), "results": results})
}

func (p *Platform) create(w http.ResponseWriter, r *http.Request) {
	var def doc
	if err := json.NewDecoder(r.Body).Decode(&def); err != nil || def["name"] == nil || def["filters"] == nil || def["action"] == nil {
		writePlatform(w, http.StatusBadRequest, doc{"error": "Invalid request body", "details": "name, filters and action are required"})
		return
	}
	enabled := false
	if opts, ok := def["options"].(map[string]any); ok {
		enabled, _ = opts["enable_on_registration"].(bool)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	uuid := fmt.Sprintf("5e3d0000-0000-4000-8000-%012d", p.seq)
	h := doc{"uuid": uuid, "definition": def, "status": doc{"status": "new", "enabled": enabled, "created_at": 0,
		"last_evaluated_at": nil, "last_evaluated_block_height": nil, "last_occurrence_at": nil,
		"last_occurrence_block_height": nil, "evaluated_block_count": 0, "occurrence_count": 0}}
	p.hook[uuid] = h
	p.order = append(p.order, uuid)
	writePlatform(w, http.StatusOK, h)
}

func (p *Platform) found(w http.ResponseWriter, r *http.Request) (doc, bool) {
	h, ok := p.hook[r.PathValue("uuid")]
	if !ok {
		writePlatform(w, http.StatusNotFound, doc{"error": "Not found", "details": "no chainhook " + r.PathValue("uuid")})
	}
	return h, ok
}

func (p *Platform) get(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h, ok := p.found(w, r); ok {
		writePlatform(w, http.StatusOK, h)
	}
}

func (p *Platform) update(w http.ResponseWriter, r *http.Request) {
	var patch doc
	if err := json.NewDecoder(r.Body).Decode(&patch); err != nil {
		writePlatform(w, http.StatusBadRequest, doc{"error": "Invalid request body"})
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.found(w, r)
	if !ok {
		return
	}
	def := h["definition"].(doc)
	for _, k := range []string{"name", "filters", "action", "options"} {
		if v, ok := patch[k]; ok {
			def[k] = v
		}
	}
	writePlatform(w, http.StatusOK, doc{"status": "success", "chainhookUuid": h["uuid"]})
}

func (p *Platform) enable(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Enabled *bool `json:"enabled"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Enabled == nil {
		writePlatform(w, http.StatusBadRequest, doc{"error": "Invalid request body", "details": "enabled is required"})
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.found(w, r)
	if !ok {
		return
	}
	st := h["status"].(doc)
	st["enabled"] = *body.Enabled
	if *body.Enabled && st["status"] == "interrupted" {
		st["status"] = "streaming"
	}
	w.WriteHeader(http.StatusNoContent)
}

func (p *Platform) evaluate(w http.ResponseWriter, r *http.Request) {
	var body struct {
		BlockHeight *int64 `json:"block_height"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.BlockHeight == nil {
		writePlatform(w, http.StatusBadRequest, doc{"error": "Invalid request body", "details": "block_height or index_block_hash is required"})
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.found(w, r); !ok {
		return
	}
	uuid := r.PathValue("uuid")
	p.evaluated[uuid] = append(p.evaluated[uuid], *body.BlockHeight)
	w.WriteHeader(http.StatusNoContent)
}

// Interrupt makes a hook as Hiro leaves one it gave up delivering to:
// status interrupted, disabled, its last evaluated block lastEvaluated.
func (p *Platform) Interrupt(uuid string, lastEvaluated int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h, ok := p.hook[uuid]; ok {
		st := h["status"].(doc)
		st["status"], st["enabled"], st["last_evaluated_block_height"] = "interrupted", false, lastEvaluated
	}
}

// Streaming makes a hook enabled and streaming, at lastEvaluated.
func (p *Platform) Streaming(uuid string, lastEvaluated int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h, ok := p.hook[uuid]; ok {
		st := h["status"].(doc)
		st["status"], st["enabled"], st["last_evaluated_block_height"] = "streaming", true, lastEvaluated
	}
}

// Hooks returns the hooks as GET /me/{uuid} answers them, in creation
// order.
func (p *Platform) Hooks() []json.RawMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]json.RawMessage, 0, len(p.order))
	for _, id := range p.order {
		b, _ := json.Marshal(p.hook[id])
		out = append(out, b)
	}
	return out
}

// Evaluated returns the blocks evaluate was asked for on a hook, in order.
func (p *Platform) Evaluated(uuid string) []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int64(nil), p.evaluated[uuid]...)
}

// Calls counts the requests of a method and path ("PATCH /me/x/enabled").
func (p *Platform) Calls(route string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[route]
}
