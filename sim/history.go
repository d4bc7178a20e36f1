package sim

import (
	"time"

	"github.com/go-zookeeper/zk"
)

// Operation is one call a task made through a client, with when it was
// invoked and when it returned, in steps and in virtual time: the history
// a linearizability checker consumes. An operation that failed with
// zk.ErrConnectionClosed may or may not have been applied (Ambiguous).
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

	CallStep   uint64
	ReturnStep uint64
	CallTime   time.Duration
	ReturnTime time.Duration
}

// Ambiguous reports whether the outcome is unknown: the connection closed
// with the request possibly applied.
func (o *Operation) Ambiguous() bool { return o.Err == zk.ErrConnectionClosed }

// History returns every operation so far, in invocation order.
func (w *World) History() []Operation { return w.history }
