package bench

import (
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/hiro"
)

// DiscoveryEngine is the service's discovery engine (internal/discovery)
// as the chain benchmark drives it: its scan and its filter; its plan
// (discovery.Plan) and its choice of where the tail reads
// (discovery.PlanSource) drive every run (tailSim).
var DiscoveryEngine = Engine{
	Name:    "discovery engine",
	NewScan: newEngineScan,
	Candidate: func(e hiro.Entry, agent func(string) bool) bool {
		return discovery.Filter{Agent: agent, Allowed: BenchAllowed}.Candidate(e)
	},
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
