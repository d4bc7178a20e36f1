package main

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"os"
	"slices"
	"strings"
)

// writeHerdHTML writes a self-contained page of the herd figures: three
// log-log charts against the number of clients N (watch notifications in
// total, per release, and bytes of children lists returned), one line per
// recipe, beside the counts a recipe that wakes every waiter (N(N-1)/2)
// and one that wakes one (N-1) would give; and the table.
//
// On log-log axes a power of N is a straight line whose slope is its
// exponent: the herd's quadratic total climbs twice as steeply as the
// linear one, however few client counts were run.
func writeHerdHTML(path string, results []herdResult) error {
	var b bytes.Buffer
	if err := herdTemplate.Execute(&b, herdView(results)); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return usagef("--html: %v", err)
	}
	return nil
}

var herdColors = []string{"#cf222e", "#0969da", "#1a7f37", "#bf8700", "#8250df", "#57606a"}

type herdPageView struct {
	Charts  []chartView
	Recipes []legendEntry
	Results []herdResult
	Counts  string
}

type legendEntry struct{ Name, Color string }

type chartView struct {
	ID, Title, YTitle string
	Note              string
	W, H              float64
	Left, Top         float64
	Right, Bottom     float64
	XTicks, YTicks    []chartTick
	Series            []chartSeries
	Refs              []chartSeries
	XTitleX           float64
	YTitleY           float64
	Omitted           string // points a log scale cannot show
}

type chartTick struct {
	Pos   float64
	End   float64 // the tick's outer end
	Label string
	Major bool
}

type chartSeries struct {
	Name, Color string
	Path        string
	Points      []chartPoint
	LabelX      float64
	LabelY      float64
	Dashed      bool
}

type chartPoint struct {
	X, Y  float64
	Title string
}

// logAxis maps [10^lo, 10^hi] onto [from, to] on a log scale.
type logAxis struct {
	lo, hi   float64 // log10 of the ends
	from, to float64
}

// logPad is the room left beyond the least and the greatest value, so
// that no point sits on an axis's end: a sixth of a decade.
const logPad = 1.0 / 6

// newLogAxis spans [min, max] with room at both ends, and at least one
// decade.
func newLogAxis(min, max, from, to float64) logAxis {
	lo, hi := math.Log10(min)-logPad, math.Log10(max)+logPad
	if hi-lo < 1 {
		mid := (lo + hi) / 2
		lo, hi = mid-0.5, mid+0.5
	}
	return logAxis{lo: lo, hi: hi, from: from, to: to}
}

func (a logAxis) at(v float64) float64 {
	return a.from + (math.Log10(v)-a.lo)/(a.hi-a.lo)*(a.to-a.from)
}

// ticks: a labelled tick at each decade, and at 2 and 5 times it when the
// axis spans at most two decades; a small tick at the other multiples.
func (a logAxis) ticks() []chartTick {
	var out []chartTick
	few := a.hi-a.lo <= 2.5
	for d := math.Floor(a.lo); d <= a.hi; d++ {
		base := math.Pow(10, d)
		for m := 1.0; m <= 9; m++ {
			v := m * base
			if l := math.Log10(v); l < a.lo-1e-9 || l > a.hi+1e-9 {
				continue
			}
			t := chartTick{Pos: a.at(v), Major: m == 1}
			if m == 1 || (few && (m == 2 || m == 5)) {
				t.Label = shortNumber(v)
			}
			out = append(out, t)
		}
	}
	return out
}

// shortNumber writes 1, 20, 500, 1k, 20k, 5M.
func shortNumber(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}

