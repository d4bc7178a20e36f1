package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// htmlOf runs zklab with --html into a temporary file and returns the
// page's path and text, checking the exit code.
func htmlOf(t *testing.T, code int, args ...string) (string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.html")
	got, _, errOut := zklab(t, append(args, "--html", path)...)
	if got != code {
		t.Fatalf("zklab %s: exit %d, want %d; stderr:\n%s", strings.Join(args, " "), got, code, errOut)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, string(b)
}

// texts are the texts of the SVG text elements of a class, in order.
func texts(dom, class string) []string {
	re := regexp.MustCompile(`<text class="` + regexp.QuoteMeta(class) + `"[^>]*>([^<]*)`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(dom, -1) {
		out = append(out, m[1])
	}
	return out
}

// rectWidths are the widths of the rects of a class, in order.
func rectWidths(t *testing.T, dom, class string) []float64 {
	t.Helper()
	re := regexp.MustCompile(`<rect class="` + regexp.QuoteMeta(class) + `" x="[^"]*" y="[^"]*" width="([^"]*)"`)
	var out []float64
	for _, m := range re.FindAllStringSubmatch(dom, -1) {
		w, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatalf("rect %s: width %q", class, m[1])
		}
		out = append(out, w)
	}
	return out
}

func wantAll(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s: no %q among %q", what, w, got)
		}
	}
}

// The run report of the split-brain scenario, opened in Chromium, shows
// time: a time axis in seconds and a step axis, a pause drawn longer than
// the session timeout it outlasts, which is longer than a 100 ms hold;
// it marks the split-brain window and the lost update, labels the fault,
// the session timeout and the server's expiry, and names the clients c1
// and c2 in porcupine's drawing as everywhere else. It carries the
// scenario, its seed and the command that replays it.
func TestRunReportInChromium(t *testing.T) {
	// The library's file expects the split-brain it shows: exit 0.
	page, _ := htmlOf(t, 0, "run", "split-brain-unfenced")
	dom := renderDOM(t, page)
	screenshot(t, page, "run-split-brain-unfenced", 1500, 1100)

	lanes := regexp.MustCompile(`<g class="lane" data-client="([^"]*)"`).FindAllStringSubmatch(dom, -1)
	if len(lanes) != 2 || lanes[0][1] != "c1" || lanes[1][1] != "c2" {
		t.Errorf("the timeline's lanes are %q, want c1 and c2", lanes)
	}
	wantAll(t, "time axis", texts(dom, "tick-label time-tick"), "0s", "5s", "10s", "30s")
	wantAll(t, "step axis", texts(dom, "tick-label step-tick"), "0", "20", "40", "60", "80")
	wantAll(t, "fault labels", texts(dom, "fault-label"), "paused 30s")
	wantAll(t, "expiry labels", texts(dom, "expired-label"), "the server expires the session")
	wantAll(t, "session timeout", texts(dom, "timeout-label"), "session timeout 10s")
	wantAll(t, "split-brain window", texts(dom, "window-label"), "⚠ split brain: c1 and c2 both believe they hold the lock")
	wantAll(t, "lost update", texts(dom, "store-lost-label"), "write 1 over 1: c2's update lost")
	wantAll(t, "store reads", texts(dom, "store-read-label"), "read 0")
	if n := len(rectWidths(t, dom, "store-read")); n != 2 {
		t.Errorf("%d store reads drawn, want 2", n)
	}
	if n := len(rectWidths(t, dom, "window")); n != 1 {
		t.Errorf("%d split-brain windows drawn, want 1", n)
	}

	// Lengths: the 30 s pause, the 10 s session timeout, c2's hold of a
	// few steps and 100 ms.
	pause := rectWidths(t, dom, "fault-band")
	holds := rectWidths(t, dom, "hold")
	m := regexp.MustCompile(`<path class="timeout" d="M([\d.]+) [\d.]+ v-8 M[\d.]+ [\d.]+ H([\d.]+)`).FindStringSubmatch(dom)
	if len(pause) != 1 || len(holds) != 2 || m == nil {
		t.Fatalf("want one pause, two holds and a session timeout; have %v, %v, %v", pause, holds, m)
	}
	x0, _ := strconv.ParseFloat(m[1], 64)
	x1, _ := strconv.ParseFloat(m[2], 64)
	timeout := x1 - x0
	if !(pause[0] > 2*timeout && timeout > 5*holds[1]) {
		t.Errorf("pause %.0f, session timeout %.0f, c2's hold %.0f wide: want the pause more than twice the timeout, the timeout more than five times the hold", pause[0], timeout, holds[1])
	}

	for _, want := range []string{
		`<pre id="zklab-replay">zklab run split-brain-unfenced</pre>`,
		"fault at=50ms pause c1 for=30s",
		"seed 0",
		`<span class="badge fail" id="zklab-badge">FAIL</span>`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page has no %q", want)
		}
	}
	// porcupine's script draws into #canvas once the page has run; our
	// script names its rows as the clients.
	if !regexp.MustCompile(`<div id="canvas"><svg`).MatchString(dom) {
		t.Errorf("porcupine's view did not render into #canvas:\n%s", excerpt(dom, `id="canvas"`))
	}
	rows := regexp.MustCompile(`<text x="[\d.]+" y="[\d.]+" text-anchor="end">([^<]*)</text>`).FindAllStringSubmatch(excerpt(dom[strings.Index(dom, `id="canvas"`):], `<svg`), -1)
	var names []string
	for _, r := range rows {
		names = append(names, r[1])
	}
	wantAll(t, "porcupine's rows", names, "c1", "c2", "faults", "server")
	if slices.Contains(names, "0") {
		t.Errorf("porcupine's rows %q number the clients from 0", names)
	}
	if strings.Count(dom, `class="porcupine"`) != 1 {
		t.Error("the store's porcupine view is not in its frame")
	}
}

