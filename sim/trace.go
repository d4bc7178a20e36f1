package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Event is one entry of a run's trace: what happened, at which step and
// virtual time, to which client and session. Traces are stable: the same
// seed gives the same events, field for field.
type Event struct {
	Step    uint64        `json:"step"`
	Time    time.Duration `json:"t_ns"`
	Client  int           `json:"client,omitempty"`
	Session int64         `json:"session,omitempty"`
	// Kind is one of: call, return, send, apply, recv, event, watch,
	// session, fault, timer, task, server, lost.
	Kind   string `json:"kind"`
	Op     string `json:"op,omitempty"`
	Xid    int32  `json:"xid,omitempty"`
	Path   string `json:"path,omitempty"`
	Zxid   int64  `json:"zxid,omitempty"`
	Err    string `json:"err,omitempty"`
	State  string `json:"state,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Text renders the event as one line of the text trace.
func (e Event) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%6d %s", e.Step, formatVirtual(e.Time))
	if e.Client != 0 {
		fmt.Fprintf(&b, " c%d", e.Client)
	} else {
		b.WriteString(" --")
	}
	if e.Session != 0 {
		fmt.Fprintf(&b, " s=%#x", e.Session)
	}
	b.WriteString(" ")
	b.WriteString(e.Kind)
	if e.Op != "" {
		b.WriteString(" ")
		b.WriteString(e.Op)
	}
	if e.Xid != 0 {
		fmt.Fprintf(&b, " xid=%d", e.Xid)
	}
	if e.Path != "" {
		fmt.Fprintf(&b, " %s", e.Path)
	}
	if e.Zxid != 0 {
		fmt.Fprintf(&b, " zxid=%#x", e.Zxid)
	}
	if e.State != "" {
		fmt.Fprintf(&b, " state=%s", e.State)
	}
	if e.Err != "" {
		fmt.Fprintf(&b, " err=%q", e.Err)
	}
	if e.Detail != "" {
		fmt.Fprintf(&b, " %s", e.Detail)
	}
	return b.String()
}

// formatVirtual prints a virtual time as seconds with millisecond
// precision, fixed width, so traces line up and diff cleanly.
func formatVirtual(d time.Duration) string {
	ms := d.Milliseconds()
	return fmt.Sprintf("%6d.%03ds", ms/1000, ms%1000)
}

// A TraceSink receives trace events as they happen. Event is called in
// the middle of a step, on the goroutine that runs the world: it may read
// the world and its servers (scenarios' observer looks nodes up), but it
// must change nothing, neither call a client nor start, fault or run
// anything, for the step goes on after it from what it had looked up
// before (World.deliverToServer's connection and session).
type TraceSink interface {
	Event(e Event)
}

// A KindFilter is a TraceSink that reads only some kinds of event. The
// world asks it once, when it is made, and then sends it no event of the
// kinds "call", "send", "recv", "return" and "task" that it does not read,
// and builds none: those are every call's events, and most of a run's.
// It may send events of other kinds it does not read. Scenarios'
// observer, which follows the server's writes, reads none of the five,
// which were two thirds of an exploration's events.
type KindFilter interface {
	TraceSink
	// TraceKinds lists the kinds the sink reads (Event.Kind's), or nil
	// for all.
	TraceKinds() []string
}

// eventKind is a kind of event the world can leave out for a KindFilter.
type eventKind uint8

const (
	kindCall eventKind = iota
	kindSend
	kindReturn
	kindRecv
	kindTask
	numFilteredKinds
)

// filteredKinds names the kinds eventKind numbers.
var filteredKinds = [numFilteredKinds]string{kindCall: "call", kindSend: "send", kindReturn: "return", kindRecv: "recv", kindTask: "task"}

// TextTrace writes the text trace, one event a line.
type TextTrace struct{ W io.Writer }

func (t TextTrace) Event(e Event) { fmt.Fprintln(t.W, e.Text()) }

// JSONTrace writes the trace as JSON lines.
type JSONTrace struct{ W io.Writer }

func (t JSONTrace) Event(e Event) {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err) // an Event always marshals
	}
	t.W.Write(append(b, '\n'))
}

type tracer struct {
	sink   TraceSink
	keep   bool
	events []Event
	// wanted has bit k set when the trace takes events of kind k: when
	// it is kept, or its sink reads them.
	wanted uint32
}

func newTracer(sink TraceSink, keep bool) *tracer {
	t := &tracer{sink: sink, keep: keep}
	switch f, ok := sink.(KindFilter); {
	case keep || ok && f.TraceKinds() == nil || sink != nil && !ok:
		t.wanted = 1<<numFilteredKinds - 1
	case ok:
		for _, name := range f.TraceKinds() {
			if k := slices.Index(filteredKinds[:], name); k >= 0 {
				t.wanted |= 1 << k
			}
		}
	}
	return t
}

func (t *tracer) on() bool { return t.sink != nil || t.keep }

// wants reports whether the trace takes events of kind k.
func (t *tracer) wants(k eventKind) bool { return t.wanted&(1<<k) != 0 }

func (w *World) emit(e Event) {
	if !w.trace.on() {
		return
	}
	e.Step = w.step
	e.Time = time.Duration(w.nowNs)
	if w.trace.keep {
		w.trace.events = append(w.trace.events, e)
	}
	if w.trace.sink != nil {
		w.trace.sink.Event(e)
	}
}

// Trace returns the events kept so far (Config.KeepTrace).
func (w *World) Trace() []Event { return w.trace.events }

// TraceText renders the kept trace as text.
func (w *World) TraceText() string {
	var b strings.Builder
	for _, e := range w.trace.events {
		b.WriteString(e.Text())
		b.WriteByte('\n')
	}
	return b.String()
}