func herdView(results []herdResult) herdPageView {
	var names []string
	var counts []int
	for _, r := range results {
		if !slices.Contains(names, r.Recipe) {
			names = append(names, r.Recipe)
		}
		if !slices.Contains(counts, r.Clients) {
			counts = append(counts, r.Clients)
		}
	}
	slices.Sort(counts)
	var cs []string
	for _, n := range counts {
		cs = append(cs, fmt.Sprint(n))
	}
	v := herdPageView{Results: results, Counts: strings.Join(cs, ", ")}
	if len(results) == 0 {
		return v
	}
	for i, n := range names {
		v.Recipes = append(v.Recipes, legendEntry{n, herdColors[i%len(herdColors)]})
	}
	nMax := float64(counts[len(counts)-1])
	type measure struct {
		id, title, ytitle, note string
		value                   func(herdResult) float64
		refs                    []func(n float64) float64
		refNames                []string
	}
	measures := []measure{
		{"notifications", "Watch notifications in total", "notifications", "until every client has held the lock",
			func(r herdResult) float64 { return float64(r.Notifications) },
			[]func(float64) float64{func(n float64) float64 { return n * (n - 1) / 2 }, func(n float64) float64 { return n - 1 }},
			[]string{"N(N−1)/2", "N−1"}},
		{"per-release", "Watch notifications per release", "notifications per release", "how many waiters each release wakes",
			func(r herdResult) float64 { return r.PerRelease },
			[]func(float64) float64{func(n float64) float64 { return n / 2 }, func(n float64) float64 { return 1 }},
			[]string{"N/2", "1"}},
		{"bytes", "Bytes of children lists returned", "bytes", "each getChildren returns up to N names: waking every waiter costs about N³ bytes, waking one about N²",
			func(r herdResult) float64 { return float64(r.BytesReturned) }, nil, nil},
	}
	const w, h, left, top, right, bottom = 420.0, 340.0, 62.0, 30.0, 404.0, 286.0
	for _, m := range measures {
		c := chartView{ID: m.id, Title: m.title, YTitle: m.ytitle, Note: m.note, W: w, H: h, Left: left, Top: top, Right: right, Bottom: bottom,
			XTitleX: (left + right) / 2, YTitleY: (top + bottom) / 2}
		yMin, yMax := math.Inf(1), math.Inf(-1)
		var omitted []string
		for _, r := range results {
			if y := m.value(r); y > 0 {
				yMin, yMax = math.Min(yMin, y), math.Max(yMax, y)
			} else {
				omitted = append(omitted, fmt.Sprintf("%s at N=%d (%g)", r.Recipe, r.Clients, y))
			}
		}
		for _, ref := range m.refs {
			for _, n := range []float64{2, nMax} {
				if y := ref(n); y > 0 {
					yMin, yMax = math.Min(yMin, y), math.Max(yMax, y)
				}
			}
		}
		if math.IsInf(yMin, 1) {
			yMin, yMax = 1, 10
		}
		// From N=2, the fewest a herd has: the laws show beyond the runs.
		xa := newLogAxis(2, nMax, left, right)
		ya := newLogAxis(yMin, yMax, bottom, top)
		c.XTicks, c.YTicks = xa.ticks(), ya.ticks()
		for i := range c.XTicks {
			c.XTicks[i].End = bottom + 3
			if c.XTicks[i].Major {
				c.XTicks[i].End = bottom + 6
			}
		}
		for i := range c.YTicks {
			c.YTicks[i].End = left - 3
			if c.YTicks[i].Major {
				c.YTicks[i].End = left - 6
			}
		}
		if len(omitted) > 0 {
			c.Omitted = "not drawn (zero has no place on a log scale): " + strings.Join(omitted, ", ")
		}
		// The references: dashed, over the whole axis.
		for k, ref := range m.refs {
			s := chartSeries{Name: m.refNames[k], Color: "#8c959f", Dashed: true}
			lo, hi := 2.0, nMax*math.Pow(10, logPad)
			var path strings.Builder
			for i := 0; i <= 40; i++ {
				n := lo * math.Pow(hi/lo, float64(i)/40)
				y := ref(n)
				if y <= 0 || math.Log10(y) < ya.lo || math.Log10(y) > ya.hi {
					continue
				}
				cmd := "L"
				if path.Len() == 0 {
					cmd = "M"
				}
				fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, xa.at(n), ya.at(y))
				s.LabelX, s.LabelY = xa.at(n), ya.at(y)
			}
			s.Path = strings.TrimSpace(path.String())
			c.Refs = append(c.Refs, s)
		}
		for i, name := range names {
			s := chartSeries{Name: name, Color: herdColors[i%len(herdColors)]}
			var path strings.Builder
			for _, r := range results {
				y := m.value(r)
				if r.Recipe != name || y <= 0 {
					continue
				}
				p := chartPoint{X: xa.at(float64(r.Clients)), Y: ya.at(y), Title: fmt.Sprintf("%s, N=%d: %s %s", name, r.Clients, shortFloat(y), m.ytitle)}
				cmd := "L"
				if path.Len() == 0 {
					cmd = "M"
				}
				fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, p.X, p.Y)
				s.Points = append(s.Points, p)
			}
			s.Path = strings.TrimSpace(path.String())
			c.Series = append(c.Series, s)
		}
		v.Charts = append(v.Charts, c)
	}
	return v
}