// With fencing the refused write is marked, and nothing is lost.
func TestFencedReportMarksTheRefusedWrite(t *testing.T) {
	_, page := htmlOf(t, 0, "run", "split-brain-fenced")
	if got := texts(page, "store-refused-label"); !slices.Contains(got, "write 1 refused (token 0x6)") {
		t.Errorf("refused writes: %q", got)
	}
	if got := texts(page, "store-lost-label"); len(got) != 0 {
		t.Errorf("lost updates on a fenced store: %q", got)
	}
	if !strings.Contains(page, `<span class="badge pass" id="zklab-badge">PASS</span>`) {
		t.Error("no PASS badge")
	}
}

// splitbrain --html tells the story beside the picture: numbered steps,
// each number drawn on the timeline, and the moral.
func TestSplitBrainReportTellsTheStory(t *testing.T) {
	page, _ := htmlOf(t, 1, "splitbrain")
	dom := renderDOM(t, page)
	screenshot(t, page, "splitbrain", 1900, 1000)
	steps := regexp.MustCompile(`<li><span class="n">(\d+)</span><span>([^<]*)</span></li>`).FindAllStringSubmatch(dom, -1)
	markers := regexp.MustCompile(`<g class="marker" data-n="(\d+)"`).FindAllStringSubmatch(dom, -1)
	if len(steps) < 6 || len(markers) != len(steps) {
		t.Fatalf("%d steps told, %d numbers drawn: want at least 6, one number each", len(steps), len(markers))
	}
	var story strings.Builder
	for i, s := range steps {
		if s[1] != strconv.Itoa(i+1) || markers[i][1] != s[1] {
			t.Errorf("step %d is numbered %s, its marker %s", i+1, s[1], markers[i][1])
		}
		story.WriteString(s[2] + "\n")
	}
	for _, want := range []string{
		"c1 acquires the lock (fencing token 0x6)",
		"c1&#39;s process stops for 30s",
		"the server expires the session and deletes c1&#39;s lock node",
		"c2&#39;s watch fires and it acquires the lock (token 0x8)",
		"c2&#39;s update is lost",
		"does c1 learn that its session expired",
	} {
		if !strings.Contains(story.String(), want) && !strings.Contains(story.String(), strings.ReplaceAll(want, "&#39;", "'")) {
			t.Errorf("the story does not say %q:\n%s", want, story.String())
		}
	}
	if !strings.Contains(dom, "only the resource can, by checking tokens") {
		t.Error("the story has no moral")
	}
	if !strings.Contains(dom, `<h1>zklab splitbrain</h1>`) || !strings.Contains(dom, "zklab run split-brain-unfenced") {
		t.Error("the page does not name its command and the scenario's replay")
	}
}

