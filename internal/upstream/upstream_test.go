package upstream

import (
	"net/http"
	"net/http/httptest"
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
