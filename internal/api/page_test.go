package api_test

import (
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPageSharesTheStatusCache counts the scheduler's status queries behind
// many views of the operator's page, some at once, and the status endpoint
// beside them: one query serves them all (each is a billed action).
func TestPageSharesTheStatusCache(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const views = 40
	var wg sync.WaitGroup
	for range views {
		wg.Go(func() {
			resp, err := http.Get(f.op.URL + "/")
			if !assert.NoError(t, err) {
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			assert.NoError(t, err)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
			assert.Contains(t, string(body), `<section id="scheduler">`)
		})
	}
	wg.Wait()
	code, _ := f.get(t, "/api/scheduler/status")
	require.Equal(t, http.StatusOK, code)
	require.EqualValues(t, 1, f.statusCalls.Load(), "%d page views and the status endpoint made one status query", views)
}
