package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zklab/zklab/model"
	"github.com/zklab/zklab/sim"
)

// Report is what a picture of a run needs: every event of the simulator's
// trace, when each client believed it held the lock, what it did to the
// store, the faults and the sessions the server expired, each with its
// step and its (virtual) time, and porcupine's visualizations of the
// lock's and the store's histories.
type Report struct {
	Clients int
	Events  []sim.Event
	Holds   []Hold
	Waits   []Wait
	Store   []StoreOp
	Faults  []FaultSpan
	// Expiries are the sessions the server expired (not those closed by
	// their clients).
	Expiries []Expiry
	Views    []View
	// SessionTimeout is the clients' session timeout.
	SessionTimeout time.Duration
	// Steps and End are where the run ended: its step and time.
	Steps uint64
	End   time.Duration
	// Real is set for a run on a real server: steps are then the order in
	// which the run noted its events, and times are wall-clock.
	Real bool
	// Election is set when the clients campaign for leadership
	// (Scenario.Election): a hold is then a term, and a wait a campaign.
	Election bool

	// A served history (`zklab serve --history`: a real client's run on
	// the simulated server) fills the rest. Its lanes are sessions, not
	// clients of a workload; its requests are spans from the request to
	// its reply (a simulated run shows its requests and replies as the
	// trace's send and recv events instead).
	//
	// Lanes names the lanes 1..Clients; empty for c1, c2, ...
	Lanes []string
	// Requests are the served requests, each with its reply or none.
	Requests []RequestSpan
}

// RequestSpan is one request of a served history, from its arrival
// (step From) to its reply (step To), or, if no reply was sent, to the end
// of the history.
type RequestSpan struct {
	Client           int // the lane: the request's session
	From, To         uint64
	FromTime, ToTime time.Duration
	Op, Path         string
	// Err is the reply's error name ("" for OK).
	Err string
	// Answered is false for a request no reply was sent for: its
	// connection closed first, or a fault lost the reply.
	Answered bool
	// Ambiguous is set for an unanswered write: it may or may not have
	// been applied, and its client cannot tell (a read that never
	// answered changed nothing).
	Ambiguous bool
	// Text says it all, for a tooltip: the request and its reply.
	Text string
}

// Hold is a stretch of steps in which a client believed it held the lock:
// from its acquire's return to its release's call (or the end of the run).
type Hold struct {
	Client           int
	From, To         uint64
	FromTime, ToTime time.Duration
	Token            int64
	Shared           bool
}

// Wait is an acquire from its call to its return (or the end of the run,
// if it never returned): the time a client waited for the lock.
type Wait struct {
	Client           int
	From, To         uint64
	FromTime, ToTime time.Duration
	// Outcome is "granted", "failed: ERROR", or "" for an acquire that
	// never returned.
	Outcome string
}

// StoreOp is one read or write of the store by a client in its critical
// section.
type StoreOp struct {
	Client               int
	Write                bool
	Token                int64
	Call, Return         uint64
	CallTime, ReturnTime time.Duration
	// Value is the value read, or the value written.
	Value int64
	// Refused is set when the fenced store refused the token.
	Refused bool
	// Overwrote, for a write, is the client whose update it wrote over
	// without having read it (a lost update); 0 for none.
	Overwrote int
	// Over is the value a lost update's write found there.
	Over int64
}

// FaultSpan is a fault as the run saw it: injected at Step (Time), over
// at End (for a fault that lasts: a pause, a partition, a disconnection,
// a restart; a crash lasts to the end of the run).
type FaultSpan struct {
	Client   int // 0: the server
	Kind     sim.FaultKind
	Duration time.Duration
	Step     uint64
	Time     time.Duration
	End      time.Duration
	// EndStep is the step at which the run saw the fault end (a pause
	// ended, a partition healed, the server up); 0 if it did not.
	EndStep uint64
	// Text is what the trace said: the fault as a scenario writes it, or
	// what it did (a request or reply dropped).
	Text string
}

// Expiry is a session the server expired.
type Expiry struct {
	Client  int
	Session int64
	Step    uint64
	Time    time.Duration
	// LastHeard is when (LastHeardStep: at which step) the server last
	// applied a request (or a ping) of the session: its timeout runs from
	// there.
	LastHeard     time.Duration
	LastHeardStep uint64
}

// View is one of porcupine's visualizations: a whole HTML page.
type View struct {
	Title string
	HTML  string
}

// reportTimeout bounds porcupine's search when it draws a history.
const reportTimeout = 5 * time.Second

