package main

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zklab/zklab/scenarios"
	"github.com/zklab/zklab/sim"
)

// porcupineView is one of porcupine's visualizations, a whole HTML page.
type porcupineView struct {
	Title string
	HTML  string
}

// storyStep is one moment of a story told beside the timeline: its
// number is drawn on the picture where (step) and on whom (client) it
// happens.
type storyStep struct {
	Client int
	Step   uint64
	Text   string
	// Top puts the number in the lane's top row, beside a fault's or an
	// expiry's label, rather than on the lock's row.
	Top bool
}

// report is what a run's HTML report shows.
type report struct {
	Title   string
	Summary string // recipe, clients, store: one line
	Verdict string // the verdict as `zklab run` prints it
	// Failed names the checks that found a violation; empty for a pass.
	Failed []string
	// Intro and Story are the story's words (splitbrain): a paragraph,
	// then numbered steps, each drawn on the timeline; Moral closes it.
	Intro []string
	Story []storyStep
	Moral []string
	// Scenario is the scenario file's text; Seed its seed; Replay the
	// command that replays the run.
	Scenario string
	Seed     uint64
	Replay   string
	Real     bool // a run on a real server: events, not steps; wall-clock time
	// Served is set for a served history's report (zklab run --history):
	// Scenario then lists its sessions, and there is no seed.
	Served bool
	// Undecided says why the verdict is neither a pass nor a failure.
	Undecided string
	Run       *scenarios.Report
	Views     []porcupineView
}

