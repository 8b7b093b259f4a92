package upstream

import "net/http"

// Headers an upstream's operators trace a request by, to quote when a
// request fails: Cloudflare's ray id (Tenero and Hiro are both behind
// Cloudflare) and the request id a proxy behind it may add.
const (
	HeaderCFRay     = "cf-ray"
	HeaderRequestID = "x-request-id"
)

// maxTraceID bounds a trace id: Cloudflare's are about 20 characters, a
// request id a UUID's 36.
const maxTraceID = 64

// TraceID returns header name of h when it is a plausible id: at most 64
// characters of letters, digits and -_.:, anything else (an upstream's
// garbage, a line break meant for a log) returns "".
func TraceID(h http.Header, name string) string {
	v := h.Get(name)
	if len(v) > maxTraceID {
		return ""
	}
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.', r == ':':
		default:
			return ""
		}
	}
	return v
}