func (r *runner) report(lastStep uint64) *Report {
	rep := &Report{Clients: r.sc.Clients, Events: r.obs.events, SessionTimeout: r.sc.SessionTimeout, Steps: lastStep, End: r.endTime, Real: r.real != nil, Election: r.sc.Election()}
	for _, l := range r.hist.locks {
		w := Wait{Client: l.client, From: l.acquireCall, To: lastStep, FromTime: l.acquireCallTime, ToTime: r.endTime}
		if l.returned {
			w.To, w.ToTime, w.Outcome = l.acquireReturn, l.acquireReturnTime, "granted"
			if !l.granted {
				w.Outcome = fmt.Sprintf("failed: %v", l.acquireErr)
			}
		}
		rep.Waits = append(rep.Waits, w)
		if !l.granted {
			continue
		}
		end, endTime := lastStep, r.endTime
		if l.releaseCalled {
			end, endTime = l.releaseCall, l.releaseCallTime
		} else if step, ok := r.obs.crashStep[l.client]; ok && step >= l.acquireReturn {
			// A crashed process believes nothing any more.
			end, endTime = step, l.acquireReturnTime
			for _, in := range r.obs.injected {
				if in.client == l.client && in.step == step {
					endTime = in.time
				}
			}
		}
		rep.Holds = append(rep.Holds, Hold{Client: l.client, From: l.acquireReturn, To: end, FromTime: l.acquireReturnTime, ToTime: endTime, Token: l.token, Shared: l.shared})
	}
	for _, u := range r.hist.updates {
		if !u.readDone {
			continue
		}
		rep.Store = append(rep.Store, StoreOp{Client: u.client, Token: u.token, Call: u.readCall, Return: u.readReturn,
			CallTime: u.readCallTime, ReturnTime: u.readReturnTime, Value: u.read, Refused: !u.readOK})
		if !u.wrote {
			continue
		}
		op := StoreOp{Client: u.client, Write: true, Token: u.token, Call: u.writeCall, Return: u.writeReturn,
			CallTime: u.writeCallTime, ReturnTime: u.writeReturnTime, Value: u.read + 1, Refused: !u.writeOK}
		for _, lu := range r.store.lost {
			// A lease's token is its own: one write of it at most. (On a
			// real server the write's step and the lost update's differ:
			// every reading of the clock advances it.)
			if lu.client == u.client && lu.token == u.token && lu.read == u.read {
				op.Overwrote, op.Over = lu.previous, lu.current
			}
		}
		rep.Store = append(rep.Store, op)
	}
	rep.Faults, rep.Expiries = r.faultsAndExpiries()
	lockOps := r.lockOperations()
	notes := rep.annotations()
	if v, ok := visualize("the lock's history ("+r.lockKind+" model)", r.lockModel(), lockOps, notes); ok {
		rep.Views = append(rep.Views, v)
	}
	storeModel := model.Store()
	title := "the store's history (no fencing)"
	if r.store.fenced {
		storeModel, title = model.FencedStore(), "the store's history (fenced)"
	}
	if v, ok := visualize(title, storeModel, r.storeOperations(), notes); ok {
		rep.Views = append(rep.Views, v)
	}
	return rep
}

// faultsAndExpiries reads the faults and the server's expiries out of the
// run's events.
func (r *runner) faultsAndExpiries() ([]FaultSpan, []Expiry) {
	var faults []FaultSpan
	var expiries []Expiry
	lastHeard := map[int64]sim.Event{}
	for _, e := range r.obs.events {
		switch e.Kind {
		case "apply":
			lastHeard[e.Session] = e
		case "server":
			if e.Session != 0 && expiryEvent(e.Detail) {
				expiries = append(expiries, Expiry{Client: r.obs.sessionClient[e.Session], Session: e.Session, Step: e.Step, Time: e.Time, LastHeard: lastHeard[e.Session].Time, LastHeardStep: lastHeard[e.Session].Step})
			}
		case "fault":
			f := FaultSpan{Client: e.Client, Step: e.Step, Time: e.Time, End: e.Time, Text: faultText(e)}
			kind, rest, _ := strings.Cut(e.Detail, " ")
			for _, k := range sim.FaultKinds {
				if kind == string(k) {
					f.Kind = k
				}
			}
			if f.Kind != "" && !strings.HasPrefix(rest, "c") && !strings.HasPrefix(rest, "for=") {
				f.Kind = "" // "pause ended": how a fault ended, not a fault
			}
			if f.Kind == "" {
				// What a fault did, or how it ended: part of the fault
				// injected before, drawn with it.
				if ended, ok := faultEnds[e.Detail]; ok {
					for k := len(faults) - 1; k >= 0; k-- {
						if g := &faults[k]; g.Kind == ended && g.Client == e.Client && g.EndStep == 0 {
							g.EndStep = e.Step
							break
						}
					}
				}
				if strings.Contains(e.Detail, "dropped") {
					f.Kind = "dropped"
					faults = append(faults, f)
				}
				continue
			}
			if _, d, ok := strings.Cut(rest, "for="); ok {
				if dur, err := time.ParseDuration(d); err == nil {
					f.Duration, f.End = dur, e.Time+dur
				}
			}
			if f.Kind == sim.FaultCrash {
				f.End = r.endTime
			}
			faults = append(faults, f)
		}
	}
	return faults, expiries
}