// writeReport writes a self-contained page: the verdict, the story if
// there is one, a swimlane timeline drawn as SVG on a virtual-time axis
// (one lane per client: lock-holding intervals, store reads and writes,
// requests, replies, watch notifications, labelled faults, session
// timeouts and the server's expiries; the split-brain window across the
// lanes), the scenario and the command that replays it, and porcupine's
// visualization of the histories. The first visualization is the page
// itself, with the report put before it (its ids do not clash with
// ours); the others follow in frames of their own.
func writeReport(w io.Writer, r report) error {
	var top bytes.Buffer
	if err := reportTemplate.Execute(&top, r.view()); err != nil {
		return err
	}
	title := "<title>" + html.EscapeString(r.Title) + "</title>"
	if len(r.Views) == 0 {
		_, err := fmt.Fprintf(w, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title></head><body>\n%s</body></html>\n", html.EscapeString(r.Title), top.String())
		return err
	}
	prefix := "c"
	if r.Served {
		prefix = "s"
	}
	page := strings.Replace(relabelClients(r.Views[0].HTML, prefix), "<title>Porcupine</title>", title, 1)
	i := strings.Index(page, "<body>")
	if i < 0 {
		return fmt.Errorf("report: porcupine's page has no <body>")
	}
	i += len("<body>")
	var rest strings.Builder
	fmt.Fprintf(&rest, "<div class=\"zklab-section\"><h2>%s</h2>\n<p>%s</p></div>\n", html.EscapeString(r.Views[0].Title), porcupineNote)
	tail := page[i:]
	j := strings.LastIndex(tail, "</body>")
	if j < 0 {
		return fmt.Errorf("report: porcupine's page has no </body>")
	}
	var frames strings.Builder
	for _, v := range r.Views[1:] {
		fmt.Fprintf(&frames, "<div class=\"zklab-section\"><h2>%s</h2>\n<iframe class=\"porcupine\" style=\"width:100%%;height:420px;border:1px solid #ccc\" srcdoc=\"%s\"></iframe></div>\n",
			html.EscapeString(v.Title), html.EscapeString(relabelClients(v.HTML, prefix)))
	}
	_, err := io.WriteString(w, page[:i]+"\n"+top.String()+rest.String()+tail[:j]+frames.String()+tail[j:])
	return err
}

const porcupineNote = `porcupine's drawing of the history: one row per client (c1, c2, …; a served history's sessions s1, s2, …), time in steps, each operation from its call to its return; the rows "faults" and "server" mark the faults and the sessions the server expired. Click an operation to see the order porcupine found, or hover for details.`

// relabelScript names porcupine's client rows c1, c2, … (a served
// history's sessions s1, s2, …) as the rest of the report does: porcupine
// numbers them from 0 (its ClientId, which the scenarios set to the
// client's number minus one).
const relabelScript = `<script>
for (const t of document.querySelectorAll('#canvas svg > g:first-of-type > text')) {
  if (/^\d+$/.test(t.textContent)) t.textContent = 'PREFIX' + (Number(t.textContent) + 1)
}
</script>
`

func relabelClients(page, prefix string) string {
	j := strings.LastIndex(page, "</body>")
	if j < 0 {
		return page
	}
	return page[:j] + strings.Replace(relabelScript, "PREFIX", prefix, 1) + page[j:]
}

// The timeline's geometry, in SVG units (CSS pixels).
const (
	plotLeft   = 70.0   // the lanes' names are left of it
	plotWidth  = 1240.0 // the axis runs over this
	svgWidth   = plotLeft + plotWidth + 30
	axisTop    = 42.0 // the time axis's line
	laneHeight = 100.0
	serverLane = 48.0
	// timeShare is the part of the axis's length given to virtual time;
	// the rest is shared equally among the steps, so that steps taken at
	// one instant stay apart. Of a 30 s pause and a 100 ms hold, the time
	// parts are 300 to 1; each has besides the room of its steps.
	timeShare = 0.7
	charWidth = 6.3 // an 11px sans-serif character, about
)

// The rows of a client's lane, as offsets from its top: labels of faults
// and expiries; the lock held, with requests above its middle and replies
// below; the session timeout; the store's reads and writes.
const (
	rowLabel   = 13.0
	rowHoldTop = 20.0
	rowHoldMid = 30.0
	rowHoldBot = 40.0
	rowTimeout = 56.0 // the bracket's line; its label below
	rowStore   = 76.0 // the top of a store mark, 14 high
)

// axis maps steps and times to x. Every step has a time (of the last
// event at or before it); x is timeShare of the axis by time, the rest
// by step.
type axis struct {
	steps    []uint64
	times    []time.Duration // non-decreasing, one per step of steps
	lastStep uint64
	end      time.Duration
	share    float64
}

func newAxis(rep *scenarios.Report) *axis {
	type point struct {
		step uint64
		t    time.Duration
	}
	// The axis ends with the last event drawn, not with the run: a run
	// looks at whether its workload is over once a second of virtual
	// time, and what lies between is empty.
	pts := []point{{0, 0}}
	for _, e := range rep.Events {
		pts = append(pts, point{e.Step, e.Time})
	}
	for _, h := range rep.Holds {
		pts = append(pts, point{h.From, h.FromTime}, point{h.To, h.ToTime})
	}
	for _, op := range rep.Store {
		pts = append(pts, point{op.Call, op.CallTime}, point{op.Return, op.ReturnTime})
	}
	// A served history's requests, faults and expiries are not events.
	for _, q := range rep.Requests {
		pts = append(pts, point{q.From, q.FromTime}, point{q.To, q.ToTime})
	}
	for _, f := range rep.Faults {
		pts = append(pts, point{f.Step, f.Time})
	}
	for _, x := range rep.Expiries {
		pts = append(pts, point{x.Step, x.Time})
	}
	slices.SortStableFunc(pts, func(a, b point) int {
		if a.step != b.step {
			if a.step < b.step {
				return -1
			}
			return 1
		}
		if a.t != b.t {
			if a.t < b.t {
				return -1
			}
			return 1
		}
		return 0
	})
	a := &axis{share: timeShare}
	for _, p := range pts {
		if n := len(a.steps); n > 0 && a.steps[n-1] == p.step {
			continue // a step's first time: the events of a step share it
		}
		t := p.t
		if n := len(a.times); n > 0 {
			t = max(t, a.times[n-1])
		}
		a.steps, a.times = append(a.steps, p.step), append(a.times, t)
	}
	// A fault that outlasts the run's last step (a restart after the
	// workload ended) still shows its length, past one more step.
	last := a.steps[len(a.steps)-1]
	for _, f := range rep.Faults {
		if f.Kind != sim.FaultCrash && f.EndStep == 0 && f.End > a.times[len(a.times)-1] {
			if a.steps[len(a.steps)-1] == last {
				a.steps, a.times = append(a.steps, last+1), append(a.times, f.End)
			}
			a.times[len(a.times)-1] = max(a.times[len(a.times)-1], f.End)
		}
	}
	a.lastStep = max(1, a.steps[len(a.steps)-1])
	a.end = a.times[len(a.times)-1]
	if a.end <= 0 {
		a.share = 0 // all at one instant: steps alone
	}
	return a
}

func (a *axis) x(step float64, t time.Duration) float64 {
	t = min(t, a.end) // a crash lasts to the end of the run, past the axis
	f := (1 - a.share) * step / float64(a.lastStep)
	if a.share > 0 {
		f += a.share * float64(t) / float64(a.end)
	}
	return plotLeft + plotWidth*f
}

// timeOf is the time of a step: that of the last step known at or
// before it.
func (a *axis) timeOf(step uint64) time.Duration {
	i := sort.Search(len(a.steps), func(i int) bool { return a.steps[i] > step })
	if i == 0 {
		return 0
	}
	return a.times[i-1]
}

func (a *axis) xStep(step uint64) float64 { return a.x(float64(step), a.timeOf(step)) }

// xTime places a time: at the first step that has it, or between the
// last step before it and the first after.
func (a *axis) xTime(t time.Duration) float64 {
	i := sort.Search(len(a.times), func(i int) bool { return a.times[i] >= t })
	switch {
	case i == len(a.times):
		return a.x(float64(a.lastStep), t)
	case a.times[i] == t || i == 0:
		return a.x(float64(a.steps[i]), t)
	}
	t0, t1 := a.times[i-1], a.times[i]
	s1 := float64(a.steps[i])
	s0 := max(float64(a.steps[i-1]), s1-1) // the steps after i-1 have its time
	return a.x(s0+(s1-s0)*float64(t-t0)/float64(t1-t0), t)
}

type timelineView struct {
	Width, Height float64
	LanesTop      float64
	LanesBottom   float64
	Lanes         []laneView
	TimeTicks     []tickView
	StepTicks     []tickView
	Windows       []windowView
	Markers       []markerView
	LanesH        float64
	PlotRight     float64
	StepAxisY     float64
	TimeShare     int    // percent
	StepName      string // step, or event on a real server
	TimeName      string // virtual, or wall-clock
}

type laneView struct {
	Name   string
	Y, H   float64
	Shaded bool
	Marks  []markView
}

type markView struct {
	Class, Title string
	Shape        string // rect, line, circle, text, path
	X, Y, W, H   float64
	X2, Y2       float64
	Text         string
	Anchor       string
	D            string
}

type tickView struct {
	X      float64
	Y1, Y2 float64
	Label  string
	Major  bool
}

type windowView struct {
	X, W   float64
	Label  string
	Title  string
	LabelX float64
	Anchor string
}

type markerView struct {
	X, Y  float64
	CX    float64 // the circle's centre, left of the moment it points at
	N     int
	Title string
}

// labels keeps the spans of the labels placed on one row, so that a
// label that would cover another is left to its tooltip.
type labels struct{ spans [][2]float64 }

// reserve keeps a span that labels must not cover: a mark's.
func (l *labels) reserve(x, w float64) { l.spans = append(l.spans, [2]float64{x, x + w}) }

func (l *labels) place(x, w float64) bool {
	for _, s := range l.spans {
		if x < s[1]+4 && x+w > s[0]-4 {
			return false
		}
	}
	l.spans = append(l.spans, [2]float64{x, x + w})
	return true
}

func textWidth(s string) float64 { return float64(len([]rune(s))) * charWidth }

func (r report) view() pageView {
	p := pageView{report: r}
	if r.Run != nil {
		p.Timeline = timeline(r.Run, r.Story)
		p.HasTimeline = true
	}
	for i, s := range r.Story {
		p.StoryItems = append(p.StoryItems, storyItem{N: i + 1, Text: s.Text})
	}
	return p
}

type pageView struct {
	report
	Timeline    timelineView
	HasTimeline bool
	StoryItems  []storyItem
}

type storyItem struct {
	N    int
	Text string
}

func clientName(c int) string {
	if c == 0 {
		return "server"
	}
	return fmt.Sprintf("c%d", c)
}

// seconds formats a virtual time for a label: 12.102s, 50ms, 30s.
func seconds(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d >= time.Minute:
		// 30m, 1h30m, 2h0m5s: the units that are there, to the second.
		d = d.Round(time.Second)
		h, m, sec := d/time.Hour, d%time.Hour/time.Minute, d%time.Minute/time.Second
		out := ""
		if h > 0 {
			out = fmt.Sprintf("%dh", h)
		}
		if m > 0 || (h > 0 && sec > 0) {
			out += fmt.Sprintf("%dm", m)
		}
		if sec > 0 {
			out += fmt.Sprintf("%ds", sec)
		}
		return out
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	case d < time.Second:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + "ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// faultLabel says what a fault does, in a few words.
func faultLabel(f scenarios.FaultSpan) string {
	switch f.Kind {
	case sim.FaultPause:
		return "paused " + seconds(f.Duration)
	case sim.FaultPartition:
		return "partitioned " + seconds(f.Duration)
	case sim.FaultDisconnect:
		if f.Duration == 0 {
			return "connection closed"
		}
		return "disconnected " + seconds(f.Duration)
	case sim.FaultRestart:
		if f.Duration == 0 {
			return "server restarted"
		}
		return "server down " + seconds(f.Duration)
	case sim.FaultCrash:
		return "crashed"
	case sim.FaultExpire:
		return "session expired by a fault"
	case sim.FaultDropRequest:
		return "next request to be lost"
	case sim.FaultDropReply:
		return "next reply to be lost"
	// The control API's faults the simulator does not inject (zklab serve
	// --control, drawn from a served history).
	case faultAddDelay:
		return "requests delayed " + seconds(f.Duration)
	case faultFailRequests:
		return "requests to fail"
	case faultNoResponse:
		return "replies to be withheld"
	case faultRejectConnections:
		return "connections refused"
	case faultReset:
		return "faults reset"
	}
	if strings.Contains(f.Text, "request dropped") {
		return "request lost"
	}
	return "reply lost"
}

// splitWindows are the stretches of steps in which two clients believed
// they held the lock, one of them exclusively.
func splitWindows(holds []scenarios.Hold) [][3]uint64 {
	var out [][3]uint64 // from, to, and the two clients (packed)
	for i, a := range holds {
		for _, b := range holds[i+1:] {
			if a.Client == b.Client || (a.Shared && b.Shared) {
				continue
			}
			from, to := max(a.From, b.From), min(a.To, b.To)
			if from >= to {
				continue
			}
			c1, c2 := min(a.Client, b.Client), max(a.Client, b.Client)
			out = append(out, [3]uint64{from, to, uint64(c1)<<32 | uint64(c2)})
		}
	}
	slices.SortFunc(out, func(a, b [3]uint64) int {
		if a[0] != b[0] {
			if a[0] < b[0] {
				return -1
			}
			return 1
		}
		if a[1] != b[1] {
			if a[1] < b[1] {
				return -1
			}
			return 1
		}
		if a[2] < b[2] {
			return -1
		} else if a[2] > b[2] {
			return 1
		}
		return 0
	})
	return out
}

// niceDurations are the intervals between time ticks: round in their unit.
var niceDurations = []time.Duration{
	time.Microsecond, 2 * time.Microsecond, 5 * time.Microsecond, 10 * time.Microsecond, 20 * time.Microsecond, 50 * time.Microsecond,
	100 * time.Microsecond, 200 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// niceDuration is the least nice interval at or above d; past a day, a
// whole number of days.
func niceDuration(d time.Duration) time.Duration {
	for _, n := range niceDurations {
		if n >= d {
			return n
		}
	}
	day := 24 * time.Hour
	return (d + day - 1) / day * day
}

// niceStep is the least of 1, 2, 5 × 10^k at or above v.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func timeline(rep *scenarios.Report, story []storyStep) timelineView {
	a := newAxis(rep)
	v := timelineView{Width: svgWidth, LanesTop: axisTop + 6, TimeShare: int(math.Round(a.share * 100)), PlotRight: plotLeft + plotWidth,
		StepName: "step", TimeName: "virtual"}
	if rep.Real {
		v.StepName, v.TimeName = "event", "wall-clock"
	}
	hasServer := false
	for _, f := range rep.Faults {
		if f.Client == 0 {
			hasServer = true
		}
	}
	// A served history's lanes are sessions, named by the Report.
	name := func(c int) string {
		if c >= 1 && c <= len(rep.Lanes) {
			return rep.Lanes[c-1]
		}
		return clientName(c)
	}
	y := v.LanesTop
	for c := 1; c <= rep.Clients; c++ {
		v.Lanes = append(v.Lanes, laneView{Name: name(c), Y: y, H: laneHeight, Shaded: c%2 == 0})
		y += laneHeight
	}
	if hasServer {
		v.Lanes = append(v.Lanes, laneView{Name: "server", Y: y, H: serverLane, Shaded: rep.Clients%2 == 1})
		y += serverLane
	}
	v.LanesBottom = y
	v.LanesH = y - v.LanesTop
	v.StepAxisY = y + 4
	v.Height = y + 48
	lane := func(c int) *laneView {
		switch {
		case c >= 1 && c <= rep.Clients:
			return &v.Lanes[c-1]
		case c == 0 && hasServer:
			return &v.Lanes[len(v.Lanes)-1]
		}
		return nil
	}
	top := make([]labels, len(v.Lanes)) // each lane's top row of labels
	low := make([]labels, len(v.Lanes)) // each lane's store row
	mid := make([]labels, len(v.Lanes)) // each lane's row below the session timeout
	laneIndex := func(l *laneView) int { return int((l.Y - v.LanesTop) / laneHeight) }
	add := func(l *laneView, m markView) { l.Marks = append(l.Marks, m) }
	// label writes text at x on the first of the rows where it covers no
	// other label; where it fits nowhere, its mark's tooltip says it.
	type row struct {
		placed []labels
		dy     float64 // the baseline, from the lane's top
	}
	// A label that would run past the plot's right end goes left of its
	// mark, which begins at left.
	label := func(l *laneView, rows []row, class string, x, left float64, text, title string) {
		i := min(laneIndex(l), len(v.Lanes)-1)
		w := textWidth(text)
		if x+w > svgWidth-4 {
			x = left - 6 - w
		}
		for _, r := range rows {
			if r.placed[i].place(x, w) {
				add(l, markView{Class: class, Shape: "text", X: x, Y: l.Y + r.dy, Text: text, Title: title})
				return
			}
		}
	}
	topRow := []row{{top, rowLabel}}
	faultRows := []row{{top, rowLabel}, {mid, rowTimeout + 10}}
	storeRows := []row{{low, rowStore + 11}, {mid, rowStore - 4}}

	// Faults: bands as long as they last, behind the rest; a fault of a
	// moment, a mark no label may cover.
	for _, f := range rep.Faults {
		if l := lane(f.Client); l != nil && f.End <= f.Time {
			top[laneIndex(l)].reserve(a.xStep(f.Step)-6, 12)
		}
	}
	for _, f := range rep.Faults {
		l := lane(f.Client)
		if l == nil {
			continue
		}
		x0 := a.xStep(f.Step)
		text := faultLabel(f)
		title := fmt.Sprintf("step %d, %s: %s", f.Step, seconds(f.Time), f.Text)
		if f.End > f.Time {
			x1 := a.xTime(f.End)
			if f.EndStep > 0 {
				x1 = a.xStep(f.EndStep)
				title += fmt.Sprintf("; over at step %d, %s", f.EndStep, seconds(a.timeOf(f.EndStep)))
			}
			add(l, markView{Class: "fault-band", Shape: "rect", X: x0, Y: l.Y + 2, W: max(2, x1-x0), H: l.H - 4, Title: title})
			label(l, faultRows, "fault-label", x0+4, x0, text, title)
			continue
		}
		add(l, markView{Class: "fault-point", Shape: "path", D: fmt.Sprintf("M%.1f %.1f l-6 -9 h12 z", x0, l.Y+rowHoldTop), Title: title})
		label(l, faultRows, "fault-label", x0+8, x0-6, text, title)
	}
	// The waits for the lock, under the holds.
	for _, w := range rep.Waits {
		l := lane(w.Client)
		if l == nil {
			continue
		}
		x0, x1 := a.xStep(w.From), a.xStep(w.To)
		if x1-x0 < 3 {
			continue // granted at once
		}
		outcome := w.Outcome
		if outcome == "" {
			outcome = "still waiting when the run ended"
		}
		waits, failed := "waits for the lock", "acquire failed"
		if rep.Election {
			waits, failed = "campaigns for leadership", "campaign failed"
		}
		t := fmt.Sprintf("%s %s, steps %d-%d, %s-%s: %s", clientName(w.Client), waits, w.From, w.To, seconds(w.FromTime), seconds(w.ToTime), outcome)
		add(l, markView{Class: "wait", Shape: "rect", X: x0, Y: l.Y + rowHoldTop + 3, W: x1 - x0, H: rowHoldBot - rowHoldTop - 6, Title: t})
		text := waits
		if w.Outcome == "" {
			text = waits + ", to the end"
		} else if w.Outcome != "granted" {
			text = waits + ": " + failed
		}
		if x1-x0 > textWidth(text)+10 {
			add(l, markView{Class: "wait-label", Shape: "text", X: x0 + 5, Y: l.Y + rowHoldMid + 4, Text: text, Title: t})
		}
	}
	// What each client believed: the lock held.
	for _, h := range rep.Holds {
		l := lane(h.Client)
		if l == nil {
			continue
		}
		x0, x1 := a.xStep(h.From), a.xStep(h.To)
		what := "holds the lock"
		switch {
		case rep.Election:
			what = "leads"
		case h.Shared:
			what = "holds the read lock"
		}
		t := fmt.Sprintf("%s %s (token %#x), steps %d-%d, %s-%s", clientName(h.Client), what, h.Token, h.From, h.To, seconds(h.FromTime), seconds(h.ToTime))
		add(l, markView{Class: "hold", Shape: "rect", X: x0, Y: l.Y + rowHoldTop, W: max(2, x1-x0), H: rowHoldBot - rowHoldTop, Title: t})
		if text := fmt.Sprintf("%s, token %#x", what, h.Token); x1-x0 > textWidth(text)+10 {
			add(l, markView{Class: "hold-label", Shape: "text", X: x0 + 5, Y: l.Y + rowHoldMid + 4, Text: text, Title: t})
		}
	}
	// The server's expiries, and the session timeout that ran out before
	// each: from when the server last heard from the session.
	for _, e := range rep.Expiries {
		l := lane(e.Client)
		if l == nil || e.Client == 0 {
			continue
		}
		// An expiry a fault forced comes before the timeout runs out.
		if rep.SessionTimeout > 0 && e.Time-e.LastHeard >= rep.SessionTimeout {
			x0, x1 := a.xStep(e.LastHeardStep), a.xTime(e.LastHeard+rep.SessionTimeout)
			yb := l.Y + rowTimeout + 4
			t := fmt.Sprintf("session timeout %s, from when the server last heard from %s (%s)", seconds(rep.SessionTimeout), clientName(e.Client), seconds(e.LastHeard))
			add(l, markView{Class: "timeout", Shape: "path", D: fmt.Sprintf("M%.1f %.1f v-8 M%.1f %.1f H%.1f M%.1f %.1f v-8", x0, yb, x0, yb-4, x1, x1, yb), Title: t})
			text := "session timeout " + seconds(rep.SessionTimeout)
			i := laneIndex(l)
			if cx := (x0+x1)/2 - textWidth(text)/2; x1-x0 > textWidth(text)+8 && mid[i].place(cx, textWidth(text)) {
				add(l, markView{Class: "timeout-label", Shape: "text", X: (x0 + x1) / 2, Y: yb + 10, Text: text, Anchor: "middle", Title: t})
			}
		}
		x := a.xStep(e.Step)
		t := fmt.Sprintf("%s %d, %s: the server expired %s's session %#x and deleted its ephemeral nodes", v.StepName, e.Step, seconds(e.Time), name(e.Client), e.Session)
		add(l, markView{Class: "expired", Shape: "text", X: x, Y: l.Y + rowHoldMid + 7, Text: "✕", Anchor: "middle", Title: t})
		label(l, topRow, "expired-label", x+6, x-6, "the server expires the session", t)
	}
	// A served history's requests, each a span from its arrival to its
	// reply; one that got none runs to the end, marked, and a write among
	// them is ambiguous: applied or not, its client cannot tell.
	for _, q := range rep.Requests {
		l := lane(q.Client)
		if l == nil {
			continue
		}
		x0, x1 := a.xStep(q.From), a.xStep(q.To)
		class := "span"
		switch {
		case q.Ambiguous:
			class = "span-ambiguous"
		case !q.Answered:
			class = "span-open"
		case q.Err != "":
			class = "span-error"
		}
		add(l, markView{Class: class, Shape: "rect", X: x0, Y: l.Y + rowHoldTop, W: max(2, x1-x0), H: rowHoldBot - rowHoldTop, Title: q.Text})
		if !q.Answered {
			text := "no reply to " + q.Op
			if q.Ambiguous {
				text = "ambiguous: " + q.Op + " " + q.Path + ", no reply"
			}
			// A served report has no store: its row takes what the
			// faults' rows cannot.
			label(l, append(faultRows, row{low, rowStore + 11}), class+"-label", x0+4, x0, text, q.Text)
		}
	}
	// The clients' traffic with ZooKeeper.
	for _, e := range rep.Events {
		l := lane(e.Client)
		if l == nil || e.Client == 0 {
			continue
		}
		x := a.xStep(e.Step)
		title := fmt.Sprintf("step %d, %s: %s", e.Step, seconds(e.Time), strings.TrimSpace(e.Text()))
		switch e.Kind {
		case "send":
			add(l, markView{Class: "request", Shape: "line", Title: title, X: x, Y: l.Y + rowHoldTop, X2: x, Y2: l.Y + rowHoldMid - 2})
		case "recv":
			add(l, markView{Class: "reply", Shape: "line", Title: title, X: x, Y: l.Y + rowHoldMid + 2, X2: x, Y2: l.Y + rowHoldBot})
		case "watch":
			add(l, markView{Class: "watch", Shape: "circle", Title: title, X: x, Y: l.Y + rowHoldMid, W: 4})
		case "session":
			switch e.State {
			case "StateExpired":
				add(l, markView{Class: "sees-expired", Shape: "text", Title: title + " (the client learns its session expired)", X: x, Y: l.Y + rowHoldMid + 5, Text: "⊘", Anchor: "middle"})
			case "StateDisconnected":
				add(l, markView{Class: "disconnected", Shape: "text", Title: title, X: x, Y: l.Y + rowHoldMid + 5, Text: "⌁", Anchor: "middle"})
			}
		case "conn": // a served history's connections, under the requests
			switch e.Op {
			case "opened":
				add(l, markView{Class: "conn-opened", Shape: "text", Title: title, X: x, Y: l.Y + rowTimeout, Text: "⊢", Anchor: "middle"})
			case "closed":
				add(l, markView{Class: "conn-closed", Shape: "text", Title: title, X: x, Y: l.Y + rowTimeout, Text: "⊣", Anchor: "middle"})
			}
		}
	}
	// The store: reads and writes, the refused, the lost update.
	var important, plain []scenarios.StoreOp
	for _, op := range rep.Store {
		if op.Refused || op.Overwrote != 0 {
			important = append(important, op)
		} else {
			plain = append(plain, op)
		}
	}
	for _, op := range rep.Store { // no label covers a store mark
		if l := lane(op.Client); l != nil {
			x0, x1 := a.xStep(op.Call), a.xStep(op.Return)
			low[laneIndex(l)].reserve(x0, max(6, x1-x0))
		}
	}
	for _, op := range append(important, plain...) {
		l := lane(op.Client)
		if l == nil {
			continue
		}
		x0, x1 := a.xStep(op.Call), a.xStep(op.Return)
		w := max(6, x1-x0)
		var class, text, t string
		switch {
		case op.Write && op.Overwrote != 0:
			class = "store-lost"
			text = fmt.Sprintf("write %d over %d: %s's update lost", op.Value, op.Over, clientName(op.Overwrote))
			t = fmt.Sprintf("steps %d-%d, %s: %s (token %#x) writes %d, what it read plus one, over %d: %s's update is lost", op.Call, op.Return, seconds(op.CallTime), clientName(op.Client), op.Token, op.Value, op.Over, clientName(op.Overwrote))
		case op.Write && op.Refused:
			class = "store-refused"
			text = fmt.Sprintf("write %d refused (token %#x)", op.Value, op.Token)
			t = fmt.Sprintf("steps %d-%d, %s: the store refuses %s's write of %d: its token %#x is older than one the store has seen", op.Call, op.Return, seconds(op.CallTime), clientName(op.Client), op.Value, op.Token)
		case op.Write:
			class = "store-write"
			text = fmt.Sprintf("write %d", op.Value)
			t = fmt.Sprintf("steps %d-%d, %s: %s (token %#x) writes %d", op.Call, op.Return, seconds(op.CallTime), clientName(op.Client), op.Token, op.Value)
		case op.Refused:
			class = "store-refused"
			text = fmt.Sprintf("read refused (token %#x)", op.Token)
			t = fmt.Sprintf("steps %d-%d, %s: the store refuses %s's read: its token %#x is older than one the store has seen", op.Call, op.Return, seconds(op.CallTime), clientName(op.Client), op.Token)
		default:
			class = "store-read"
			text = fmt.Sprintf("read %d", op.Value)
			t = fmt.Sprintf("steps %d-%d, %s: %s (token %#x) reads %d", op.Call, op.Return, seconds(op.CallTime), clientName(op.Client), op.Token, op.Value)
		}
		add(l, markView{Class: class, Shape: "rect", X: x0, Y: l.Y + rowStore, W: w, H: 14, Title: t})
		label(l, storeRows, class+"-label", x0+w+6, x0, text, t)
	}
	// The split-brain windows, across the lanes.
	for _, sw := range splitWindows(rep.Holds) {
		x0, x1 := a.xStep(sw[0]), a.xStep(sw[1])
		c1, c2 := int(sw[2]>>32), int(sw[2]&0xffffffff)
		belief := "both believe they hold the lock"
		if rep.Election {
			belief = "both believe they lead"
		}
		text := fmt.Sprintf("split brain: %s and %s %s", clientName(c1), clientName(c2), belief)
		wv := windowView{X: x0, W: max(3, x1-x0), Label: text, LabelX: x0, Anchor: "start",
			Title: fmt.Sprintf("steps %d-%d (%s-%s): %s and %s %s", sw[0], sw[1], seconds(a.timeOf(sw[0])), seconds(a.timeOf(sw[1])), clientName(c1), clientName(c2), belief)}
		if x0+textWidth(text) > svgWidth-4 {
			wv.LabelX, wv.Anchor = x1, "end"
		}
		v.Windows = append(v.Windows, wv)
	}
	// The story's numbers, where each of its steps happens.
	for i, s := range story {
		l := lane(s.Client)
		if l == nil {
			continue
		}
		x := a.xStep(s.Step)
		y := l.Y + rowHoldMid
		if s.Top {
			y = l.Y + rowLabel - 3
		}
		v.Markers = append(v.Markers, markerView{X: x, CX: x - 16, Y: y, N: i + 1, Title: s.Text})
	}
	v.TimeTicks = timeTicks(a)
	for i := range v.TimeTicks {
		t := &v.TimeTicks[i]
		t.Y1, t.Y2 = v.LanesTop-3, v.LanesTop+3
		if t.Major {
			t.Y1 = v.LanesTop - 6
		}
	}
	v.StepTicks = stepTicks(a)
	for i := range v.StepTicks {
		t := &v.StepTicks[i]
		t.Y1, t.Y2 = v.StepAxisY, v.StepAxisY+3
		if t.Major {
			t.Y2 = v.StepAxisY + 6
		}
	}
	return v
}

// timeTicks label the axis in round times, 1, 2 or 5 × 10^k apart, about
// ten over the run; a label that would touch the one before is left out.
func timeTicks(a *axis) []tickView {
	if a.share == 0 {
		return []tickView{{X: plotLeft, Label: "0s", Major: true}}
	}
	every := niceDuration(a.end / 10)
	var out []tickView
	lastX := math.Inf(-1)
	for t := time.Duration(0); t <= a.end; t += every {
		x := a.xTime(t)
		tk := tickView{X: x}
		if x-lastX >= 44 {
			tk.Label, tk.Major, lastX = seconds(t), true, x
		}
		out = append(out, tk)
	}
	return out
}

// stepTicks mark every step (or every fifth of the labelled interval on
// a long run), labelled about 50 pixels apart.
func stepTicks(a *axis) []tickView {
	perStep := (1 - a.share) * plotWidth / float64(a.lastStep)
	labelled := uint64(niceStep(50 / max(perStep, 1e-9)))
	minor := uint64(1)
	if a.lastStep > 400 {
		minor = max(1, labelled/5)
	}
	var out []tickView
	lastX := math.Inf(-1)
	for s := uint64(0); s <= a.lastStep; s += minor {
		x := a.xStep(s)
		tk := tickView{X: x}
		if s%labelled == 0 && x-lastX >= 30 {
			tk.Label, tk.Major, lastX = fmt.Sprint(s), true, x
		}
		out = append(out, tk)
	}
	return out
}

var reportTemplate = template.Must(template.New("report").Parse(`<style>
#zklab-report{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:1em 1.5em;color:#1f2328;max-width:1900px}
#zklab-report h1{font-size:1.6em;margin:.2em 0}
#zklab-report h2{font-size:1.2em;margin:1.2em 0 .4em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.zklab-section{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:1em 1.5em}
.zklab-section h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.zklab-section p{max-width:60em;color:#444}
#legend{position:static !important}
body > #legend, body > #canvas{margin-left:1.5em}
#zklab-report pre{white-space:pre-wrap;background:#f6f8fa;border:1px solid #e1e4e8;border-radius:6px;padding:10px;overflow-x:auto;font-size:13px;line-height:1.4}
#zklab-report .summary{color:#444;font-size:1.05em}
#zklab-report .badge{display:inline-block;padding:3px 10px;border-radius:12px;font-weight:bold;color:#fff;margin-right:.6em}
#zklab-report .badge.fail{background:#cf222e}
#zklab-report .badge.pass{background:#1a7f37}
#zklab-report .badge.undecided{background:#9a6700}
#zklab-report .story-row{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}
#zklab-report .story{flex:1 1 320px;max-width:460px;font-size:15px;line-height:1.45}
#zklab-report .story ol{padding-left:0;list-style:none}
#zklab-report .story li{margin:.5em 0;display:flex;gap:.6em}
#zklab-report .story .n{flex:none;display:inline-block;width:22px;height:22px;border-radius:11px;background:#6639ba;color:#fff;text-align:center;font-weight:bold;font-size:13px;line-height:22px}
#zklab-report .legend{display:flex;flex-wrap:wrap;gap:.4em 1.4em;font-size:13px;color:#333;margin:.4em 0 .8em;max-width:1180px}
#zklab-report .legend span{display:inline-flex;align-items:center;gap:.35em}
#zklab-timeline{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;background:#fff}
#zklab-timeline text{dominant-baseline:auto;font-size:11px}
#zklab-timeline .lane-bg{fill:#fff}
#zklab-timeline .lane-bg.shaded{fill:#f6f8fa}
#zklab-timeline .lane-name{font-size:15px;font-weight:bold;fill:#1f2328}
#zklab-timeline .grid{stroke:#e4e4e4}
#zklab-timeline .axis-line{stroke:#555}
#zklab-timeline .tick{stroke:#555}
#zklab-timeline .tick.minor{stroke:#999;stroke-width:.6}
#zklab-timeline .tick-label{fill:#333}
#zklab-timeline .axis-title{fill:#555;font-style:italic}
#zklab-timeline .hold{fill:rgba(46,160,67,.30);stroke:#2ea043}
#zklab-timeline .hold-label{fill:#116329}
#zklab-timeline .wait{fill:#f6f8fa;stroke:#8c959f;stroke-dasharray:4 3}
#zklab-timeline .wait-label{fill:#57606a}
#zklab-timeline .request{stroke:#0969da;stroke-width:1;opacity:.55}
#zklab-timeline .reply{stroke:#8250df;stroke-width:1;opacity:.55}
#zklab-timeline .watch{fill:#fb8500;stroke:#fff}
#zklab-timeline .fault-band{fill:url(#zklab-hatch);stroke:#cf222e;stroke-width:1;stroke-dasharray:3 2}
#zklab-timeline .fault-point{fill:#cf222e}
#zklab-timeline .fault-label{fill:#a40e26;font-weight:bold}
#zklab-timeline .expired{fill:#cf222e;font-size:20px;font-weight:bold}
#zklab-timeline .expired-label{fill:#cf222e}
#zklab-timeline .sees-expired{fill:#8c1c13;font-size:14px}
#zklab-timeline .disconnected{fill:#8c564b;font-size:14px}
#zklab-timeline .timeout{stroke:#9a6700;stroke-width:1.5;fill:none}
#zklab-timeline .timeout-label{fill:#7d5300;font-size:10px}
#zklab-timeline .store-read{fill:#54aeff;stroke:#0969da}
#zklab-timeline .store-write{fill:#1f6feb;stroke:#0a3069}
#zklab-timeline .store-refused{fill:#fff;stroke:#cf222e;stroke-width:2}
#zklab-timeline .store-lost{fill:#cf222e;stroke:#82071e;stroke-width:2}
#zklab-timeline .store-read-label,#zklab-timeline .store-write-label{fill:#0a3069}
#zklab-timeline .store-refused-label{fill:#cf222e;font-weight:bold}
#zklab-timeline .store-lost-label{fill:#cf222e;font-weight:bold}
#zklab-timeline .window{fill:rgba(207,34,46,.13);stroke:#cf222e;stroke-width:1.5;stroke-dasharray:5 3}
#zklab-timeline .window-label{fill:#cf222e;font-weight:bold;font-size:12px}
#zklab-timeline .span{fill:rgba(9,105,218,.16);stroke:#0969da;stroke-width:.8}
#zklab-timeline .span-error{fill:rgba(154,103,0,.22);stroke:#9a6700;stroke-width:.8}
#zklab-timeline .span-open{fill:#fff;stroke:#57606a;stroke-dasharray:4 3}
#zklab-timeline .span-ambiguous{fill:rgba(207,34,46,.10);stroke:#cf222e;stroke-width:1.5;stroke-dasharray:4 3}
#zklab-timeline .span-open-label{fill:#57606a}
#zklab-timeline .span-ambiguous-label{fill:#cf222e;font-weight:bold}
#zklab-timeline .conn-opened,#zklab-timeline .conn-closed{fill:#57606a;font-size:13px}
#zklab-timeline .marker circle{fill:#6639ba;stroke:#fff;stroke-width:1.5}
#zklab-timeline .marker path{fill:#6639ba}
#zklab-timeline .marker text{fill:#fff;font-weight:bold;font-size:11px}
</style>
<div id="zklab-report">
<h1>{{.Title}}</h1>
<p class="summary">{{if .Failed}}<span class="badge fail" id="zklab-badge">FAIL</span>{{range $i, $f := .Failed}}{{if $i}}, {{end}}{{$f}}{{end}} found a violation{{else if .Undecided}}<span class="badge undecided" id="zklab-badge">UNKNOWN</span>{{.Undecided}}{{else}}<span class="badge pass" id="zklab-badge">PASS</span>every check passed{{end}} · {{.Summary}}{{if not .Served}} · seed {{.Seed}}{{end}}</p>
{{range .Intro}}<p class="intro">{{.}}</p>
{{end}}{{if .HasTimeline}}<h2>Timeline</h2>
<div class="story-row">
<div>
<div class="legend">
{{if .Served}}<span><svg width="26" height="14"><rect x="1" y="1" width="24" height="12" fill="rgba(9,105,218,.16)" stroke="#0969da"/></svg>request, to its reply</span>
<span><svg width="26" height="14"><rect x="1" y="1" width="24" height="12" fill="rgba(154,103,0,.22)" stroke="#9a6700"/></svg>answered with an error</span>
<span><svg width="26" height="14"><rect x="1" y="1" width="24" height="12" fill="#fff" stroke="#57606a" stroke-dasharray="4 3"/></svg>no reply</span>
<span><svg width="26" height="14"><rect x="1" y="1" width="24" height="12" fill="rgba(207,34,46,.10)" stroke="#cf222e" stroke-width="1.5" stroke-dasharray="4 3"/></svg>a write with no reply: ambiguous</span>
<span><svg width="22" height="16"><text x="5" y="13" fill="#57606a" font-size="13">⊢</text><text x="13" y="13" fill="#57606a" font-size="13">⊣</text></svg>connection opened, closed</span>
{{else}}<span><svg width="26" height="14"><rect x="1" y="1" width="24" height="12" fill="rgba(46,160,67,.30)" stroke="#2ea043"/></svg>believes it holds the lock</span>
<span><svg width="26" height="14"><rect x="1" y="3" width="24" height="8" fill="#f6f8fa" stroke="#8c959f" stroke-dasharray="4 3"/></svg>waits for the lock</span>
<span><svg width="14" height="14"><rect x="1" y="1" width="12" height="12" fill="#54aeff" stroke="#0969da"/></svg>store read</span>
<span><svg width="14" height="14"><rect x="1" y="1" width="12" height="12" fill="#1f6feb" stroke="#0a3069"/></svg>store write</span>
<span><svg width="14" height="14"><rect x="1" y="1" width="12" height="12" fill="#cf222e" stroke="#82071e"/></svg>lost update</span>
<span><svg width="14" height="14"><rect x="2" y="2" width="10" height="10" fill="#fff" stroke="#cf222e" stroke-width="2"/></svg>refused by the store</span>
{{end}}
<span><svg width="26" height="14"><defs><pattern id="zklab-hatch-legend" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="rgba(207,34,46,.06)"/><line x1="0" y1="0" x2="0" y2="6" stroke="rgba(207,34,46,.35)" stroke-width="2"/></pattern></defs><rect x="1" y="1" width="24" height="12" fill="url(#zklab-hatch-legend)" stroke="#cf222e" stroke-dasharray="3 2"/></svg>fault, as long as it lasts</span>
{{if not .Served}}<span><svg width="30" height="14"><path d="M2 12 v-8 M2 8 H28 M28 12 v-8" stroke="#9a6700" stroke-width="1.5" fill="none"/></svg>session timeout</span>{{end}}
<span><svg width="14" height="16"><text x="7" y="14" text-anchor="middle" fill="#cf222e" font-weight="bold" font-size="16">✕</text></svg>server expires the session</span>
<span><svg width="14" height="16"><text x="7" y="13" text-anchor="middle" fill="#8c1c13" font-size="13">⊘</text></svg>client learns it expired</span>
<span><svg width="14" height="14"><circle cx="7" cy="7" r="4" fill="#fb8500"/></svg>watch notification</span>
{{if not .Served}}<span><svg width="18" height="14"><line x1="5" y1="1" x2="5" y2="7" stroke="#0969da"/><line x1="12" y1="7" x2="12" y2="13" stroke="#8250df"/></svg>request, reply</span>
<span><svg width="26" height="14"><rect x="1" y="1" width="24" height="12" fill="rgba(207,34,46,.13)" stroke="#cf222e" stroke-dasharray="5 3"/></svg>split brain</span>{{end}}
</div>
{{with .Timeline}}<svg id="zklab-timeline" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">
<defs><pattern id="zklab-hatch" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="8" height="8" fill="rgba(207,34,46,.06)"/><line x1="0" y1="0" x2="0" y2="8" stroke="rgba(207,34,46,.30)" stroke-width="2"/></pattern></defs>
{{range .Lanes}}<rect class="lane-bg{{if .Shaded}} shaded{{end}}" x="0" y="{{.Y}}" width="{{$.Timeline.Width}}" height="{{.H}}"/>
{{end}}<g class="time-axis" id="zklab-time-axis"><text class="axis-title" x="12" y="{{$.Timeline.LanesTop}}" dy="-9">time</text>
<line class="axis-line" x1="70" y1="{{$.Timeline.LanesTop}}" x2="{{$.Timeline.PlotRight}}" y2="{{$.Timeline.LanesTop}}"/>
{{range .TimeTicks}}<line class="grid" x1="{{.X}}" y1="{{$.Timeline.LanesTop}}" x2="{{.X}}" y2="{{$.Timeline.LanesBottom}}"/><line class="tick" x1="{{.X}}" y1="{{.Y1}}" x2="{{.X}}" y2="{{.Y2}}"/>{{if .Label}}<text class="tick-label time-tick" x="{{.X}}" y="{{$.Timeline.LanesTop}}" dy="-9" text-anchor="middle">{{.Label}}</text>{{end}}
{{end}}</g>
{{range .Lanes}}<g class="lane" data-client="{{.Name}}">
<text class="lane-name" x="12" y="{{.Y}}" dy="35">{{.Name}}</text>
{{range .Marks}}{{if eq .Shape "rect"}}<rect class="{{.Class}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}" rx="2"><title>{{.Title}}</title></rect>
{{else if eq .Shape "line"}}<line class="{{.Class}}" x1="{{.X}}" y1="{{.Y}}" x2="{{.X2}}" y2="{{.Y2}}"><title>{{.Title}}</title></line>
{{else if eq .Shape "circle"}}<circle class="{{.Class}}" cx="{{.X}}" cy="{{.Y}}" r="{{.W}}"><title>{{.Title}}</title></circle>
{{else if eq .Shape "path"}}<path class="{{.Class}}" d="{{.D}}"><title>{{.Title}}</title></path>
{{else}}<text class="{{.Class}}" x="{{.X}}" y="{{.Y}}"{{if .Anchor}} text-anchor="{{.Anchor}}"{{end}}>{{.Text}}<title>{{.Title}}</title></text>
{{end}}{{end}}</g>
{{end}}{{range .Windows}}<g class="split-window"><rect class="window" x="{{.X}}" y="{{$.Timeline.LanesTop}}" width="{{.W}}" height="{{$.Timeline.LanesH}}"><title>{{.Title}}</title></rect>
<text class="window-label" x="{{.LabelX}}" y="14" text-anchor="{{.Anchor}}">⚠ {{.Label}}<title>{{.Title}}</title></text></g>
{{end}}{{range .Markers}}<g class="marker" data-n="{{.N}}"><path d="M{{.X}} {{.Y}} l-9 -6 v12 z"/><circle cx="{{.CX}}" cy="{{.Y}}" r="9.5"/><text x="{{.CX}}" y="{{.Y}}" dy="4" text-anchor="middle">{{.N}}<title>{{.Title}}</title></text></g>
{{end}}<g class="step-axis" id="zklab-step-axis"><line class="axis-line" x1="70" y1="{{$.Timeline.StepAxisY}}" x2="{{$.Timeline.PlotRight}}" y2="{{$.Timeline.StepAxisY}}"/>
<text class="axis-title" x="12" y="{{$.Timeline.StepAxisY}}" dy="18">{{.StepName}}</text>
{{range .StepTicks}}<line class="tick{{if not .Major}} minor{{end}}" x1="{{.X}}" y1="{{.Y1}}" x2="{{.X}}" y2="{{.Y2}}"/>{{if .Label}}<text class="tick-label step-tick" x="{{.X}}" y="{{$.Timeline.StepAxisY}}" dy="18" text-anchor="middle">{{.Label}}</text>{{end}}
{{end}}<text class="axis-title" x="{{$.Timeline.PlotRight}}" y="{{$.Timeline.StepAxisY}}" dy="38" text-anchor="end">{{.TimeShare}}% of the width is {{.TimeName}} time, so a pause is as long as it lasts; the rest is shared equally by the {{.StepName}}s, so that {{.StepName}}s at one instant stay apart</text>
</g>
</svg>{{end}}
</div>
{{if .StoryItems}}<div class="story" id="zklab-story"><h3>What happens</h3><ol>
{{range .StoryItems}}<li><span class="n">{{.N}}</span><span>{{.Text}}</span></li>
{{end}}</ol>
{{range .Moral}}<p class="moral"><b>{{.}}</b></p>{{end}}</div>{{end}}
</div>
{{end}}<h2>Verdict</h2>
<pre id="zklab-verdict">{{.Verdict}}</pre>
{{if .Served}}<h2>History</h2>
<p>A real client's run on zklab serve: the order is the one that happened, and no run repeats it. Check it, or draw it again:</p>
<pre id="zklab-replay">{{.Replay}}</pre>
<pre id="zklab-sessions">{{.Scenario}}</pre>
{{else}}<h2>Scenario</h2>
{{if .Real}}<p>A real server decides the order, so no two runs on it are alike; the same scenario on the simulator replays byte for byte:</p>{{else}}<p>Replay this run, byte for byte:</p>{{end}}
<pre id="zklab-replay">{{.Replay}}</pre>
<pre id="zklab-scenario">{{.Scenario}}</pre>
{{end}}</div>
`))

// writeRunReport writes the report of a run of the scenario in file.
func writeRunReport(path, file string, res *scenarios.Result) error {
	return writeStoryReport(path, file, res, report{})
}

// writeStoryReport writes the report of a run, with the story's words
// (Intro, Story, Moral) of r.
func writeStoryReport(path, file string, res *scenarios.Result, r report) error {
	sc := res.Scenario
	if r.Title == "" {
		r.Title = "zklab run " + file
	}
	r.Verdict = res.Verdict.String()
	for _, c := range res.Verdict.Violations(nil) {
		r.Failed = append(r.Failed, c.Name)
	}
	store := "unfenced store"
	if sc.Store == scenarios.StoreFenced {
		store = "fenced store"
	}
	what := fmt.Sprintf("%s, %d clients × %d cycles, hold %v, %v sessions, %s", sc.Recipe, sc.Clients, sc.Cycles, sc.Hold, sc.SessionTimeout, store)
	if res.Verdict.Real {
		r.Summary = fmt.Sprintf("%s; on a real ZooKeeper: %d events, %v of wall time", what, res.Steps, res.Time.Round(time.Millisecond))
	} else {
		r.Summary = fmt.Sprintf("%s; %d steps, %s of virtual time", what, res.Steps, seconds(res.Time))
	}
	r.Seed = sc.Seed
	r.Real = res.Verdict.Real
	r.Scenario = scenarios.Format(sc)
	name := file
	if base, ok := strings.CutPrefix(file, "scenarios/testdata/"); ok {
		if n, ok := strings.CutSuffix(base, ".scenario"); ok {
			if _, _, err := scenarios.LookupLibrary(n); err == nil {
				name = n // the library's name works from any directory
			}
		}
	}
	// --seed 0 keeps the file's seed: a seed of 0 is the file's own.
	replay := "zklab run " + name
	if sc.Seed != 0 {
		replay += fmt.Sprintf(" --seed %d", sc.Seed)
	}
	if r.Replay == "" {
		r.Replay = replay
	} else {
		r.Replay += "\n" + replay
	}
	if res.Verdict.Real {
		r.Replay = replay
	}
	r.Run = res.Report
	for _, v := range res.Report.Views {
		r.Views = append(r.Views, porcupineView{Title: "porcupine: " + v.Title, HTML: v.HTML})
	}
	var b bytes.Buffer
	if err := writeReport(&b, r); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return usagef("--html: %v", err)
	}
	return nil
}
