package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/competition"
)

// chromiumPath is Debian's chromium (make chromium), or PACER_TEST_CHROMIUM.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PACER_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("no Chromium: run `make chromium` (apt-get install -y chromium) or set PACER_TEST_CHROMIUM")
	return ""
}

// A page on an allowed origin reads the leaderboard from the public API in
// a real browser; the same page on another origin is refused by the
// browser (no Access-Control-Allow-Origin), as CORS intends.
func TestBrowserReadsTheLeaderboard(t *testing.T) {
	t.Parallel()
	pageHTML := func(api string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<!doctype html><title>board</title><script>
fetch(%q).then(r => r.json()).then(j => { window.result = "ok " + j.rows.length + " " + j.rows[0].stxAddress + " " + j.rows[0].trades })
  .catch(e => { window.result = "refused " + e });
</script>`, api+"/api/competition/leaderboard?sort=volume")
		})
	}
	allowedPage := httptest.NewServer(nil)
	otherPage := httptest.NewServer(nil)
	t.Cleanup(allowedPage.Close)
	t.Cleanup(otherPage.Close)
	f := newBoardFixture(t, allowedPage.URL)
	allowedPage.Config.Handler = pageHTML(f.srv.URL)
	otherPage.Config.Handler = pageHTML(f.srv.URL)
	const agent = "SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA"
	f.exec(t, `insert into agents (stx_address) values ($1)`, agent)
	_, err := f.st.InsertSwap(context.Background(), competition.Swap{TxID: "0x" + strings.Repeat("ab", 32), Sender: agent,
		ContractID: "SP1.pool", FunctionName: "swap", TokenIn: "stx", AmountIn: "1000000", TokenOut: "stx", AmountOut: "2000000",
		BurnBlockTime: 1778700700, TxStatus: "success", Source: "sweep"})
	require.NoError(t, err)

	actx, cancel := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.UserDataDir(t.TempDir()))
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	read := func(page string) string {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(page)))
		out, err := chromedp.Run(ctx, chromedp.Poll[string](`window.result`, chromedp.WithPollingTimeout(20*time.Second)))
		require.NoError(t, err)
		return out
	}
	require.Equal(t, "ok 1 "+agent+" 1", read(allowedPage.URL+"/"))
	require.True(t, strings.HasPrefix(read(otherPage.URL+"/"), "refused "), "another origin gets no CORS header")
}
