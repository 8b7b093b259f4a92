package cli

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/sim"
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

// TestDevPushesToItsOwnAPI: dev points the simulator's deliveries at its
// own API with a secret of its own (so the floor is on too), keeps an
// operator's secret, and leaves an explicit --sim-push-url alone.
func TestDevPushesToItsOwnAPI(t *testing.T) {
	t.Parallel()
	c := &config{httpAddr: "0.0.0.0:8080"}
	so := simOptions{pushDrop: 0.2}
	require.NoError(t, devPush(&so, c, false))
	require.Equal(t, "http://127.0.0.1:8080/api/chainhook", so.pushURL)
	require.Len(t, c.chainhookSecret, 32)
	push, err := so.push(c.chainhookSecret)
	require.NoError(t, err)
	require.Equal(t, c.chainhookSecret, push.Secret)
	require.InDelta(t, 0.2, push.Drop, 0)

	c = &config{httpAddr: "127.0.0.1:9000", chainhookSecret: "mine"}
	so = simOptions{}
	require.NoError(t, devPush(&so, c, false))
	require.Equal(t, "mine", c.chainhookSecret)

	so = simOptions{pushURL: "off"}
	require.NoError(t, devPush(&so, c, true))
	push, err = so.push("mine")
	require.NoError(t, err)
	require.Empty(t, push.URL, "--sim-push-url off turns push off")

	_, err = simOptions{pushURL: "http://x/api/chainhook"}.push("")
	require.ErrorContains(t, err, "PACER_CHAINHOOK_SECRET")
	_, err = simOptions{pushURL: "http://x/api/chainhook", pushDrop: 1.5}.push("s")
	require.ErrorContains(t, err, "--sim-push-drop")
}

// TestSimChainVolume: `pacer sim` and `pacer dev` run the chain at the
// default volume unless told otherwise; 0 turns strangers off and a
// negative volume is refused.
func TestSimChainVolume(t *testing.T) {
	t.Parallel()
	for _, cmd := range []*cobra.Command{newSimCmd(&config{}), newDevCmd(&config{})} {
		f := cmd.Flags().Lookup("sim-chain-volume")
		require.NotNil(t, f, cmd.Name())
		require.Equal(t, strconv.Itoa(sim.DefaultChainVolume), f.DefValue, cmd.Name())
	}
	got, err := simOptions{chainVolume: sim.DefaultChainVolume}.chain()
	require.NoError(t, err)
	require.Equal(t, sim.DefaultChainVolume, got.Volume)
	got, err = simOptions{chainVolume: 0}.chain()
	require.NoError(t, err)
	require.Negative(t, got.Volume, "0 means no strangers, not the default")
	_, err = simOptions{chainVolume: -5}.chain()
	require.ErrorContains(t, err, "--sim-chain-volume")
}
