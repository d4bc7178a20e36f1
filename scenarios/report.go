package scenarios

import (
	"bytes"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zklab/zklab/model"
	"github.com/zklab/zklab/sim"
)

// Report is what a picture of a run needs: every event of the simulator's
// trace, when each client believed it held the lock, and porcupine's
// visualizations of the lock's and the store's histories.
type Report struct {
	Clients int
	Events  []sim.Event
	Holds   []Hold
	Views   []View
}

// Hold is a stretch of steps in which a client believed it held the lock:
// from its acquire's return to its release's call (or the end of the run).
type Hold struct {
	Client   int
	From, To uint64
	Token    int64
	Shared   bool
}

// View is one of porcupine's visualizations: a whole HTML page.
type View struct {
	Title string
	HTML  string
}

// reportTimeout bounds porcupine's search when it draws a history.
const reportTimeout = 5 * time.Second

func (r *runner) report(lastStep uint64) *Report {
	rep := &Report{Clients: r.sc.Clients, Events: r.obs.events}
	for _, l := range r.hist.locks {
		if !l.granted {
			continue
		}
		end := lastStep
		if l.releaseCalled {
			end = l.releaseCall
		}
		rep.Holds = append(rep.Holds, Hold{Client: l.client, From: l.acquireReturn, To: end, Token: l.token, Shared: l.shared})
	}
	lockOps := r.lockOperations()
	if v, ok := visualize("the lock's history ("+r.lockKind+" model)", r.lockModel(), lockOps); ok {
		rep.Views = append(rep.Views, v)
	}
	storeModel := model.Store()
	title := "the store's history (no fencing)"
	if r.store.fenced {
		storeModel, title = model.FencedStore(), "the store's history (fenced)"
	}
	if v, ok := visualize(title, storeModel, r.storeOperations()); ok {
		rep.Views = append(rep.Views, v)
	}
	return rep
}

func visualize(title string, m porcupine.Model, ops []porcupine.Operation) (View, bool) {
	if len(ops) == 0 {
		return View{}, false
	}
	_, info := porcupine.CheckOperationsVerbose(m, ops, reportTimeout)
	var b bytes.Buffer
	if err := porcupine.Visualize(m, info, &b); err != nil {
		return View{}, false
	}
	return View{Title: title, HTML: b.String()}, true
}
