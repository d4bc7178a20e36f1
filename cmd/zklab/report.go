package main

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"io"
	"strings"

	"github.com/zklab/zklab/sim"
)

// holdInterval is a stretch of steps during which a client believed it held
// a lock.
type holdInterval struct {
	Client   int
	From, To uint64
	Token    int64
	Label    string
}

// porcupineView is one of porcupine's visualizations, a whole HTML page.
type porcupineView struct {
	Title string
	HTML  string
}

// report is what a run's HTML report shows.
type report struct {
	Title   string
	Verdict string
	Clients int
	Trace   []sim.Event
	Holds   []holdInterval
	Views   []porcupineView
}

// writeReport writes a self-contained page: the verdict, a swimlane
// timeline drawn as SVG (one lane per client: lock-holding intervals,
// requests, replies, watch notifications, faults, session changes), and
// porcupine's visualization of the histories. The first visualization is
// the page itself, with the timeline put before it (its ids do not clash
// with ours); the others follow in frames of their own.
func writeReport(w io.Writer, r report) error {
	var top bytes.Buffer
	if err := reportTemplate.Execute(&top, r.view()); err != nil {
		return err
	}
	if len(r.Views) == 0 {
		_, err := fmt.Fprintf(w, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title></head><body>\n%s</body></html>\n", html.EscapeString(r.Title), top.String())
		return err
	}
	page := r.Views[0].HTML
	i := strings.Index(page, "<body>")
	if i < 0 {
		return fmt.Errorf("report: porcupine's page has no <body>")
	}
	i += len("<body>")
	var rest strings.Builder
	fmt.Fprintf(&rest, "<h2>%s</h2>\n", html.EscapeString(r.Views[0].Title))
	tail := page[i:]
	j := strings.LastIndex(tail, "</body>")
	if j < 0 {
		return fmt.Errorf("report: porcupine's page has no </body>")
	}
	var frames strings.Builder
	for _, v := range r.Views[1:] {
		fmt.Fprintf(&frames, "<h2>%s</h2>\n<iframe class=\"porcupine\" style=\"width:100%%;height:420px;border:1px solid #ccc\" srcdoc=\"%s\"></iframe>\n",
			html.EscapeString(v.Title), html.EscapeString(v.HTML))
	}
	_, err := io.WriteString(w, page[:i]+"\n"+top.String()+rest.String()+tail[:j]+frames.String()+tail[j:])
	return err
}

// The timeline's geometry, in SVG units.
const (
	laneHeight  = 44
	laneTop     = 30
	labelWidth  = 60
	plotWidth   = 1100
	markHalfLen = 8
)

type timelineView struct {
	Title, Verdict string
	Width, Height  int
	Lanes          []laneView
	Axis           []axisTick
}

type laneView struct {
	Name  string
	Y     int
	Marks []markView
}

type markView struct {
	Class, Title string
	X, Y, W, H   float64
	Y2           float64 // a line's end
	Shape        string  // rect, line, circle, text
	Text         string
}

type axisTick struct {
	X     float64
	Label string
}

func (r report) view() timelineView {
	var lastStep uint64 = 1
	for _, e := range r.Trace {
		lastStep = max(lastStep, e.Step)
	}
	for _, h := range r.Holds {
		lastStep = max(lastStep, h.To)
	}
	x := func(step uint64) float64 { return labelWidth + float64(step)/float64(lastStep)*plotWidth }
	v := timelineView{Title: r.Title, Verdict: r.Verdict, Width: labelWidth + plotWidth + 20, Height: laneTop + r.Clients*laneHeight + 30}
	for c := 1; c <= r.Clients; c++ {
		v.Lanes = append(v.Lanes, laneView{Name: fmt.Sprintf("c%d", c), Y: laneTop + (c-1)*laneHeight})
	}
	lane := func(c int) *laneView {
		if c < 1 || c > len(v.Lanes) {
			return nil
		}
		return &v.Lanes[c-1]
	}
	for _, h := range r.Holds {
		l := lane(h.Client)
		if l == nil {
			continue
		}
		label := h.Label
		if label == "" {
			label = fmt.Sprintf("holds the lock (token %d), steps %d-%d", h.Token, h.From, h.To)
		}
		l.Marks = append(l.Marks, markView{Class: "hold", Shape: "rect", Title: label, X: x(h.From), Y: float64(l.Y + 6), W: max(2, x(h.To)-x(h.From)), H: laneHeight - 12})
	}
	for _, e := range r.Trace {
		l := lane(e.Client)
		if l == nil {
			continue
		}
		mid := float64(l.Y + laneHeight/2)
		title := fmt.Sprintf("step %d, %s: %s", e.Step, strings.TrimSpace(formatTime(e)), strings.TrimSpace(e.Text()))
		switch e.Kind {
		case "send":
			l.Marks = append(l.Marks, markView{Class: "request", Shape: "line", Title: title, X: x(e.Step), Y: mid - markHalfLen, Y2: mid})
		case "recv":
			l.Marks = append(l.Marks, markView{Class: "reply", Shape: "line", Title: title, X: x(e.Step), Y: mid, Y2: mid + markHalfLen})
		case "watch":
			l.Marks = append(l.Marks, markView{Class: "watch", Shape: "circle", Title: title, X: x(e.Step), Y: mid, W: 4})
		case "fault":
			l.Marks = append(l.Marks, markView{Class: "fault", Shape: "rect", Title: title, X: x(e.Step) - 2, Y: float64(l.Y + 2), W: 4, H: laneHeight - 4})
		case "session":
			if e.State == "StateExpired" {
				l.Marks = append(l.Marks, markView{Class: "expired", Shape: "text", Title: title, X: x(e.Step), Y: mid + 5, Text: "✕"})
			} else if e.State == "StateDisconnected" {
				l.Marks = append(l.Marks, markView{Class: "disconnected", Shape: "text", Title: title, X: x(e.Step), Y: mid + 5, Text: "⌁"})
			}
		}
	}
	for i := 0; i <= 10; i++ {
		step := lastStep * uint64(i) / 10
		v.Axis = append(v.Axis, axisTick{X: x(step), Label: fmt.Sprint(step)})
	}
	return v
}

func formatTime(e sim.Event) string {
	ms := e.Time.Milliseconds()
	return fmt.Sprintf("%d.%03ds", ms/1000, ms%1000)
}

var reportTemplate = template.Must(template.New("timeline").Parse(`<style>
#zklab-report{font-family:sans-serif;margin:1em}
#legend{position:static !important}
#zklab-report pre{background:#f6f6f6;padding:8px;white-space:pre-wrap}
#zklab-timeline .hold{fill:rgba(46,160,67,.35);stroke:#2ea043}
#zklab-timeline .request{stroke:#1f77b4;stroke-width:1}
#zklab-timeline .reply{stroke:#9467bd;stroke-width:1}
#zklab-timeline .watch{fill:#ff7f0e}
#zklab-timeline .fault{fill:#d62728}
#zklab-timeline .expired{fill:#d62728;font-weight:bold}
#zklab-timeline .disconnected{fill:#8c564b}
#zklab-timeline .lane-line{stroke:#ddd}
</style>
<div id="zklab-report">
<h1>{{.Title}}</h1>
<pre id="zklab-verdict">{{.Verdict}}</pre>
<h2>Timeline</h2>
<p>One lane per client, steps left to right. Green: the client believes it holds the lock. Ticks above the lane: requests; below: replies; orange dots: watch notifications; red bars: faults; ✕: session expired; ⌁: disconnected. Hover for details.</p>
<svg id="zklab-timeline" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">
{{range .Lanes}}<g class="lane" data-client="{{.Name}}">
<text x="4" y="{{.Y}}" dy="26">{{.Name}}</text>
<line class="lane-line" x1="60" y1="{{.Y}}" x2="1160" y2="{{.Y}}"/>
{{range .Marks}}{{if eq .Shape "rect"}}<rect class="{{.Class}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}"><title>{{.Title}}</title></rect>
{{else if eq .Shape "line"}}<line class="{{.Class}}" x1="{{.X}}" y1="{{.Y}}" x2="{{.X}}" y2="{{.Y2}}"><title>{{.Title}}</title></line>
{{else if eq .Shape "circle"}}<circle class="{{.Class}}" cx="{{.X}}" cy="{{.Y}}" r="{{.W}}"><title>{{.Title}}</title></circle>
{{else}}<text class="{{.Class}}" x="{{.X}}" y="{{.Y}}" text-anchor="middle">{{.Text}}<title>{{.Title}}</title></text>
{{end}}{{end}}</g>
{{end}}<g class="axis">{{range .Axis}}<text x="{{.X}}" y="{{$.Height}}" dy="-8" text-anchor="middle" font-size="10">{{.Label}}</text>{{end}}</g>
</svg>
</div>
`))