func shortFloat(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

var herdTemplate = template.Must(template.New("herd").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>zklab herd</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:1.2em 1.8em;color:#1f2328;max-width:1500px}
h1{font-size:1.6em;margin:.2em 0}
p{max-width:62em;line-height:1.45}
.charts{display:flex;flex-wrap:wrap;gap:1.2em;margin:1em 0}
.chart{border:1px solid #d0d7de;border-radius:6px;padding:6px 8px;background:#fff}
.chart h2{font-size:1.05em;margin:.2em .2em 0}
.chart .note{font-size:.85em;color:#57606a;margin:.1em .2em .3em;max-width:400px;min-height:2.4em}
.chart .omitted{font-size:.8em;color:#9a6700;max-width:430px}
svg text{font-size:11px;fill:#333}
svg .axis{stroke:#555}
svg .grid{stroke:#e1e4e8}
svg .grid.minor{stroke:#f3f4f6}
svg .tick{stroke:#555}
svg .axis-title{font-size:12px;fill:#444}
svg .ref{fill:none;stroke:#8c959f;stroke-width:1.5;stroke-dasharray:5 4}
svg .ref-label{fill:#6e7781;font-style:italic}
svg .series{fill:none;stroke-width:2.5}
.legend{display:flex;gap:1.5em;font-size:14px;align-items:center;flex-wrap:wrap}
.legend span{display:inline-flex;align-items:center;gap:.4em}
table{border-collapse:collapse;margin-top:.6em}
td,th{border:1px solid #d0d7de;padding:4px 10px;text-align:right}
th{background:#f6f8fa}
td:first-child,th:first-child{text-align:left}
</style>
</head><body>
<h1>The herd effect</h1>
<p>N clients queue on one lock: one holds it, N−1 wait. Each release wakes waiters through their watches. A recipe whose waiters all watch the lock's children wakes every waiter on every release, and each of them calls getChildren again only to find it is not first: N−1, then N−2, … notifications, N(N−1)/2 in all. A recipe whose waiters each watch only the node before theirs wakes one waiter per release: N−1 in all.</p>
<p>The axes are logarithmic, so a power of N is a straight line whose slope is its power: the quadratic total climbs twice as steeply as the linear one. Dashed grey lines are those two laws; the dots are the runs (N = {{.Counts}}).</p>
<div class="legend">{{range .Recipes}}<span><svg width="28" height="12"><line x1="1" y1="6" x2="27" y2="6" stroke="{{.Color}}" stroke-width="2.5"/><circle cx="14" cy="6" r="4" fill="{{.Color}}"/></svg>{{.Name}}</span>{{end}}<span><svg width="28" height="12"><line x1="1" y1="6" x2="27" y2="6" class="ref" stroke="#8c959f" stroke-width="1.5" stroke-dasharray="5 4"/></svg>the laws N(N−1)/2 and N−1</span></div>
<div class="charts">
{{range .Charts}}<div class="chart" id="chart-{{.ID}}"><h2>{{.Title}}</h2><div class="note">{{.Note}}</div>
<svg width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" xmlns="http://www.w3.org/2000/svg">
{{$c := .}}{{range .XTicks}}<line class="grid{{if not .Label}} minor{{end}}" x1="{{.Pos}}" y1="{{$c.Top}}" x2="{{.Pos}}" y2="{{$c.Bottom}}"/><line class="tick" x1="{{.Pos}}" y1="{{$c.Bottom}}" x2="{{.Pos}}" y2="{{.End}}"/>{{if .Label}}<text class="x-tick" x="{{.Pos}}" y="{{$c.Bottom}}" dy="18" text-anchor="middle">{{.Label}}</text>{{end}}
{{end}}{{range .YTicks}}<line class="grid{{if not .Label}} minor{{end}}" x1="{{$c.Left}}" y1="{{.Pos}}" x2="{{$c.Right}}" y2="{{.Pos}}"/><line class="tick" x1="{{.End}}" y1="{{.Pos}}" x2="{{$c.Left}}" y2="{{.Pos}}"/>{{if .Label}}<text class="y-tick" x="{{$c.Left}}" y="{{.Pos}}" dx="-7" dy="4" text-anchor="end">{{.Label}}</text>{{end}}
{{end}}<line class="axis" x1="{{.Left}}" y1="{{.Bottom}}" x2="{{.Right}}" y2="{{.Bottom}}"/><line class="axis" x1="{{.Left}}" y1="{{.Top}}" x2="{{.Left}}" y2="{{.Bottom}}"/>
<text class="axis-title x-title" x="{{.XTitleX}}" y="{{.Bottom}}" dy="38" text-anchor="middle">clients N (log scale)</text>
<text class="axis-title y-title" x="14" y="{{.YTitleY}}" transform="rotate(-90 14 {{.YTitleY}})" text-anchor="middle">{{.YTitle}} (log scale)</text>
{{range .Refs}}<path class="ref" d="{{.Path}}"/><text class="ref-label" x="{{.LabelX}}" y="{{.LabelY}}" dx="-4" dy="-6" text-anchor="end">{{.Name}}</text>
{{end}}{{range .Series}}<g class="recipe" data-recipe="{{.Name}}"><path class="series" d="{{.Path}}" stroke="{{.Color}}"/>{{$s := .}}{{range .Points}}<circle class="point" cx="{{.X}}" cy="{{.Y}}" r="4.5" fill="{{$s.Color}}" stroke="#fff"><title>{{.Title}}</title></circle>{{end}}</g>
{{end}}</svg>{{if .Omitted}}<div class="omitted">{{.Omitted}}</div>{{end}}</div>
{{end}}</div>
<table><tr><th>recipe</th><th>clients N</th><th>releases</th><th>notifications</th><th>per release</th><th>getChildren</th><th>bytes returned</th></tr>
{{range .Results}}<tr><td>{{.Recipe}}</td><td>{{.Clients}}</td><td>{{.Releases}}</td><td>{{.Notifications}}</td><td>{{printf "%.1f" .PerRelease}}</td><td>{{.GetChildren}}</td><td>{{.BytesReturned}}</td></tr>
{{end}}</table></body></html>
`))
