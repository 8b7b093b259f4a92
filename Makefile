# pacer's front door. `make help` lists the targets.
SHELL := bash
.DEFAULT_GOAL := help

TEMPORAL_CLI_VERSION := v1.5.1
BIN := $(CURDIR)/bin
TEMPORAL := $(BIN)/temporal
GOLANGCI_LINT_VERSION := v2.15.0
WORKFLOWCHECK_VERSION := v0.6.0
GOLANGCI_LINT := $(BIN)/golangci-lint
WORKFLOWCHECK := $(BIN)/workflowcheck
PROMTOOL := $(BIN)/promtool
# make test runs packages four at a time and each package's parallel tests
# four at a time: on two cores most of the integration tests wait on a dev
# server, a child process or Postgres, not the CPU. No vet pass: the lint
# job beside it runs go vet's analyzers (golangci-lint's govet, tests
# included) over the same code.
GO_TEST_FLAGS ?= -count=1 -timeout 25m -p 4 -parallel 4 -vet=off
# Every package runs under the race detector but the worker package, the
# real stack end to end: its tests drive `pacer worker` processes (built
# without it) against the simulator in the test binary, and under -race
# the simulator's answers were most of the package's CPU (4.5 CPU-minutes
# against 1.8, 506 s against 232 s alone): the longest job of make test.
# The code those tests run is raced in its own packages' tests
# (activities, workflows, internal/...); the worker's own concurrency (the
# hand-off at a stop, a start racing a stop, an in-process run end to end)
# runs again under -race (WORKER_RACE_TESTS).
RACE_FLAGS ?= -race
WORKER_PKG := ./worker/
WORKER_RACE_TESTS := ^(TestHandoff.*|TestActivity.*|TestAnyFailureWhileTheWorkerStopsIsTheHandBack|TestStartKeepsAConcurrentStop|TestSchedulerEndToEnd|TestSweepFindsExactlyTheWorldsSwaps)$$
# The benchmarks' virtual-time simulations are tested without the race
# detector, which makes them 5x slower (their code under test, the budget and
# the discovery plan, runs under it in the activities' tests); they run beside
# the rest.
SIM_PKGS := ./internal/ingest/bench/ ./internal/pacing/bench/
SIM_TEST_FLAGS ?= -count=1 -timeout 25m
FUZZTIME ?= 10s
FUZZFLAGS ?=
# package:target pairs; go test fuzzes one target per invocation.
FUZZ_TARGETS := \
	internal/competition:FuzzParseSwap internal/competition:FuzzVerify \
	internal/tenero:FuzzDecodeToken internal/tenero:FuzzDecodeTokenNumber internal/tenero:FuzzPriceResponse \
	internal/tenero:FuzzParseQuota internal/tenero:FuzzParsePrice \
	internal/hiro:FuzzParseQuota internal/hiro:FuzzTxResponse internal/hiro:FuzzAddressTransactionsResponse \
	internal/catalog:FuzzValidTokenID internal/api:FuzzParseTokens internal/api:FuzzParseRollupQuery \
	internal/webhook:FuzzValidateURL internal/webhook:FuzzParseLadder \
	workflows:FuzzParsePause workflows:FuzzParseRefresh workflows:FuzzParseTune workflows:FuzzParseReconfigure \
	internal/cron:FuzzParseSpec internal/chainhook:FuzzParse

.PHONY: help build dev test test-go test-worker test-worker-race test-sims fuzz-brief test-short test-unit evidence lint docs tools clean postgres chromium histories wf-lines bench bench-hidden bench-push bench-public bench-tail bench-sunset-push bench-outage bench-hint bench-board bench-board-outage cost catchup sched-check rounds-check deliver-check deploy-check fuzz

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

