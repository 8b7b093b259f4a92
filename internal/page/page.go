// Package page is the operator's page, GET / on the API: one server-rendered
// HTML document that shows at a glance whether anything is behind — the
// scheduler and its runs, what is left of each upstream's minute and month,
// how fresh each price is, how fast swaps are found, which deliveries fail.
//
// It reads Postgres (the tables of SPEC §6 and the task_runs ledger the
// workers write) and at most the scheduler's status through the API's shared
// cache: a Temporal query is a billed action, so a page view never makes one
// of its own. Each section has one bounded query function; a section whose
// table does not exist yet, or whose query fails, says so and the rest of
// the page still renders. The page holds no secret: no keys, no subscriber
// secrets, no URLs beyond a subscriber's host.
//
// The document needs nothing but itself: inline CSS and SVG, no script, no
// external asset; it refreshes itself every RefreshSeconds.
package page

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"html/template"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/workflows"
)

// RefreshSeconds is how often the page reloads itself.
const RefreshSeconds = 15

// Bounds of one page view: the status may come from a cold cache, the
// queries share one deadline.
const (
	statusWait = 2 * time.Second
	queryWait  = 5 * time.Second
)

// Options are the page's dependencies.
type Options struct {
	Store   *store.Store
	Catalog *catalog.Catalog
	// Status is the scheduler's status through the API's shared cache (the
	// one GET /api/scheduler/status answers from), never a query of its own.
	// Nil renders the scheduler as unknown.
	Status func(ctx context.Context) (workflows.Status, error)
	// HiroBudget is the one Hiro budget every process shares (SPEC §5.4):
	// the page shows what it has left. Nil leaves the page to what the
	// runs reported.
	HiroBudget *store.SharedBudget
	// SchedulerHealth says whether the scheduler's workflow tasks keep
	// failing (a workflow description; operations.go). Nil leaves it out.
	SchedulerHealth func(ctx context.Context) (SchedulerHealth, error)
	Logger          *zap.Logger
	// Now is the page's clock. Nil is time.Now.
	Now func() time.Time
}

// Page serves the operator's page.
type Page struct {
	o      Options
	tmpl   *template.Template
	tables tableCache
	spend  spendMemo
}

//go:embed page.html
var pageHTML string

// New builds the page. It panics only if the embedded template does not
// parse, which its tests rule out.
func New(o Options) *Page {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Catalog == nil {
		o.Catalog = catalog.Default()
	}
	return &Page{o: o, tmpl: template.Must(template.Must(template.New("page").Parse(pageHTML)).Parse(operationsHTML))}
}

// View is everything the page shows.
type View struct {
	Generated      Moment
	RefreshSeconds int
	WorkflowID     string
	Scheduler      SchedulerSection
	Budgets        BudgetsSection
	Prices         PricesSection
	Ledger         LedgerSection
	Deliveries     DeliveriesSection
	Operations     OperationsSection
}

// Section says why a section shows no figures: Unavailable when its query
// failed (the error itself goes to the log), Absent when the table it reads
// does not exist yet.
type Section struct {
	Unavailable string
	Absent      string
}

func (s *Section) fail(log *zap.Logger, what string, err error) {
	log.Warn("page.section_failed", zap.String("section", what), zap.Error(err))
	s.Unavailable = "unavailable: the database did not answer (see the API's log)"
	if errors.Is(err, context.DeadlineExceeded) {
		s.Unavailable = "unavailable: the database took too long"
	}
}

func (s *Section) absent(table string) {
	s.Absent = "not available yet: table " + table + " does not exist in this database"
}

// ServeHTTP renders the page. It answers 200 whatever fails inside: each
// section reports its own trouble.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v := p.View(r.Context())
	var buf bytes.Buffer
	if err := p.tmpl.Execute(&buf, v); err != nil {
		p.o.Logger.Error("page.render_failed", zap.Error(err))
		http.Error(w, "page could not be rendered", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// Nothing from elsewhere, no script, no framing by another site.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(buf.Bytes())
}

// View loads every section: the status and the section queries run
// concurrently, then each section is built from what it got.
func (p *Page) View(ctx context.Context) View {
	now := p.o.Now().UTC()
	v := View{Generated: Moment{Rel: stamp(now)}, RefreshSeconds: RefreshSeconds}

	var (
		st       *workflows.Status
		sched    schedulerData
		budgets  budgetsData
		prices   pricesData
		ledger   ledgerData
		delivers deliveriesData
		ops      operationsData
		health   *SchedulerHealth
		errs     [6]error
	)
	qctx, cancel := context.WithTimeout(ctx, queryWait)
	defer cancel()
	pool := p.o.Store.Pool()
	var wg sync.WaitGroup
	wg.Go(func() {
		if p.o.Status == nil {
			return
		}
		sctx, cancel := context.WithTimeout(ctx, statusWait)
		defer cancel()
		s, err := p.o.Status(sctx)
		if err != nil {
			p.o.Logger.Debug("page.status_unavailable", zap.Error(err))
			return
		}
		st = &s
	})
	wg.Go(func() { sched, errs[0] = loadScheduler(qctx, pool, now) })
	wg.Go(func() { budgets, errs[1] = p.loadBudgets(qctx, pool, now) })
	wg.Go(func() { prices, errs[2] = loadPrices(qctx, p.o.Store, p.o.Catalog) })
	wg.Go(func() { ledger, errs[3] = p.loadLedger(qctx, pool, now) })
	wg.Go(func() { delivers, errs[4] = p.loadDeliveries(qctx, pool) })
	wg.Go(func() { ops, errs[5] = p.loadOperations(qctx, pool) })
	wg.Go(func() {
		if p.o.SchedulerHealth == nil {
			return
		}
		sctx, cancel := context.WithTimeout(ctx, statusWait)
		defer cancel()
		if h, err := p.o.SchedulerHealth(sctx); err == nil {
			health = &h
		}
	})
	wg.Wait()

	if st != nil {
		v.WorkflowID = st.WorkflowID
	}
	v.Scheduler = buildScheduler(sched, st, now)
	v.Budgets = buildBudgets(budgets, st, now)
	v.Prices = buildPrices(prices, st, now)
	v.Ledger = buildLedger(ledger)
	v.Deliveries = buildDeliveries(delivers, now)
	v.Operations = buildOperations(ops, health, now)
	for i, s := range []*Section{&v.Scheduler.Section, &v.Budgets.Section, &v.Prices.Section, &v.Ledger.Section, &v.Deliveries.Section, &v.Operations.Section} {
		if errs[i] != nil {
			s.fail(p.o.Logger, sectionNames[i], errs[i])
		}
	}
	return v
}

var sectionNames = [...]string{"scheduler", "budgets", "prices", "ledger", "deliveries", "operations"}

// tableCache remembers the optional tables (those other features add) once
// they exist; tables are never dropped, so only their absence is checked
// again, at the next view.
type tableCache struct {
	mu     sync.Mutex
	exists map[string]bool
}

func (c *tableCache) has(ctx context.Context, pool *pgxpool.Pool, table string) (bool, error) {
	c.mu.Lock()
	known := c.exists[table]
	c.mu.Unlock()
	if known {
		return true, nil
	}
	var ok bool
	// to_regclass resolves through search_path, as the queries do.
	if err := pool.QueryRow(ctx, `select to_regclass($1) is not null`, table).Scan(&ok); err != nil {
		return false, err
	}
	if ok {
		c.mu.Lock()
		if c.exists == nil {
			c.exists = map[string]bool{}
		}
		c.exists[table] = true
		c.mu.Unlock()
	}
	return ok, nil
}
