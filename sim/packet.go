package sim

// Request frame sizes in jute encoding, without the 4-byte length prefix:
// what jute.maxbuffer limits on the server and what go-zookeeper/zk must
// fit in its 1.5 MiB send buffer. Measured on ZooKeeper 3.8.0 with a
// world:anyone ACL: create = 47 + len(path) + len(data), setData = 20 +
// len(path) + len(data).
const (
	requestHeaderBytes = 8             // xid, type
	clientBufferBytes  = 1536*1024 - 4 // go-zookeeper's bufferSize less the length prefix
	multiHeaderBytes   = 9             // type, done, err
)

func juteString(s string) int { return 4 + len(s) }

// The sizes take the request by pointer: a Request is some 350 bytes,
// and these run on every request (the client measures it, and the
// server takes the client's measure: wireMsg.size).
func packetLen(req *Request) int {
	return requestHeaderBytes + bodyLen(req)
}

func bodyLen(req *Request) int {
	switch req.Op {
	case OpCreate, OpCreate2, OpCreateCont:
		return juteString(req.Path) + 4 + len(req.Data) + aclLen(req) + 4
	case OpCreateTTL:
		return juteString(req.Path) + 4 + len(req.Data) + aclLen(req) + 4 + 8
	case OpSetData:
		return juteString(req.Path) + 4 + len(req.Data) + 4
	case OpDelete, OpCheck:
		return juteString(req.Path) + 4
	case OpExists, OpGetData, OpGetChildren, OpGetChildrenNoStat:
		return juteString(req.Path) + 1
	case OpSync, OpGetACL, OpGetEphemerals, OpGetAllChildrenNum:
		return juteString(req.Path)
	case OpSetACL:
		return juteString(req.Path) + aclLen(req) + 4
	case OpAuth:
		return 4 + juteString(req.AuthScheme) + 4 + len(req.AuthData)
	case OpAddWatch, OpCheckWatches, OpRemoveWatches:
		return juteString(req.Path) + 4
	case OpReconfig:
		return juteString(req.JoiningServers) + juteString(req.LeavingServers) + juteString(req.NewMembers) + 8
	case OpMulti, OpMultiRead:
		n := multiHeaderBytes
		for i := range req.Ops {
			n += multiHeaderBytes + bodyLen(&req.Ops[i])
		}
		return n
	case OpSetWatches, OpSetWatches2:
		n := 8 + 12
		lists := [][]string{req.DataWatches, req.ExistWatches, req.ChildWatches}
		if req.Op == OpSetWatches2 {
			n += 8
			lists = append(lists, req.PersistentWatches, req.PersistentRecursiveWatches)
		}
		for _, list := range lists {
			for _, p := range list {
				n += juteString(p)
			}
		}
		return n
	}
	return 0
}

func aclLen(req *Request) int {
	n := 4
	for _, a := range req.ACL {
		n += 4 + juteString(a.Scheme) + juteString(a.ID)
	}
	return n
}
