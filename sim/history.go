package sim

import (
	"time"

	"github.com/go-zookeeper/zk"
)

// Operation is one call a task made through a client, with when it was
// invoked and when it returned, in steps and in virtual time: the history
// a linearizability checker consumes. An operation that failed with
// zk.ErrConnectionClosed may or may not have been applied (Ambiguous).
// One that never returned (Returned is false: its client crashed with
// the request on its way, or the history was taken while the call was in
// progress) has no outcome at all: its Err, outputs and return are zero,
// and it too may or may not have been applied.
type Operation struct {
	ID      int
	Client  int
	Session int64 // the session the client had when the call was made
	Op      string
	Path    string
	Data    []byte
	Version int32
	Flags   int32
	Watch   bool

	// The outcome.
	OutPath  string
	OutData  []byte
	Stat     *zk.Stat
	Children []string
	Exists   bool
	Multi    []zk.MultiResponse
	Err      error
	// Zxid is the zxid of the reply's header, 0 if no reply came: the
	// transaction's for a write, for any other the last transaction the
	// answering server had applied (FinalRequestProcessor). A session's
	// replies never go back (model.SessionOrder).
	Zxid int64

	// Returned is set when the call returned; ReturnStep and ReturnTime
	// mean nothing without it.
	Returned   bool
	CallStep   uint64
	ReturnStep uint64
	CallTime   time.Duration
	ReturnTime time.Duration
}

// Ambiguous reports whether the outcome is unknown: the connection closed
// with the request possibly applied.
func (o *Operation) Ambiguous() bool { return o.Err == zk.ErrConnectionClosed }

// Pending reports whether the call never returned: its outcome is
// unknown, and it may have been applied at any point after its call.
func (o *Operation) Pending() bool { return !o.Returned }

// History returns every operation so far, in invocation order
// (Config.KeepHistory).
func (w *World) History() []Operation {
	var all []Operation
	for _, chunk := range w.history.chunks {
		all = append(all, chunk...)
	}
	return all
}

// history stores operations in fixed-size chunks, so that recording one
// never moves the others and a pointer to one stays valid.
type history struct {
	chunks [][]Operation
	n      int
}

const historyChunk = 1024

func (h *history) add(o Operation) *Operation {
	if len(h.chunks) == 0 || len(h.chunks[len(h.chunks)-1]) == historyChunk {
		h.chunks = append(h.chunks, make([]Operation, 0, historyChunk))
	}
	last := &h.chunks[len(h.chunks)-1]
	h.n++
	o.ID = h.n
	*last = append(*last, o)
	return &(*last)[len(*last)-1]
}