// The same command writes the same page, byte for byte.
func TestReportsAreDeterministic(t *testing.T) {
	for _, args := range [][]string{{"run", "split-brain-unfenced"}, {"splitbrain", "--fencing"}, {"herd", "--clients", "3,5"}} {
		// Each exits 0: the library's file expects the split-brain it
		// shows, fencing keeps the store whole, herd has no verdict.
		const code = 0
		// porcupine lists what it found from a map: five runs would
		// show an order that changes.
		_, first := htmlOf(t, code, args...)
		for range 4 {
			if _, again := htmlOf(t, code, args...); again != first {
				t.Fatalf("zklab %s --html wrote two different pages", strings.Join(args, " "))
			}
		}
	}
}

func excerpt(s, near string) string {
	i := strings.Index(s, near)
	if i < 0 {
		return "(" + near + " not found)"
	}
	return s[i:min(len(s), i+3000)]
}

// The herd page, opened in Chromium, draws three log-log charts with
// ticks on both axes and the two laws; on them the herd's total climbs
// twice as steeply as the fair lock's: N(N-1)/2 against N-1.
func TestHerdPageInChromium(t *testing.T) {
	page, _ := htmlOf(t, 0, "herd", "--clients", "4,10,30")
	dom := renderDOM(t, page)
	screenshot(t, page, "herd", 1450, 1000)
	for _, id := range []string{"notifications", "per-release", "bytes"} {
		i := strings.Index(dom, `<div class="chart" id="chart-`+id+`">`)
		if i < 0 {
			t.Fatalf("no chart of %s", id)
		}
		chart := dom[i:]
		chart = chart[:strings.Index(chart, "</svg>")]
		wantAll(t, id+": x ticks", texts(chart, "x-tick"), "2", "5", "10", "20")
		if n := len(texts(chart, "y-tick")); n < 2 {
			t.Errorf("%s: %d labelled y ticks", id, n)
		}
		wantAll(t, id+": axis titles", append(texts(chart, "axis-title x-title"), texts(chart, "axis-title y-title")...), "clients N (log scale)")
		if n := strings.Count(chart, `class="point"`); n != 6 {
			t.Errorf("%s: %d points, want 6 (2 recipes × 3 client counts)", id, n)
		}
		if id == "notifications" {
			wantAll(t, "laws", texts(chart, "ref-label"), "N(N−1)/2", "N−1")
			herd, fair := slope(t, chart, "herd-lock"), slope(t, chart, "fair-lock")
			if r := herd / fair; r < 1.8 || r > 2.3 {
				t.Errorf("on log-log axes the herd's total climbs %.2f times as steeply as the fair lock's, want about 2", r)
			}
		}
	}
	for _, row := range []string{"<td>herd-lock</td><td>30</td><td>29</td><td>435</td>", "<td>fair-lock</td><td>30</td><td>29</td><td>29</td>"} {
		if !strings.Contains(dom, row) {
			t.Errorf("the table has no row %s", row)
		}
	}
}

// slope is the slope, in the chart's pixels, from a recipe's first point
// to its last.
func slope(t *testing.T, chart, recipe string) float64 {
	t.Helper()
	i := strings.Index(chart, `data-recipe="`+recipe+`"`)
	if i < 0 {
		t.Fatalf("no series of %s", recipe)
	}
	g := chart[i:]
	g = g[:strings.Index(g, "</g>")]
	pts := regexp.MustCompile(`cx="([\d.]+)" cy="([\d.]+)"`).FindAllStringSubmatch(g, -1)
	if len(pts) < 2 {
		t.Fatalf("%s: %d points", recipe, len(pts))
	}
	f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	a, b := pts[0], pts[len(pts)-1]
	return (f(a[2]) - f(b[2])) / (f(b[1]) - f(a[1]))
}

// Times on the axis and in the labels read as a person writes them.
func TestSecondsReadsRound(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 50 * time.Millisecond: "50ms", 1500 * time.Microsecond: "1.5ms", 12102 * time.Millisecond: "12.102s",
		30 * time.Second: "30s", 30 * time.Minute: "30m", 90 * time.Minute: "1h30m", 2 * time.Hour: "2h",
		2*time.Hour + 5*time.Second: "2h0m5s", 3*time.Hour + 10*time.Minute + 5*time.Second: "3h10m5s",
	} {
		if got := seconds(d); got != want {
			t.Errorf("seconds(%v) = %q, want %q", d, got, want)
		}
	}
}
