// Package cron is pacer's schedules (SPEC §3.4): the schedule format, fire
// times in a time zone with pacer's own daylight-saving policy, jitter, and
// the catch-up planner that decides, after a late wake-up, which missed
// occurrences run and which are passed, and why. It is pure and
// deterministic: time is always an argument, nothing reads a clock, starts
// a goroutine or ranges over a map for order, and the zone database is
// embedded (zone.go), so the scheduler workflow calls it directly and every
// worker, and every replay, computes the same times.
//
// # Fire times
//
// The cron text is parsed by github.com/robfig/cron/v3: five fields and the
// @yearly, @monthly, @weekly, @daily, @midnight and @hourly aliases, with day
// of month and day of week combined as in Vixie cron (either matches when
// both are restricted). The library only matches fields: it runs in UTC over
// wall-clock readings, where no clock changes. pacer walks the zone's
// periods of constant UTC offset (time.Time.ZoneBounds) and maps each
// reading to the instants at which the zone's clock shows it, then applies
// the spec's policy:
//
//   - a reading the clock jumps over (spring forward) is a gap: GapShift
//     runs it at the first instant after the gap, GapSkip does not run it and
//     the ledger records it as skipped (dst_gap) at that instant. Several
//     readings of one gap are one occurrence, and when the reading right after
//     the gap fires itself, it stands for them;
//   - a reading the clock shows twice (fall back) is an overlap:
//     OverlapFirst runs the first instant, OverlapLast the second,
//     OverlapBoth both.
//
// # Why robfig/cron/v3 and not netresearch/go-cron
//
// netresearch/go-cron is the maintained fork of robfig/cron (robfig has had
// no release since v3.0.1 in 2020): it fixes the TZ= parsing panics, adds
// extended syntax (L, W, #n, H, a year field) and runs jobs of a
// spring-forward gap at once. pacer uses neither library's runner nor its
// DST behaviour, only the field parser and matcher, and for that robfig
// is the better fit:
//
//   - fire times must never change under a dependency update: a workflow
//     computes them on every worker and in every replay. robfig's parser is
//     frozen; go-cron is a v0 module whose v0.9.0 (January 2026) changed day
//     of month / day of week matching from OR to AND by default, which would
//     silently move the fire times of specs such as "0 0 13 * 5";
//   - robfig reads specs as Vixie cron and Kubernetes CronJob do (Kubernetes
//     uses robfig/cron/v3), which is what operators expect;
//   - robfig's known defects do not reach pacer: the TZ= panic is refused
//     before parsing (the zone is the spec's "tz"), its DST handling is never
//     used, and a fuzz test holds the parser to errors, never panics.
//
// # Catch-up
//
// See Schedule.Plan for the rules and State for what the scheduler carries
// per task. Every occurrence is keyed by (task, nominal time): the
// activities write the task_runs ledger from the pacer.Occurrence a run
// carries, its passed occurrences included, so workflow code writes nothing.
package cron