# The commit baked into the binary (pacer version; the workers' default build
# ID), with "-dirty-" and a hash of the changes when the tree has some (two
# dirty builds are two builds); empty outside a checkout.
COMMIT ?= $(shell c=$$(git rev-parse --short=12 HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null || c=$$c-dirty-$$(git diff HEAD | git hash-object --stdin | cut -c1-8); echo $$c; })

build: ## build bin/pacer with the commit baked in
	go build -ldflags "-X github.com/pacer-dev/pacer/worker.commit=$(COMMIT)" -o $(BIN)/pacer ./cmd/pacer

$(TEMPORAL):
	@echo "installing the Temporal CLI $(TEMPORAL_CLI_VERSION) into bin/ (a few minutes, once)…"
	GOBIN=$(BIN) go install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_CLI_VERSION)

tools: $(TEMPORAL) ## install the Temporal CLI (dev server) into bin/ (make lint installs its linters the same way)

postgres: ## make sure PostgreSQL answers on 127.0.0.1:5432 (starts the local cluster)
	@./scripts/ensure-postgres.sh

chromium: ## make sure Chromium is installed (the operator page's browser test drives it; apt-get the first time)
	@./scripts/ensure-chromium.sh

dev: build tools postgres ## run the whole stack locally: Temporal dev server + Web UI, simulator, worker, API
	PACER_WEBHOOK_ALLOW_PRIVATE=1 $(BIN)/pacer dev --log-format console

test: tools postgres chromium $(GOLANGCI_LINT) $(WORKFLOWCHECK) $(PROMTOOL) ## lint, every test (unit, workflow (testsuite), integration: dev server + Postgres, Chromium) and a brief fuzz, side by side
	@# Side by side: most of the integration tests' time is spent waiting on a
	@# dev server, a child process or Postgres, which lint and the fuzz fill.
	@# Lint and the simulations only need the CPU, so they run at a lower
	@# priority (LOW): they take what the tests leave, and the tests' builds
	@# and real-time waits are not stretched by them. Not the brief fuzz:
	@# 21 runs one after another (84 CPU-seconds alone), starved by the
	@# tests it ended minutes after them.
	@# Each job's output is printed whole when it ends (--output-sync).
	@$(MAKE) --no-print-directory -j6 --output-sync=target LOW='nice -n 10' lint test-go test-worker test-worker-race test-sims fuzz-brief

test-go:
	go test $(RACE_FLAGS) $(GO_TEST_FLAGS) $$(go list ./... | grep -v -x -e '.*/internal/ingest/bench' -e '.*/internal/pacing/bench' -e '.*/worker')

test-worker:
	go test $(GO_TEST_FLAGS) $(WORKER_PKG)

test-worker-race:
	go test $(RACE_FLAGS) $(GO_TEST_FLAGS) -run '$(WORKER_RACE_TESTS)' $(WORKER_PKG)

test-sims:
	$(LOW) go test $(SIM_TEST_FLAGS) $(SIM_PKGS)

fuzz-brief:
	@# The brief run counts executions, not seconds: Go 1.26's fuzz coordinator
	@# can report its own -fuzztime deadline as "context deadline exceeded", a
	@# failure with no failing input (golang/go#75804, fixed in Go 1.27). No
	@# minimising either, for the same reason.
	@$(MAKE) --no-print-directory fuzz LOW= FUZZTIME=1000x FUZZFLAGS=-fuzzminimizetime=0

