package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDevBannerPrintsThePageFirst(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	devBanner(&out, devURLs{api: "127.0.0.1:8080", temporal: "127.0.0.1:7233", ui: "127.0.0.1:8233",
		workflowID: "v1", sim: "http://127.0.0.1:43111", tenero: "http://127.0.0.1:43111"})
	var urls []string
	for _, f := range strings.Fields(out.String()) {
		if strings.HasPrefix(f, "http://") {
			urls = append(urls, f)
		}
	}
	require.NotEmpty(t, urls)
	require.Equal(t, "http://127.0.0.1:8080/", urls[0], "the operator's page is the first address printed:\n%s", out.String())
	require.Contains(t, out.String(), "operator page    http://127.0.0.1:8080/\n")
	require.Contains(t, out.String(), "http://127.0.0.1:8233/namespaces/default/workflows/v1")
}
