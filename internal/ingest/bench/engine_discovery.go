package bench

import (
	"time"

	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/hiro"
)

// DiscoveryEngine is the service's discovery engine (internal/discovery)
// as the chain benchmark drives it: its scan, its filter, its tail cadence
// and its choice of where the tail reads, as the sweep makes them.
var DiscoveryEngine = Engine{
	Name:    "discovery engine",
	NewScan: newEngineScan,
	Candidate: func(e hiro.Entry, agent func(string) bool) bool {
		return discovery.Filter{Agent: agent, Allowed: BenchAllowed}.Candidate(e)
	},
	NewPace: func() Pace { return &enginePace{} },
}

// enginePace is the sweep's pacing of the tail seen as a Pace: the
// traffic it observed, where the tail reads (discovery.PlanSource) and its
// interval, the plan's (discovery.TailInterval) at what the last read cost.
type enginePace struct {
	traffic discovery.Traffic
	source  discovery.Source
	cost    float64
}

func (p *enginePace) ObserveFeed(total int, page []hiro.Entry, onContract func(string) bool, at time.Time) {
	p.traffic.ObserveFeed(total, page, onContract, at)
}

func (p *enginePace) ObserveDetails(requests int, at time.Time) {
	p.traffic.ObserveDetails(requests, at)
}

func (p *enginePace) ObserveRead(requests int) { p.cost = float64(max(requests, 1)) }

func (p *enginePace) Contracts(contracts int, every time.Duration, ratePerMinute float64) bool {
	p.source = discovery.PlanSource(p.source, p.traffic, contracts, every, ratePerMinute)
	return p.source == discovery.SourceContracts
}

func (p *enginePace) Interval(every time.Duration, ratePerMinute float64) time.Duration {
	return discovery.TailInterval(every, p.cost, ratePerMinute)
}

// engineScan is a discovery.Scan seen as a Scanner.
type engineScan struct{ s *discovery.Scan }

func newEngineScan(from *Mark) Scanner {
	cfg := discovery.ScanConfig{}
	if from != nil {
		cfg.From = &discovery.Position{BlockHeight: from.Height, TxIndex: from.Index, TxID: from.TxID}
	}
	return engineScan{discovery.NewScan(cfg, discovery.State{})}
}

func (e engineScan) NextOffset() int { return e.s.NextOffset() }

func (e engineScan) AddFeed(entries []hiro.Entry, total int) ([]hiro.Entry, bool) {
	p := e.s.AddFeed(entries, total)
	return p.Fresh, p.Reached
}

func (e engineScan) Commit()    { e.s.Commit() }
func (e engineScan) Done() bool { return e.s.Done() }
func (e engineScan) Gap() bool  { return e.s.Gap() != nil }

func (e engineScan) Position() *Mark {
	p := e.s.Position()
	if p == nil {
		return nil
	}
	return &Mark{Height: p.BlockHeight, Index: p.TxIndex, TxID: p.TxID}
}
