package sim

import (
	"fmt"

	"github.com/go-zookeeper/zk"
)

// OpCode names a request type. The values are ZooKeeper's wire opcodes
// (ZooDefs.OpCode), so traces read like a server log.
type OpCode int32

const (
	OpNotification      OpCode = 0 // the opcode of a watch event's header, never a request
	OpCreate            OpCode = 1
	OpDelete            OpCode = 2
	OpExists            OpCode = 3
	OpGetData           OpCode = 4
	OpSetData           OpCode = 5
	OpGetACL            OpCode = 6
	OpSetACL            OpCode = 7
	OpGetChildrenNoStat OpCode = 8 // ZooKeeper's getChildren: children without a Stat
	OpSync              OpCode = 9
	OpPing              OpCode = 11
	OpGetChildren       OpCode = 12 // getChildren2: children with the parent's Stat
	OpCheck             OpCode = 13
	OpMulti             OpCode = 14
	OpCreate2           OpCode = 15 // create answered with the path and the new node's Stat
	OpReconfig          OpCode = 16
	OpCheckWatches      OpCode = 17
	OpRemoveWatches     OpCode = 18
	OpCreateCont        OpCode = 19
	OpDeleteContainer   OpCode = 20 // internal to the server (ContainerManager); a client's is refused
	OpCreateTTL         OpCode = 21
	OpMultiRead         OpCode = 22
	OpAuth              OpCode = 100
	OpSetWatches        OpCode = 101
	OpSASL              OpCode = 102
	OpGetEphemerals     OpCode = 103
	OpGetAllChildrenNum OpCode = 104 // getAllChildrenNumber
	OpSetWatches2       OpCode = 105
	OpAddWatch          OpCode = 106
	OpWhoAmI            OpCode = 107
	OpCreateSession     OpCode = -10
	OpCloseSession      OpCode = -11
	OpError             OpCode = -1 // the type of an error result in a multi's reply
)

// OpGetChildren2 is OpGetChildren under ZooKeeper's name for it.
const OpGetChildren2 = OpGetChildren

var opNames = map[OpCode]string{
	OpNotification: "notification", OpCreate: "create", OpDelete: "delete", OpExists: "exists",
	OpGetData: "getData", OpSetData: "setData", OpGetACL: "getACL", OpSetACL: "setACL",
	OpGetChildrenNoStat: "getChildrenNoStat", OpSync: "sync", OpPing: "ping", OpGetChildren: "getChildren",
	OpCheck: "check", OpMulti: "multi", OpCreate2: "create2", OpReconfig: "reconfig",
	OpCheckWatches: "checkWatches", OpRemoveWatches: "removeWatches", OpCreateCont: "createContainer",
	OpDeleteContainer: "deleteContainer", OpCreateTTL: "createTTL", OpMultiRead: "multiRead",
	OpAuth: "auth", OpSetWatches: "setWatches", OpSASL: "sasl", OpGetEphemerals: "getEphemerals",
	OpGetAllChildrenNum: "getAllChildrenNumber", OpSetWatches2: "setWatches2", OpAddWatch: "addWatch",
	OpWhoAmI: "whoAmI", OpCreateSession: "createSession", OpCloseSession: "closeSession", OpError: "error",
}

// WatcherType is the type of watch checkWatches and removeWatches ask
// about (Watcher.WatcherType).
type WatcherType int32

const (
	WatcherChildren WatcherType = 1
	WatcherData     WatcherType = 2
	WatcherAny      WatcherType = 3
)

// AddWatchMode is the mode of an addWatch (AddWatchMode).
type AddWatchMode int32

const (
	// AddWatchPersistent is a watch on one node that is not removed when
	// it fires: data changes, creation, deletion and child changes.
	AddWatchPersistent AddWatchMode = 0
	// AddWatchPersistentRecursive is a persistent watch on a node and
	// every node below it; it fires no NodeChildrenChanged.
	AddWatchPersistentRecursive AddWatchMode = 1
)

// opNamesByCode holds opNames for the opcodes 0 to 127, by code: every
// traced request names its op, and an array beats a map lookup.
var opNamesByCode = func() (table [128]string) {
	for op, name := range opNames {
		if op >= 0 && int(op) < len(table) {
			table[op] = name
		}
	}
	return table
}()

func (op OpCode) String() string {
	if op >= 0 && int(op) < len(opNamesByCode) && opNamesByCode[op] != "" {
		return opNamesByCode[op]
	}
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
	case OpCreate, OpCreate2, OpDelete, OpSetData, OpCheck, OpMulti, OpCreateCont, OpCreateTTL, OpCloseSession, OpSetACL:
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
	Ops     []Request // multi: create, delete, setData and check; multiRead: getData and getChildrenNoStat
	// setWatches
	RelativeZxid int64
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
	// Malformed marks a request whose record the wire protocol could not
	// decode (a truncated record, a multi holding an op it may not): the
	// server answers it with MARSHALLINGERROR and keeps the connection.
	Malformed bool
	// auth (AuthPacket): the scheme and its credentials, e.g. "digest"
	// and "user:password"
	AuthScheme string
	AuthData   []byte
	// setWatches2: the persistent and persistent-recursive watches to
	// re-register besides the three lists above.
	PersistentWatches          []string
	PersistentRecursiveWatches []string
	// addWatch
	AddWatchMode AddWatchMode
	// checkWatches, removeWatches
	WatcherType WatcherType
	// reconfig (ReconfigRequest)
	JoiningServers string
	LeavingServers string
	NewMembers     string
	CurConfigID    int64
	// NewMembersNull: newMembers is null, as an incremental reconfig
	// sends it (PrepRequestProcessor tells the two forms apart by it).
	NewMembersNull bool
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
	// Ephemerals answers getEphemerals: the session's ephemeral paths.
	Ephemerals []string
	// TotalNumber answers getAllChildrenNumber: the node's descendants.
	TotalNumber int32
	ACL         []zk.ACL     // getACL: the node's ACL, with its Stat
	Clients     []ClientInfo // whoAmI: the identities of the connection
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
//
// A multiRead's results are independent: each is a GetDataResult (Op
// OpGetData, Data and Stat), a GetChildrenResult (Op OpGetChildrenNoStat,
// Children) or an error result of its own.
type MultiResult struct {
	Op       OpCode // the op's own type, or 0 for an error result (OpError on the wire)
	Err      Code
	Path     string
	Stat     zk.Stat
	Data     []byte   // multiRead's getData
	Children []string // multiRead's getChildren
}
