package page

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// The charts are plain SVG whose geometry is computed here, so that the
// template only places shapes and the page needs no script to draw.

// Level is how worrying a value is; the template maps it to a colour.
type Level string

// The levels, best first.
const (
	LevelOK   Level = "ok"
	LevelWarn Level = "warn"
	LevelBad  Level = "bad"
	LevelNone Level = "none"
)

// Gauge is a half-circle gauge of what is left of a capacity.
type Gauge struct {
	Known bool
	// Value and Capacity are formatted for people.
	Value, Capacity string
	Percent         string
	Level           Level
	// Track is the whole arc, Fill the part that is left; SVG path data in
	// a 120×70 box.
	Track, Fill string
}

const (
	gaugeCX, gaugeCY, gaugeR = 60.0, 62.0, 50.0
)

// arcPoint is the point of the gauge's arc at fraction f (0 left, 1 right).
func arcPoint(f float64) (x, y float64) {
	theta := math.Pi * (1 - f)
	return gaugeCX + gaugeR*math.Cos(theta), gaugeCY - gaugeR*math.Sin(theta)
}

func arc(from, to float64) string {
	x0, y0 := arcPoint(from)
	x1, y1 := arcPoint(to)
	return fmt.Sprintf("M %.2f %.2f A %.0f %.0f 0 0 1 %.2f %.2f", x0, y0, gaugeR, gaugeR, x1, y1)
}

// newGauge shows remaining of capacity. Below a fifth left is bad (the
// month's warning threshold, SPEC §5.4), below half a warning.
func newGauge(remaining, capacity int64) Gauge {
	if capacity <= 0 {
		return Gauge{Level: LevelNone, Track: arc(0, 1)}
	}
	f := math.Max(0, math.Min(1, float64(remaining)/float64(capacity)))
	level := LevelOK
	switch {
	case f < 0.2:
		level = LevelBad
	case f < 0.5:
		level = LevelWarn
	}
	// Rounded down: a gauge reads 100% only when nothing is spent.
	g := Gauge{Known: true, Value: count(remaining), Capacity: count(capacity), Percent: fmt.Sprintf("%.0f%%", math.Floor(f*100)),
		Level: level, Track: arc(0, 1)}
	if f > 0 {
		g.Fill = arc(0, f)
	}
	return g
}

// Tick is an axis label; Anchor is its SVG text-anchor.
type Tick struct {
	X, Y   float64
	Text   string
	Anchor string
}

// Bar is one bar of a bar chart or one cell of a strip.
type Bar struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

// BarChart is a column chart over evenly spaced slots.
type BarChart struct {
	W, H   float64
	Bars   []Bar
	XTicks []Tick
	YTicks []Tick
	// Axis is the baseline's y.
	Axis float64
}

// chart box: the plot area inside a W×H viewBox, leaving room for labels.
const (
	padLeft, padRight, padTop, padBottom = 44.0, 8.0, 8.0, 18.0
)

// newBarChart lays out one bar per value; label names slot i for its
// tooltip and tick says which slots get an axis label (and what).
func newBarChart(values []int64, w, h float64, label func(i int) string, tick func(i int) string) BarChart {
	c := BarChart{W: w, H: h, Axis: h - padBottom}
	if len(values) == 0 {
		return c
	}
	var top int64 = 1
	for _, v := range values {
		top = max(top, v)
	}
	top = niceCeil(top)
	plotW, plotH := w-padLeft-padRight, h-padTop-padBottom
	slot := plotW / float64(len(values))
	for i, v := range values {
		bh := plotH * float64(v) / float64(top)
		x := padLeft + float64(i)*slot
		c.Bars = append(c.Bars, Bar{X: x + slot*0.1, Y: c.Axis - bh, W: slot * 0.8, H: bh, Class: "bar",
			Title: label(i) + ": " + count(v)})
		if t := tick(i); t != "" {
			c.XTicks = append(c.XTicks, Tick{X: x + slot/2, Y: h - 4, Text: t, Anchor: "middle"})
		}
	}
	c.YTicks = []Tick{{X: padLeft - 4, Y: c.Axis, Text: "0"}, {X: padLeft - 4, Y: padTop + 8, Text: compact(top)}}
	return c
}

// niceCeil rounds a chart's top up to 1, 2 or 5 times a power of ten, so
// the axis reads as a round number.
func niceCeil(v int64) int64 {
	if v <= 1 {
		return 1
	}
	p := int64(1)
	for p*10 <= v {
		p *= 10
	}
	for _, m := range []int64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// LineChart is the month's spend against the even pace.
type LineChart struct {
	W, H float64
	// Spend and Pace are SVG polyline points; Pace is empty when the quota
	// is unknown.
	Spend, Pace string
	NowX        float64
	Axis        float64
	XTicks      []Tick
	YTicks      []Tick
}

// Point is one step of a cumulative series.
type Point struct {
	At    time.Time
	Value int64
}

// newLineChart plots spend (cumulative, oldest first) over [start, end)
// with the even pace from 0 at start to quota at end (quota 0: unknown).
func newLineChart(spend []Point, quota int64, start, end, now time.Time, w, h float64) LineChart {
	c := LineChart{W: w, H: h, Axis: h - padBottom}
	top := max(quota, 1)
	for _, p := range spend {
		top = max(top, p.Value)
	}
	top = niceCeil(top)
	plotW, plotH := w-padLeft-padRight, h-padTop-padBottom
	length := end.Sub(start).Seconds()
	x := func(t time.Time) float64 {
		return padLeft + plotW*math.Max(0, math.Min(1, t.Sub(start).Seconds()/length))
	}
	y := func(v int64) float64 { return c.Axis - plotH*float64(v)/float64(top) }
	var b strings.Builder
	fmt.Fprintf(&b, "%.1f,%.1f", x(start), y(0))
	for _, p := range spend {
		fmt.Fprintf(&b, " %.1f,%.1f", x(p.At), y(p.Value))
	}
	c.Spend = b.String()
	if quota > 0 {
		c.Pace = fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(start), y(0), x(end), y(quota))
	}
	c.NowX = x(now)
	last := end.Add(-time.Second)
	c.XTicks = []Tick{
		{X: x(start), Y: h - 4, Text: start.Format("2 Jan"), Anchor: "start"},
		{X: x(start.AddDate(0, 0, 14)), Y: h - 4, Text: start.AddDate(0, 0, 14).Format("2 Jan"), Anchor: "middle"},
		{X: x(end), Y: h - 4, Text: last.Format("2 Jan"), Anchor: "end"},
	}
	c.YTicks = []Tick{{X: padLeft - 4, Y: c.Axis, Text: "0"}, {X: padLeft - 4, Y: padTop + 8, Text: compact(top)}}
	return c
}
