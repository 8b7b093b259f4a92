// Package openapi holds the OpenAPI 3.1 document of pacer's own public
// routes (SPEC §7.1), served at GET /api/openapi.json. A test of package
// api holds it to the router: a route without its operation here, or an
// operation without its route, fails it.
package openapi

import _ "embed"

// Document is the OpenAPI document, as served.
//
//go:embed openapi.json
var Document []byte

// Path is where the public listener serves it.
const Path = "/api/openapi.json"
