#!/usr/bin/env bash
# make evidence: every check whose figures docs/ publishes, then one table of
# figures against their bounds (scripts/figures). Each check is one line
# below: a name, then the command (go test runs get -json added, so the
# table names the test that printed each figure). The run goes on past a
# failed check and exits 1 at the end if any figure missed its bound or any
# check failed. EVIDENCE_ONLY=regex runs the checks whose name matches.
#
# Which run where: `make test` (CI) runs every default test, and with them
# the figures they check (their rows say "make test" in docs/benchmarks.md);
# the checks below need minutes to hours of real time each, so they run here
# and not in CI.
set -uo pipefail
cd "$(dirname "$0")/.."

only=${EVIDENCE_ONLY:-.}
out=${EVIDENCE_DIR:-.evidence}
mkdir -p "$out"
log=$out/run.log
: > "$log"
failed=()

# check NAME [VAR=value...] COMMAND...; a go test command gets -json.
check() {
  local name=$1; shift
  [[ $name =~ $only ]] || return 0
  local began=$SECONDS rc envs=()
  while [[ $1 == *=* ]]; do envs+=("$1"); shift; done
  if [ "$1 $2" = "go test" ]; then shift 2; set -- go test -json "$@"; fi
  echo "== source: $name" >> "$log"
  env "${envs[@]}" "$@" > "$out/$name.log" 2>&1; rc=$?
  cat "$out/$name.log" >> "$log"
  printf 'evidence: %-14s exit %d in %dm%02ds (%s)\n' "$name" "$rc" $(((SECONDS-began)/60)) $(((SECONDS-began)%60)) "$out/$name.log"
  [ "$rc" = 0 ] || failed+=("$name")
}

w=./worker/
# name          command (one line per check; add yours here)
check pacing    go run ./internal/pacing/cmd/bench
check soak      PACER_SOAK_DAYS=30 go test -count=1 -timeout 30m -run '^TestSoakThirtyDaysOfTicking$' ./workflows/
check hidden    go test -tags benchstack -count=1 -timeout 40m -run '^(TestHiddenMinuteLimit|TestHiddenLimitFirstStart|TestBankedMonthFirstStart)$' $w
check public    go test -tags benchstack -count=1 -timeout 45m -run '^(TestReplayFloodDoesNotSpendTheSweep|TestReadFloodDoesNotSlowTheWorkers|TestOneClientCannotStarveAnother)$' $w
check tail      go test -tags benchstack -count=1 -timeout 30m -run '^TestTailBench$' $w
check sunset    go test -tags benchstack -count=1 -timeout 30m -run '^TestSunsetFromTheStartAtScale$' $w
check sunsetpush go test -tags benchstack -count=1 -timeout 40m -run '^TestSunsetPushBench$' $w
check outage    go test -tags benchstack -count=1 -timeout 120m -run '^TestTailOutageBench$' $w
check hint      go test -tags benchstack -count=1 -timeout 15m -run '^TestFastPathHintWakesACoolingSweep$' $w
check push      go test -tags benchstack -count=1 -timeout 15m -run '^TestPushBench$' $w
check stopkept  go test -tags benchstack -count=1 -timeout 15m -run '^TestStopOutlivesDeletedHistoryMinuteCheck$' $w
check board     go test -tags benchboard -count=1 -timeout 30m -run '^TestBenchBoard$' ./internal/api/
check boardmem  go test -tags benchboard -count=1 -timeout 15m -run '^TestBoardPagesWithPostgresDownOnARealServe$' ./internal/api/
check catchup   go test -tags catchup -count=1 -timeout 30m -run '^TestCatchUpOnTheRealStack$' $w
check sched     go test -tags catchup -count=1 -timeout 20m -run '^(TestFailedRollupIsRunLaterAndDelivered|TestOperatorSkipOnTheRealStack|TestCoalesceThreeHoursOnTheRealStack|TestBackfillSixHoursOnTheRealStack|TestCronToCronReconfigureOnTheRealStack|TestPauseRestartResumeTerminateOnTheRealStack)$' $w
check deliver   go test -tags deliverstack -count=1 -timeout 30m -run '^TestDeliveriesOnTheRealStack$' $w
check tenero    go test -tags tenerostack -count=1 -timeout 40m -run '^TestTeneroFetchesWhatPickChoosesOnTheRealStack$' $w
check deploy    go test -tags deploycheck -count=1 -timeout 20m -run '^(TestDeploySequence|TestDeployWithoutVersioningFails|TestPromoteAfterTheOldBuildStopped)$' $w
check cost      COST_HOURS="${COST_HOURS:-6}" COST_SCALE="${COST_SCALE:-30}" go test -tags cost -count=1 -timeout 120m -run '^TestMeasuredCost$' $w

echo
go run ./scripts/figures < "$log"; rc=$?
if [ ${#failed[@]} -gt 0 ]; then
  echo "checks that exited non-zero: ${failed[*]}"
  rc=1
fi
exit $rc
