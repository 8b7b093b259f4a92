package loopback

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// A loopback server is reached; any other address is refused before a
// socket is opened (the check is on the address, not on an answer).
func TestClientDialsLoopbackOnly(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	c := Client()
	resp, err := c.Get(srv.URL)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	for _, url := range []string{"http://10.0.0.5/", "http://169.254.169.254/latest/", "http://[fd00::1]:80/", "http://[::ffff:10.0.0.5]/"} {
		_, err := c.Get(url)
		require.ErrorIs(t, err, ErrNotLoopback, url)
	}
}