fuzz: ## fuzz every target for FUZZTIME each (default 10s; seed corpora also run in make test)
	@set -e; log=$$(mktemp); trap 'rm -f $$log' EXIT; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; fn=$${t##*:}; echo "fuzz $$fn ($$pkg, $(FUZZTIME))"; \
	  fz() { $(LOW) go test -run='^$$' -fuzz="^$$fn\$$" -fuzztime=$(FUZZTIME) $(FUZZFLAGS) ./$$pkg/ > $$log 2>&1; }; \
	  fz && continue; cat $$log; grep -q "Failing input written to" $$log && exit 1; \
	  echo "fuzz $$fn failed without a failing input (the coordinator's own error): once more"; fz || { cat $$log; exit 1; }; \
	done; echo "fuzz: $(words $(FUZZ_TARGETS)) targets passed"

test-short: postgres ## the developer's loop: every test but those that run the pacer binary on the real stack, no race detector (make test runs them all)
	go test -short -count=1 -p 4 ./...

evidence: tools postgres ## every published figure: the real-stack checks and benchmarks (hours; EVIDENCE_ONLY=regex for some), then one table of figures against their bounds, pass/FAIL (docs/benchmarks.md)
	@./scripts/evidence.sh

test-unit: ## run the tests that need nothing running
	go test -count=1 ./workflows/ ./internal/schedule/ ./internal/cron/ ./internal/catalog/ ./internal/tenero/ ./internal/hiro/ ./internal/competition/ ./internal/sim/ ./internal/pacing/... ./internal/ingest/... ./internal/budget/

lint: $(GOLANGCI_LINT) $(WORKFLOWCHECK) $(PROMTOOL) ## golangci-lint (.golangci.yml), Temporal's workflowcheck on the workflow package, promtool on deploy/'s alerts and Prometheus config
	$(LOW) $(GOLANGCI_LINT) run ./...
	$(LOW) $(WORKFLOWCHECK) -config workflowcheck.config.yaml ./workflows/...
	$(PROMTOOL) check rules deploy/alerts.yml
	$(PROMTOOL) check config --syntax-only deploy/prometheus.yml

$(PROMTOOL):
	@./scripts/ensure-promtool.sh $(BIN)

$(GOLANGCI_LINT):
	@echo "installing golangci-lint $(GOLANGCI_LINT_VERSION) into bin/ (a few minutes, once)…"
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

$(WORKFLOWCHECK):
	GOBIN=$(BIN) go install go.temporal.io/sdk/contrib/tools/workflowcheck@$(WORKFLOWCHECK_VERSION)

docs: build ## regenerate docs/configuration.md from the flags (an empty environment, so defaults are the code's)
	env -i PATH="$$PATH" HOME="$$HOME" $(BIN)/pacer docs > docs/configuration.md

bench: postgres ## the pacing and discovery benchmarks in virtual time, and the operator page at scale (see docs/benchmarks.md)
	go run ./internal/pacing/cmd/bench
	go test -run '^$$' -bench BenchmarkPage -benchtime 20x -count 3 ./internal/page/

bench-hidden: tools postgres ## the shared Hiro budget on the real stack: 5 minutes against a hidden per-minute limit, then a first start of 130 agents under a hidden 30/min and on a banked month (~15 min, see docs/benchmarks.md)
	set -o pipefail; go test -tags benchstack -count=1 -timeout 40m -run 'TestHiddenMinuteLimit|TestHiddenLimitFirstStart|TestBankedMonthFirstStart' -v ./worker/ | grep -E 'figures|Error|^(ok|FAIL|---)'

bench-public: tools postgres ## the public surface on the real stack: a replay flood vs the sweep's Hiro requests, a read flood vs sweep/deliver run times, one client's flood of each route vs another's reads (~12 min, see docs/reliability.md)
	set -o pipefail; go test -tags benchstack -count=1 -timeout 45m -run 'TestReplayFloodDoesNotSpendTheSweep|TestReadFloodDoesNotSlowTheWorkers|TestOneClientCannotStarveAnother' -v ./worker/ | grep -E 'figures|Error Trace|Error:|Messages|^(ok|FAIL|---)'

bench-tail: tools postgres ## discovery on the real stack: pacer worker reads the chain's tail for 1,000 agents beside strangers' traffic (Hiro's WebSocket refused), then with push on, then with the socket silenced 90 s; each swap's delay from block to row, Hiro requests a minute (~20 min, see docs/benchmarks.md)
	set -o pipefail; go test -tags benchstack -count=1 -timeout 45m -run TestTailBench -v ./worker/ | grep -E 'figure|late swap|Error Trace|Error:|^(ok|FAIL|---)'

bench-sunset-push: tools postgres ## Hiro's sunset answers on (the contracts' lists the only reader), 1,000 agents: every new swap within 30 s with push off, within 3 s with Hiro's WebSocket on (~20 min, see docs/benchmarks.md)
	set -o pipefail; go test -tags benchstack -count=1 -timeout 60m -run TestSunsetPushBench -v ./worker/ | grep -E 'figure|late swap|Error Trace|Error:|^(ok|FAIL|---)'

bench-outage: tools postgres ## Hiro down 30 minutes (real time) on a chain of 200,000 calls a day: the tail's gap reported, then filled, 0 missed, 0 doubled (~45 min, see docs/reliability.md)
	set -o pipefail; go test -tags benchstack -count=1 -timeout 120m -run TestTailOutageBench -v ./worker/ | grep -E 'figures|Error Trace|Error:|^(ok|FAIL|---)'

bench-board: tools postgres ## the competition's reads at 10,000 agents and 1,000,000 swaps: leaderboard (cached, uncached) and trades on the public listener vs the straightforward aggregate query (~6 min, see docs/benchmarks.md)
	set -o pipefail; go test -tags benchboard -count=1 -timeout 30m -run TestBenchBoard -v ./internal/api/ | grep -E 'figures|Error Trace|Error:|Messages|^(ok|FAIL|---)'

bench-board-outage: tools postgres ## a real pacer serve, Postgres cut, 1,000 GETs a second of distinct leaderboard pages for 60 s: VmRSS grows at most 50 MiB (~2 min, see docs/reliability.md)
	set -o pipefail; go test -tags benchboard -count=1 -timeout 15m -run TestBoardPagesWithPostgresDownOnARealServe -v ./internal/api/ | grep -E 'figure|Error Trace|Error:|Messages|^(ok|FAIL|---)'

bench-hint: tools postgres ## a fast-path insert wakes a sweep its pacing cooled down: the agent's swaps recorded while the status still shows the cooldown (1-6 min, see docs/reliability.md)
	set -o pipefail; go test -tags benchstack -count=1 -timeout 15m -run TestFastPathHintWakesACoolingSweep -v ./worker/ | grep -E 'figures|Error Trace|Error:|^(ok|FAIL|---)'

bench-push: tools postgres ## Chainhook push end to end on the real stack: polling alone vs push with 20% dropped, a rollback + re-apply (~3 min, see docs/benchmarks.md)
	set -o pipefail; go test -tags benchstack -count=1 -timeout 15m -run TestPushBench -v ./worker/ | grep -E 'figures|Error Trace|Error:|^(ok|FAIL|---)'

COST_HOURS ?= 6
COST_SCALE ?= 30
cost: tools postgres ## measure billed Temporal actions per simulated day on the real stack against the floor (COST_HOURS simulated hours at COST_SCALE× speed; default 6 h ≈ 12 min)
	COST_HOURS=$(COST_HOURS) COST_SCALE=$(COST_SCALE) COST_OUT=$(CURDIR)/.cost.md \
	  go test -tags cost -count=1 -timeout 120m -run TestMeasuredCost ./worker/ > /tmp/pacer-cost.log 2>&1 || { cat /tmp/pacer-cost.log; exit 1; }
	@cat $(CURDIR)/.cost.md

CATCHUP_OUTAGE ?= 5m
catchup: tools postgres ## the schedules' catch-up on the real stack: rollup on `* * * * *` under each policy, every worker down CATCHUP_OUTAGE, SIGKILL ×3 mid-backfill (~9 min)
	set -o pipefail; CATCHUP_OUTAGE=$(CATCHUP_OUTAGE) go test -tags catchup -count=1 -timeout 30m -run TestCatchUpOnTheRealStack -v ./worker/ \
	  | grep -E 'figures|^\s+\||Error|SIGKILL|_test\.go:[0-9]+:|^(ok|FAIL|---)'

sched-check: tools postgres ## the scheduler core on the real stack: a failed rollup run later and delivered, an operator's skip of an owed occurrence, coalesce over a 3-hour outage, a 6-hour backfill, cron-to-cron reconfigure, pause-restart-resume-terminate, a broken task refreshed then stopped (~6 min)
	set -o pipefail; go test -tags catchup -count=1 -timeout 20m -run 'TestFailedRollupIsRunLaterAndDelivered|TestOperatorSkipOnTheRealStack|TestCoalesceThreeHoursOnTheRealStack|TestBackfillSixHoursOnTheRealStack|TestCronToCronReconfigureOnTheRealStack|TestPauseRestartResumeTerminateOnTheRealStack|TestABrokenTaskAndARefreshOnTheRealStack' -v ./worker/ \
	  | grep -E '_test\.go:[0-9]+:|Error|^(ok|FAIL|---)'

rounds-check: tools postgres ## a round finalizing itself on the real stack: completeThrough published and advancing with agents' transactions in the mempool, the sweep paused past the round's grace (waits for completeThrough), finalized within 2 minutes of the resume, its round.finalized delivered signed (~4 min, SPEC §13)
	set -o pipefail; go test -tags roundstack -count=1 -timeout 15m -run 'TestRoundFinalizesItselfOnTheRealStack$$' -v ./worker/ \
	  | grep -E 'figures|Error|_test\.go:[0-9]+:|^(ok|FAIL|---)'

deliver-check: tools postgres ## deliveries on the real stack: 100 subscribers with failures, SIGKILL ×3 mid deliver run, Deliver activities per run (~8 min, see docs/benchmarks.md)
	set -o pipefail; go test -tags deliverstack -count=1 -timeout 30m -run 'TestDeliveriesOnTheRealStack$$' -v ./worker/ \
	  | grep -E 'figures|^\s+\||Error|SIGKILL|_test\.go:[0-9]+:|^(ok|FAIL|---)'

.PHONY: tenero-check
tenero-check: tools postgres ## a cut tenero run on the real stack fetches what pacing.PickTokens chooses: worker + workflow + the simulator's Tenero on the Starter plan (~15 min, see docs/benchmarks.md)
	set -o pipefail; go test -tags tenerostack -count=1 -timeout 40m -run TestTeneroFetchesWhatPickChoosesOnTheRealStack -v ./worker/ \
	  | grep -E 'figures|Error|_test\.go:[0-9]+:|^(ok|FAIL|---)'

deploy-check: tools postgres ## deploys on the real stack: build A runs v1, B deployed beside it and promoted, A stopped, rollback to A, A and B side by side; no workflow task failure, tenero's cadence (~10 min, see docs/reliability.md)
	set -o pipefail; go test -tags deploycheck -count=1 -timeout 20m -run 'TestDeploySequence$$|TestDeployWithoutVersioningFails|TestPromoteAfterTheOldBuildStopped' -v ./worker/ \
	  | grep -E 'figures|Error|_test\.go:[0-9]+:|^(ok|FAIL|---)'

wf-lines: ## non-test lines of this module's code that runs inside the workflow (go list -deps ./workflows; SPEC §3.8)
	@go list -deps -f '{{if and .Module .Module.Main}}{{$$d := .Dir}}{{range .GoFiles}}{{$$d}}/{{.}}{{"\n"}}{{end}}{{end}}' ./workflows | xargs cat | wc -l

histories: tools ## record the current revision's workflow histories (r<N>-*.json) and the bad history for the replay tests (never rewrites one; needs bin/temporal)
	go test -tags histories -count=1 -timeout 60m -run TestWriteHistories ./workflows/

clean: ## remove build output and local dev state
	rm -rf $(BIN)/pacer .dev
