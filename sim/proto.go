package sim

import (
	"fmt"

	"github.com/go-zookeeper/zk"
)

// OpCode names a request type. The values are ZooKeeper's wire opcodes
// (ZooDefs.OpCode), so traces read like a server log.
type OpCode int32

const (
	OpCreate       OpCode = 1
	OpDelete       OpCode = 2
	OpExists       OpCode = 3
	OpGetData      OpCode = 4
	OpSetData      OpCode = 5
	OpGetACL       OpCode = 6
	OpSetACL       OpCode = 7
	OpSync         OpCode = 9
	OpPing         OpCode = 11
	OpGetChildren  OpCode = 12 // getChildren2: children with the parent's Stat
	OpCheck        OpCode = 13
	OpMulti        OpCode = 14
	OpCreateCont   OpCode = 19
	OpCreateTTL    OpCode = 21
	OpAuth         OpCode = 100 // the auth packet: AuthScheme and AuthData; the Java client sends it with xid -4
	OpSetWatches   OpCode = 101
	OpWhoAmI       OpCode = 107
	OpCloseSession OpCode = -11
)

var opNames = map[OpCode]string{
	OpCreate: "create", OpDelete: "delete", OpExists: "exists", OpGetData: "getData",
	OpSetData: "setData", OpSync: "sync", OpPing: "ping", OpGetChildren: "getChildren",
	OpCheck: "check", OpMulti: "multi", OpCreateCont: "createContainer", OpCreateTTL: "createTTL",
	OpSetWatches: "setWatches", OpCloseSession: "closeSession",
	OpGetACL: "getACL", OpSetACL: "setACL", OpAuth: "auth", OpWhoAmI: "whoAmI",
}

func (op OpCode) String() string {
	if name, ok := opNames[op]; ok {
		return name
	}
	return fmt.Sprintf("op(%d)", int32(op))
}

// isWrite reports whether the op is a transaction: it goes through the
// server's request pipeline, gets a zxid even when it fails, and is
// linearizable.
func (op OpCode) isWrite() bool {
	switch op {
	case OpCreate, OpDelete, OpSetData, OpCheck, OpMulti, OpCreateCont, OpCreateTTL, OpCloseSession, OpSetACL:
		return true
	}
	return false
}

// Request is one client request as the server sees it.
type Request struct {
	Xid     int32
	Op      OpCode
	Path    string
	Data    []byte
	Mode    int32 // create mode, zk.FlagPersistent ... zk.FlagPersistentSequentialWithTTL
	TTLMs   int64
	Version int32
	Watch   bool
	ACL     []zk.ACL  // create and setACL (whose Version is the expected aversion)
	Ops     []Request // multi: create, delete, setData and check requests
	// setWatches
	RelativeZxid int64
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
	// auth (AuthPacket): the scheme and its credentials, e.g. "digest"
	// and "user:password"
	AuthScheme string
	AuthData   []byte
}

// Response is the server's reply to one request.
type Response struct {
	Xid      int32
	Zxid     int64 // the reply header's zxid: the request's own for a write, the last applied for a read
	Err      Code  // CodeOK or the error the server reports
	Path     string
	Stat     zk.Stat
	Data     []byte
	Children []string
	Multi    []MultiResult
	ACL      []zk.ACL     // getACL: the node's ACL, with its Stat
	Clients  []ClientInfo // whoAmI: the identities of the connection
}

// ClientInfo is one identity a connection has authenticated as, as
// whoAmI reports it (ClientInfo in zookeeper.jute): the scheme and the id,
// e.g. "ip" and "127.0.0.1", or "digest" and "alice".
type ClientInfo struct {
	AuthScheme string
	User       string
}

// ConnectRequest opens a session (SessionID 0) or resumes one.
type ConnectRequest struct {
	SessionID    int64
	Passwd       []byte
	TimeoutMs    int32
	LastZxidSeen int64
}

// ConnectResponse carries the negotiated session. SessionID 0 and TimeoutMs
// 0 mean the session asked for has expired (ZooKeeperServer
// finishSessionInit answers an invalid session this way).
type ConnectResponse struct {
	SessionID int64
	Passwd    []byte
	TimeoutMs int32
}

// ConnID names one client connection as the server knows it.
type ConnID int64

// OutputKind says what the server sends on a connection.
type OutputKind int

const (
	OutConnect OutputKind = iota + 1 // the connect response
	OutReply                         // a reply to a request (Xid -2 answers a ping)
	OutEvent                         // a watch notification (Xid -1)
	OutClose                         // the server closes the connection after what it queued
)

// Output is one message the server sends, in the order it sends them.
type Output struct {
	Conn    ConnID
	Kind    OutputKind
	Connect ConnectResponse
	Reply   Response
	Event   zk.Event
}

// MultiResult is the outcome of one op of a multi, as ZooKeeper's
// MultiResponse carries it: on failure every op is an error result, CodeOK
// for the ops before the failing one and RUNTIMEINCONSISTENCY after it
// (DataTree.processTxn, OpCode.multi).
type MultiResult struct {
	Op   OpCode // the op's own type, or 0 for an error result
	Err  Code
	Path string
	Stat zk.Stat
}
