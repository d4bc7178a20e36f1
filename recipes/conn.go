package recipes

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"
)

// Conn is the ZooKeeper client a recipe is written against. Its data calls
// are go-zookeeper/zk's, with a context first; its types, flags and errors
// are zk's. A recipe blocks, waits and sleeps only through it, so that the
// simulator (package sim) can schedule every step and a real backend does
// each for real.
//
// A data call fails with zk.ErrConnectionClosed when the connection drops
// while the request is in flight, whether or not the server applied it:
// the ambiguous outcome every recipe must settle for itself. The context
// is checked before a request is sent; once sent, a request runs to its
// reply or to the loss of the connection, as in go-zookeeper/zk, which
// takes no context.
type Conn interface {
	Create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateContainer(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Delete(ctx context.Context, path string, version int32) error
	Exists(ctx context.Context, path string) (bool, *zk.Stat, error)
	ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error)
	Get(ctx context.Context, path string) ([]byte, *zk.Stat, error)
	GetW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error)
	Children(ctx context.Context, path string) ([]string, *zk.Stat, error)
	ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error)
	// Multi takes *zk.CreateRequest, *zk.DeleteRequest, *zk.SetDataRequest
	// and *zk.CheckVersionRequest, as zk.Conn.Multi does.
	Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error)
	Sync(ctx context.Context, path string) (string, error)

	// Session returns what the client knows of its session now.
	Session() Session
	// WaitSession blocks until the session changes from the one seen (its
	// Generation grows), or ctx is done.
	WaitSession(ctx context.Context, seen Session) (Session, error)

	// Wait blocks until one of the watches fires and returns its event (an
	// EventNotWatching with Err set when the session expired or the client
	// closed), or until ctx is done.
	Wait(ctx context.Context, watches ...<-chan zk.Event) (zk.Event, error)
	// Sleep pauses the caller for d, or until ctx is done.
	Sleep(ctx context.Context, d time.Duration) error
	// WithTimeout is context.WithTimeout on the backend's clock: virtual
	// time in the simulator.
	WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc)
	// Now is the backend's clock.
	Now() time.Time
	// GUID returns 32 random hex digits, from the simulator's seeded source
	// in the simulator.
	GUID() string
	// NewSession gives the client's session up and starts a new one, as
	// a client that closes its ZooKeeper handle without waiting for the
	// close and makes a new handle does (Curator's reset of its handle;
	// a new zk.Connect). The old session's closeSession goes out only if
	// the client is connected; otherwise the old session lives on the
	// server, with its ephemeral nodes, until it expires. Requests in
	// flight fail and watches end (EventNotWatching with zk.ErrClosing),
	// as the old handle's Close makes them. It returns at once; the new
	// session comes as a session change (WaitSession).
	NewSession(ctx context.Context) error
	// Go runs fn as background work of the client's (a watch callback, a
	// connection-state listener, a retried delete): a task the simulator
	// schedules like any other, and that dies with the client's process;
	// a goroutine on a real server. fn's context ends when the client is
	// closed (on a real server) or the run ends (in the simulator). A
	// recipe starts background work only this way, never with a go
	// statement of its own.
	Go(name string, fn func(ctx context.Context))
}

// Session is a client's view of its session. Generation grows with every
// change the client sees: a disconnect, a reconnect, an expiry, a new
// session.
type Session struct {
	ID         int64
	State      zk.State
	Generation uint64
	TimeoutMs  int32
}

// Connected reports whether the client is connected with a live session.
func (s Session) Connected() bool { return s.State == zk.StateHasSession }

// A PhaseRecorder is a Conn that hears which phase of its protocol a
// recipe is in: zklab's exploration counts the faults that strike each
// phase (scenarios.Coverage), and a recipe names phases of its own this
// way. A real backend records nothing.
type PhaseRecorder interface {
	// EnterPhase says the recipe entered the phase named; "" says it left
	// its own phases, back to the ones the call in progress implies
	// (creating, listing, waiting...). A phase of the recipe's ends when
	// Acquire or Release returns.
	EnterPhase(name string)
}

// EnterPhase tells c, if it records phases, that the recipe entered the
// phase named (see PhaseRecorder).
func EnterPhase(c Conn, name string) {
	if r, ok := c.(PhaseRecorder); ok {
		r.EnterPhase(name)
	}
}
