// Package difftest holds the simulator (package sim) to a real ZooKeeper:
// it runs the same operation sequences on both and compares every result.
// Its tests need a real server (recipes/zkconn/zktest); the helpers here
// describe operations, run them on a backend and render their results in a
// form that does not depend on the backend: paths relative to the run's
// root, zxids relative to the root's creation, session ids as client
// numbers.
package difftest

import (
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Kind names an operation.
type Kind string

// The operations of a sequence.
const (
	Create          Kind = "create"
	CreateContainer Kind = "createContainer"
	Delete          Kind = "delete"
	Exists          Kind = "exists"
	ExistsW         Kind = "existsW"
	Get             Kind = "get"
	GetW            Kind = "getW"
	Set             Kind = "set"
	Children        Kind = "children"
	ChildrenW       Kind = "childrenW"
	Multi           Kind = "multi"
	Sync            Kind = "sync"
	Close           Kind = "close" // closes the client's session
	// WaitSession waits until the client has a session again, after a
	// request that made the server close its connection (oversized data).
	WaitSession Kind = "waitSession"
	// Fault injects Op.Fault on the client's connection or session and
	// waits until the client has a session again.
	Fault Kind = "fault"
	// AddAuth adds Op.Cred to the client's connection; when the server
	// refuses it (and closes the connection), it waits until the client
	// has a session again.
	AddAuth Kind = "addAuth"
	GetACL  Kind = "getACL"
	SetACL  Kind = "setACL" // Op.ACL, with Op.Version the expected aversion
)

// The faults an Op can inject, on both backends.
const (
	// FaultDisconnect drops the client's connection: sim.FaultDisconnect,
	// or zktest.Proxy.CloseConns on a real server.
	FaultDisconnect = "disconnect"
	// FaultDropReply arms the loss of the reply to the client's next
	// request, which closes its connection: sim.FaultDropReply, or
	// zktest.Proxy.DropNextReply. It does not wait: the next op is the one.
	FaultDropReply = "dropReply"
	// FaultExpire expires the client's session on the server now:
	// sim.FaultExpire, or zktest.Proxy.Expire.
	FaultExpire = "expire"
	// FaultPartitionExpire cuts the client off until its session has
	// timed out: sim.FaultPartition for three session timeouts, or on a
	// real server a blackhole until the server has expired the session.
	FaultPartitionExpire = "partitionExpire"
)

// SubKind names an operation of a multi.
type SubKind string

// The operations of a multi.
const (
	SubCreate SubKind = "create"
	SubDelete SubKind = "delete"
	SubSet    SubKind = "set"
	SubCheck  SubKind = "check"
)

// ACLKind names the ACL of a create.
type ACLKind string

// The ACLs a create can give.
const (
	ACLAll  ACLKind = ""     // world:anyone, every permission
	ACLRead ACLKind = "read" // world:anyone, read only
	ACLNone ACLKind = "none" // an empty ACL: the server refuses it
)

func (a ACLKind) acl() []zk.ACL {
	switch a {
	case ACLRead:
		return zk.WorldACL(zk.PermRead)
	case ACLNone:
		return []zk.ACL{}
	}
	if acl, ok := aclKinds[a]; ok {
		return acl
	}
	return zk.WorldACL(zk.PermAll)
}

// A Path is a path relative to the run's root ("/a/b" is <root>/a/b), or,
// with Abs, a path used as it is ("/zookeeper", "", "a").
type Path struct {
	Rel string
	Abs bool
}

func (p Path) full(root string) string {
	if p.Abs {
		return p.Rel
	}
	return root + p.Rel
}

func (p Path) String() string {
	if p.Abs {
		return fmt.Sprintf("abs%q", p.Rel)
	}
	return p.Rel
}

// Data is the data of a create or set: Bytes, or with Len > 0 that many
// bytes of 'x' (for the size limits), or nil with Nil.
type Data struct {
	Bytes string
	Len   int
	Nil   bool
}

func (d Data) bytes() []byte {
	switch {
	case d.Nil:
		return nil
	case d.Len > 0:
		return []byte(strings.Repeat("x", d.Len))
	}
	return []byte(d.Bytes)
}

func (d Data) String() string {
	switch {
	case d.Nil:
		return "nil"
	case d.Len > 0:
		return fmt.Sprintf("len=%d", d.Len)
	}
	return fmt.Sprintf("%q", d.Bytes)
}

// An Op is one operation of a sequence, made by one client.
type Op struct {
	Client  int // from 0
	Kind    Kind
	Path    Path
	Data    Data
	Flags   int32
	ACL     ACLKind
	Version int32
	Ops     []SubOp // of a multi
	Fault   string  // of a Fault
	Cred    Cred    // of an AddAuth
}

// A SubOp is one operation of a multi.
type SubOp struct {
	Kind    SubKind
	Path    Path
	Data    Data
	Flags   int32
	Version int32
	ACL     ACLKind // of a create
}

func (op Op) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "c%d %s", op.Client+1, op.Kind)
	switch op.Kind {
	case Create, CreateContainer:
		fmt.Fprintf(&b, " %v data=%v flags=%d", op.Path, op.Data, op.Flags)
		if op.ACL != ACLAll {
			fmt.Fprintf(&b, " acl=%s", op.ACL)
		}
	case Delete:
		fmt.Fprintf(&b, " %v v=%d", op.Path, op.Version)
	case Set:
		fmt.Fprintf(&b, " %v data=%v v=%d", op.Path, op.Data, op.Version)
	case Multi:
		for _, s := range op.Ops {
			b.WriteString(" [" + s.String() + "]")
		}
	case Close, WaitSession:
	case Fault:
		b.WriteString(" " + op.Fault)
	case AddAuth:
		fmt.Fprintf(&b, " %s", op.Cred)
	case SetACL:
		acl := op.ACL
		if acl == ACLAll {
			acl = "all"
		}
		fmt.Fprintf(&b, " %v acl=%s v=%d", op.Path, acl, op.Version)
	default:
		fmt.Fprintf(&b, " %v", op.Path)
	}
	return b.String()
}

func (s SubOp) String() string {
	switch s.Kind {
	case SubCreate:
		if s.ACL != ACLAll {
			return fmt.Sprintf("create %v data=%v flags=%d acl=%s", s.Path, s.Data, s.Flags, s.ACL)
		}
		return fmt.Sprintf("create %v data=%v flags=%d", s.Path, s.Data, s.Flags)
	case SubSet:
		return fmt.Sprintf("set %v data=%v v=%d", s.Path, s.Data, s.Version)
	}
	return fmt.Sprintf("%s %v v=%d", s.Kind, s.Path, s.Version)
}

func (s SubOp) request(root string) any {
	p := s.Path.full(root)
	switch s.Kind {
	case SubCreate:
		return &zk.CreateRequest{Path: p, Data: s.Data.bytes(), Acl: s.ACL.acl(), Flags: s.Flags}
	case SubDelete:
		return &zk.DeleteRequest{Path: p, Version: s.Version}
	case SubSet:
		return &zk.SetDataRequest{Path: p, Data: s.Data.bytes(), Version: s.Version}
	}
	return &zk.CheckVersionRequest{Path: p, Version: s.Version}
}
