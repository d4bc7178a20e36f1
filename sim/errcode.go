package sim

import (
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Code is a ZooKeeper error code (KeeperException.Code) as it travels in a
// reply header or a multi result.
type Code int32

const (
	CodeOK                     Code = 0
	CodeRuntimeInconsistency   Code = -2
	CodeUnimplemented          Code = -6
	CodeBadArguments           Code = -8
	CodeNoNode                 Code = -101
	CodeNoAuth                 Code = -102
	CodeBadVersion             Code = -103
	CodeNoChildrenForEphemeral Code = -108
	CodeNodeExists             Code = -110
	CodeNotEmpty               Code = -111
	CodeSessionExpired         Code = -112
	CodeInvalidACL             Code = -114
	CodeAuthFailed             Code = -115
)

// Codes of the 3.5+ operations (KeeperException.Code).
const (
	CodeSystemError      Code = -1
	CodeMarshallingError Code = -5
	// A reconfig's new configuration has no connected, synced quorum.
	CodeNewConfigNoQuorum Code = -13
	// A reconfig while another is outstanding.
	CodeReconfigInProgress Code = -14
	CodeAPIError           Code = -100
	CodeNoWatcher          Code = -121 // checkWatches, removeWatches: no such watch
	CodeReconfigDisabled   Code = -123
)

var codeNames = map[Code]string{
	CodeOK: "OK", CodeRuntimeInconsistency: "RUNTIMEINCONSISTENCY", CodeUnimplemented: "UNIMPLEMENTED",
	CodeBadArguments: "BADARGUMENTS", CodeNoNode: "NONODE", CodeBadVersion: "BADVERSION",
	CodeNoChildrenForEphemeral: "NOCHILDRENFOREPHEMERALS", CodeNodeExists: "NODEEXISTS",
	CodeNotEmpty: "NOTEMPTY", CodeSessionExpired: "SESSIONEXPIRED", CodeNoAuth: "NOAUTH",
	CodeInvalidACL: "INVALIDACL", CodeAuthFailed: "AUTHFAILED",
	CodeSystemError: "SYSTEMERROR", CodeMarshallingError: "MARSHALLINGERROR", CodeAPIError: "APIERROR",
	CodeNoWatcher: "NOWATCHER", CodeReconfigDisabled: "RECONFIGDISABLED",
	CodeNewConfigNoQuorum: "NEWCONFIGNOQUORUM", CodeReconfigInProgress: "RECONFIGINPROGRESS",
}

func (c Code) String() string {
	if name, ok := codeNames[c]; ok {
		return name
	}
	return fmt.Sprintf("code(%d)", int32(c))
}

// Error converts a code into the error value go-zookeeper/zk returns for
// it (ErrCode.toError): its sentinel where it has one, and
// "zk: unknown error"-style text where it has none (RUNTIMEINCONSISTENCY
// and UNIMPLEMENTED among them). The common CodeOK is answered inline,
// without the call into the switch (every reply asks, twice).
func (c Code) Error() error {
	if c == CodeOK {
		return nil
	}
	return c.failure()
}

// failure is Error for a code other than CodeOK.
func (c Code) failure() error {
	switch c {
	case CodeBadArguments:
		return zk.ErrBadArguments
	case CodeNoNode:
		return zk.ErrNoNode
	case CodeBadVersion:
		return zk.ErrBadVersion
	case CodeNoChildrenForEphemeral:
		return zk.ErrNoChildrenForEphemerals
	case CodeNodeExists:
		return zk.ErrNodeExists
	case CodeNotEmpty:
		return zk.ErrNotEmpty
	case CodeSessionExpired:
		return zk.ErrSessionExpired
	case CodeNoAuth:
		return zk.ErrNoAuth
	case CodeInvalidACL:
		return zk.ErrInvalidACL
	case CodeAPIError:
		return zk.ErrAPIError
	case CodeReconfigDisabled:
		return zk.ErrReconfigDisabled
	case CodeAuthFailed:
		return zk.ErrAuthFailed
	}
	return fmt.Errorf("unknown error: %v", zk.ErrCode(c))
}
