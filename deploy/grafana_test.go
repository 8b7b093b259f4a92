package deploy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.yaml.in/yaml/v3"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/logging"
	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
)

type dashboard struct {
	UID    string  `json:"uid"`
	Title  string  `json:"title"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		Datasource *datasource `json:"datasource"`
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
	} `json:"targets"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// grafanaMounts are where the compose file mounts Grafana's provisioning
// and dashboards from the repository: container path → repository path.
func grafanaMounts(t *testing.T, c composeFile) map[string]string {
	t.Helper()
	g, ok := c.Services["grafana"]
	require.True(t, ok, "docker-compose.yml runs Grafana")
	require.Contains(t, g.dependsOn(t), "prometheus")
	mounts := map[string]string{}
	for _, v := range g.Volumes {
		parts := strings.Split(v, ":")
		if strings.HasPrefix(parts[0], ".") {
			mounts[parts[1]] = filepath.Join(root, parts[0])
		}
	}
	return mounts
}

func TestGrafanaIsProvisioned(t *testing.T) {
	t.Parallel()
	c := loadCompose(t)
	mounts := grafanaMounts(t, c)
	provisioning, ok := mounts["/etc/grafana/provisioning"]
	require.True(t, ok, "the provisioning directory is mounted where Grafana reads it")

	// The data source is this file's Prometheus, on a port it exposes.
	b, err := os.ReadFile(filepath.Join(provisioning, "datasources", "prometheus.yml"))
	require.NoError(t, err)
	var ds struct {
		Datasources []struct {
			UID, Type, URL string
		} `yaml:"datasources"`
	}
	require.NoError(t, yaml.Unmarshal(b, &ds))
	require.Len(t, ds.Datasources, 1)
	prom := ds.Datasources[0]
	require.Equal(t, "prometheus", prom.Type)
	u, err := url.Parse(prom.URL)
	require.NoError(t, err)
	require.Equal(t, "prometheus", u.Hostname(), "the data source is the compose file's Prometheus")
	require.Contains(t, c.Services["prometheus"].containerPorts(), u.Port())

	// The dashboard provider reads the directory the dashboards are mounted on.
	b, err = os.ReadFile(filepath.Join(provisioning, "dashboards", "pacer.yml"))
	require.NoError(t, err)
	var prov struct {
		Providers []struct {
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	require.NoError(t, yaml.Unmarshal(b, &prov))
	require.Len(t, prov.Providers, 1)
	require.Equal(t, "file", prov.Providers[0].Type)
	dir, ok := mounts[prov.Providers[0].Options.Path]
	require.True(t, ok, "the provider's path %s is a mount of the repository", prov.Providers[0].Options.Path)

	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		d := loadDashboard(t, f)
		require.NotEmpty(t, d.UID, f)
		require.NotEmpty(t, d.Title, f)
		ids := map[int]bool{}
		for _, p := range d.Panels {
			require.False(t, ids[p.ID], "%s: panel id %d is unique", f, p.ID)
			ids[p.ID] = true
			require.Positive(t, p.GridPos.W, "%s: %s has a place", f, p.Title)
			require.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, "%s: %s fits the grid", f, p.Title)
			if p.Type == "row" {
				continue
			}
			require.NotEmpty(t, p.Targets, "%s: %s queries something", f, p.Title)
			for _, tg := range append([]*datasource{p.Datasource}, targetSources(p)...) {
				require.NotNil(t, tg, "%s: %s names its data source", f, p.Title)
				require.Equal(t, prom.UID, tg.UID, "%s: %s uses the provisioned data source", f, p.Title)
			}
		}
	}
}

func targetSources(p panel) []*datasource {
	out := make([]*datasource, len(p.Targets))
	for i, tg := range p.Targets {
		out[i] = tg.Datasource
	}
	return out
}

func loadDashboard(t *testing.T, path string) dashboard {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(b, &d), "%s parses", path)
	return d
}

