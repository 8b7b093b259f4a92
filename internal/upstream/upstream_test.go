package upstream

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNoRedirectsKeepsTheKeyHome(t *testing.T) {
	t.Parallel()
	var leaked bool
	elsewhere := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		leaked = r.Header.Get("x-api-key") != ""
	}))
	t.Cleanup(elsewhere.Close)
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL, http.StatusFound)
	}))
	t.Cleanup(home.Close)

	given := &http.Client{}
	c := NoRedirects(given)
	req, err := http.NewRequest(http.MethodGet, home.URL, nil)
	require.NoError(t, err)
	req.Header.Set("x-api-key", "secret")
	resp, err := c.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusFound, resp.StatusCode)
	require.False(t, leaked)
	require.Nil(t, given.CheckRedirect, "the client passed in is left as it was")
	require.NotNil(t, NoRedirects(nil))
}

func TestTraceID(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Set(HeaderCFRay, "8f1c2d3e4a5b6c7d-AMS")
	h.Set(HeaderRequestID, "a1b2\nlevel=error forged")
	require.Equal(t, "8f1c2d3e4a5b6c7d-AMS", TraceID(h, HeaderCFRay))
	require.Empty(t, TraceID(h, HeaderRequestID), "a line break is not an id")
	require.Empty(t, TraceID(http.Header{}, HeaderCFRay))
	h.Set(HeaderRequestID, strings.Repeat("a", 65))
	require.Empty(t, TraceID(h, HeaderRequestID), "too long")
}
