package api

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/pacer-dev/pacer/internal/api/openapi"
)

// openAPIMaxAge is how long the OpenAPI document may be reused: it changes
// with a release.
const openAPIMaxAge = time.Hour

// openAPIDoc is the document with its ETag, computed once.
var openAPIDoc = func() encodedRead {
	sum := sha256.Sum256(openapi.Document)
	return encodedRead{body: openapi.Document, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
}()

// openAPI serves the OpenAPI 3.1 document of pacer's own public routes.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	writeEncoded(w, r, openAPIDoc, openAPIMaxAge)
}