// TestDashboardQueriesServedSeries parses every query of every dashboard
// with Prometheus's own PromQL parser and checks that each series it names
// is one pacer's /metrics serves: the names come from scraping a real
// registry after a real scheduler ran its tasks, not from a list.
func TestDashboardQueriesServedSeries(t *testing.T) {
	t.Parallel()
	served := servedSeries(t)
	files, err := filepath.Glob(filepath.Join(root, "deploy", "grafana", "dashboards", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	queried := 0
	for _, f := range files {
		for _, p := range loadDashboard(t, f).Panels {
			for _, tg := range p.Targets {
				expr, err := parser.ParseExpr(tg.Expr)
				require.NoError(t, err, "%s: %s: %s", f, p.Title, tg.Expr)
				parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
					if vs, ok := n.(*parser.VectorSelector); ok {
						require.NotEmpty(t, vs.Name, "%s: %s: a selector names its series", f, p.Title)
						require.True(t, served[vs.Name], "%s: %s queries %s, which /metrics does not serve", f, p.Title, vs.Name)
						queried++
					}
					return nil
				})
			}
		}
	}
	require.Positive(t, queried)
}

// servedSeries runs what `pacer worker` and `pacer serve` run in one
// process — the SDK's metrics handler on a client, a worker with the
// scheduler and its activities against the simulator, the store and
// scheduler collectors of the API — lets each task run once, and scrapes
// /metrics. It returns every series name in the scrape (a histogram's
// _bucket, _sum and _count included).
func servedSeries(t *testing.T) map[string]bool {
	t.Helper()
	ctx := context.Background()
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	st, err := store.Open(ctx, testenv.PostgresURL(t))
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.Migrate(ctx))
	up := sim.New(sim.Config{Seed: 5, Hiro: sim.HiroConfig{Agents: 10}})
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	require.NoError(t, up.World().Seed(ctx, st))

	tmp, err := testenv.StartTemporal(ctx)
	require.NoError(t, err, "a Temporal dev server")
	t.Cleanup(tmp.Stop)
	m := metrics.New()
	sdk, err := m.TemporalHandler()
	require.NoError(t, err)
	tc, err := client.Dial(client.Options{HostPort: tmp.HostPort, Logger: logging.Temporal(log), MetricsHandler: sdk})
	require.NoError(t, err)
	t.Cleanup(tc.Close)

	acts := activities.New(activities.Options{Discovery: discovery.Config{Mode: "agents"}, Store: st, Logger: log, Metrics: m,
		TeneroBaseURL: upSrv.URL, HiroBaseURL: upSrv.URL, HiroAPIKey: "sim-key",
		CompetitionStart: up.World().CompetitionStart()})
	id := "metrics-" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	sched := worker.Scheduler{WorkflowID: id, TaskQueue: id}
	w := worker.New(tc, id, acts)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	_, err = worker.EnsureRunning(ctx, tc, sched)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tc.TerminateWorkflow(context.Background(), id, "", "test over") })
	for _, task := range []string{pacer.TaskTenero, pacer.TaskSweep} {
		_, err := worker.RefreshNow(ctx, tc, id, task)
		require.NoError(t, err, "refresh %s", task)
	}
	require.NoError(t, m.WatchStore(st, catalog.Default(), acts.Budget))
	require.NoError(t, m.WatchScheduler(func(ctx context.Context) (metrics.SchedulerView, error) {
		return worker.Describe(ctx, tc, sched)
	}, st.LatestRuns, time.Second))

	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	textParser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := textParser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	served := map[string]bool{}
	for name, f := range families {
		served[name] = true
		switch f.GetType().String() {
		case "HISTOGRAM":
			served[name+"_bucket"], served[name+"_sum"], served[name+"_count"] = true, true, true
		case "SUMMARY":
			served[name+"_sum"], served[name+"_count"] = true, true
		}
	}
	// The scrape is real: it holds the SDK's series and the API's gauges.
	names := make([]string, 0, len(served))
	for n := range served {
		names = append(names, n)
	}
	slices.Sort(names)
	t.Logf("/metrics serves %d series names", len(names))
	for _, must := range []string{"temporal_request_total", "pacer_task_runs_total", "pacer_price_oldest_age_seconds", "pacer_scheduler_up"} {
		require.Contains(t, served, must, "the scrape: %v", names)
	}
	return served
}