// faultEnds are the trace's words for the end of a fault that lasts.
var faultEnds = map[string]sim.FaultKind{
	"pause ended":      sim.FaultPause,
	"partition healed": sim.FaultPartition,
	"server up again":  sim.FaultRestart,
}

// annotations mark the faults and the server's expiries on porcupine's
// views, on lanes of their own.
func (rep *Report) annotations() []porcupine.Annotation {
	var out []porcupine.Annotation
	for _, f := range rep.Faults {
		who := "server"
		if f.Client > 0 {
			who = fmt.Sprintf("c%d", f.Client)
		}
		out = append(out, porcupine.Annotation{Tag: "faults", Start: int64(f.Step), End: int64(f.Step),
			Description: who + " " + string(f.Kind), Details: fmt.Sprintf("step %d, %v: %s", f.Step, f.Time, f.Text),
			BackgroundColor: "#f8d7da"})
	}
	for _, x := range rep.Expiries {
		out = append(out, porcupine.Annotation{Tag: "server", Start: int64(x.Step), End: int64(x.Step),
			Description: fmt.Sprintf("c%d's session expired", x.Client), Details: fmt.Sprintf("step %d, %v: the server expired session %#x", x.Step, x.Time, x.Session),
			BackgroundColor: "#f8d7da"})
	}
	return out
}

func visualize(title string, m porcupine.Model, ops []porcupine.Operation, notes []porcupine.Annotation) (View, bool) {
	if len(ops) == 0 {
		return View{}, false
	}
	_, info := porcupine.CheckOperationsVerbose(m, ops, reportTimeout)
	info.AddAnnotations(notes)
	var b bytes.Buffer
	if err := porcupine.Visualize(m, info, &b); err != nil {
		return View{}, false
	}
	page, err := canonicalView(b.String())
	if err != nil {
		panic(fmt.Sprintf("scenarios: porcupine's view: %v", err)) // porcupine's own output
	}
	return View{Title: title, HTML: page}, true
}

// Porcupine's view data, as far as canonicalView needs it.
type (
	viewStep struct {
		Index            int
		StateDescription string
	}
	viewPartition struct {
		History               json.RawMessage
		PartialLinearizations [][]viewStep
		Largest               map[int]int
	}
	viewData struct {
		Partitions  []viewPartition
		Annotations json.RawMessage
	}
)

// canonicalView puts porcupine's partial linearizations in one order:
// porcupine collects them from a map, so two drawings of one history
// list them, and pick the largest of equal length, in different orders,
// and a report would not be the same byte for byte. Longest first, then
// by their operations; each operation's largest is the first longest
// that has it, as porcupine picks it.
func canonicalView(page string) (string, error) {
	const start = "const data = "
	i := strings.Index(page, start)
	if i < 0 {
		return "", fmt.Errorf("no %q", start)
	}
	i += len(start)
	j := strings.IndexByte(page[i:], '\n')
	if j < 0 {
		return "", fmt.Errorf("the data does not end")
	}
	var d viewData
	if err := json.Unmarshal([]byte(page[i:i+j]), &d); err != nil {
		return "", err
	}
	for k := range d.Partitions {
		p := &d.Partitions[k]
		slices.SortStableFunc(p.PartialLinearizations, func(a, b []viewStep) int {
			if len(a) != len(b) {
				return len(b) - len(a)
			}
			for n := range a {
				if a[n].Index != b[n].Index {
					return a[n].Index - b[n].Index
				}
			}
			return 0
		})
		size := map[int]int{}
		p.Largest = map[int]int{}
		for n, lin := range p.PartialLinearizations {
			for _, st := range lin {
				if size[st.Index] < len(lin) {
					size[st.Index], p.Largest[st.Index] = len(lin), n
				}
			}
		}
	}
	out, err := json.Marshal(d)
	if err != nil {
		return "", err
	}
	return page[:i] + string(out) + page[i+j:], nil
}
