package sim

import (
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestSendRequestIsWholeWrite holds sendRequest, which writes only a basic
// request's basic fields into a slot that held one, to a whole write: over
// any mix of basic and wide requests, pings, connects, fins, deliveries
// and clears, each message the queue holds is the one pushing it whole
// would have queued. It checks the marks checkWireSlots asserts as it goes.
func TestSendRequestIsWholeWrite(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := &World{}
		conn := &netConn{id: 1}
		w.conns = []*netConn{conn}
		var want []wireMsg
		for i := range rapid.IntRange(1, 60).Draw(t, "steps") {
			switch rapid.IntRange(0, 9).Draw(t, "what") {
			case 0, 1, 2, 3:
				req := drawBasicRequest(t)
				w.sendRequest(conn, &req, 0, true)
				want = append(want, wireMsg{kind: wireRequest, req: req})
			case 4:
				req := drawWideRequest(t)
				w.sendRequest(conn, &req, 0, false)
				want = append(want, wireMsg{kind: wireRequest, req: req})
			case 5:
				m := wireMsg{kind: wireConnect, connect: ConnectRequest{SessionID: rapid.Int64().Draw(t, "session"), Passwd: []byte("pw"), TimeoutMs: 10, LastZxidSeen: 3}}
				w.sendToServer(conn, m)
				want = append(want, m)
			case 6:
				m := wireMsg{kind: wireRequest, req: pingRequest}
				w.sendToServer(conn, m)
				want = append(want, m)
			case 7, 8:
				if len(want) > 0 {
					conn.toServer.drop()
					want = want[1:]
				}
			case 9:
				if rapid.Bool().Draw(t, "clear") {
					conn.toServer.clear()
					want = nil
				} else {
					conn.toServer.push(wireMsg{kind: wireFin})
					want = append(want, wireMsg{kind: wireFin})
				}
			}
			w.checkWireSlots()
			q := &conn.toServer
			if q.len() != len(want) {
				t.Fatalf("step %d: %d queued, want %d", i, q.len(), len(want))
			}
			for j := range want {
				got := q.items[q.head+j]
				got.basic = false
				if !reflect.DeepEqual(got, want[j]) {
					t.Fatalf("step %d: message %d is %+v, want %+v", i, j, got, want[j])
				}
			}
		}
	})
}

// TestIsBasicSeesEveryField sets each field of a Request but the basic
// ones in turn and checks that isBasic sees it: it fails when Request
// gains a field isBasic does not look at.
func TestIsBasicSeesEveryField(t *testing.T) {
	basic := map[string]bool{"Xid": true, "Op": true, "Path": true, "Data": true, "Mode": true, "Version": true, "Watch": true, "ACL": true}
	typ := reflect.TypeFor[Request]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		var r Request
		v := reflect.ValueOf(&r).Elem().Field(i)
		switch v.Kind() {
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			v.SetInt(1)
		case reflect.String:
			v.SetString("x")
		case reflect.Slice:
			v.Set(reflect.MakeSlice(f.Type, 0, 0)) // empty but not nil: not zero
		default:
			t.Fatalf("field %s of kind %v: teach this test to set it", f.Name, v.Kind())
		}
		if got := r.isBasic(); got != basic[f.Name] {
			t.Errorf("with %s set, isBasic = %v, want %v", f.Name, got, basic[f.Name])
		}
	}
}

// A connection the world forgets hands its queues' storage to the next
// one it opens (keepQueues, newConn): zeroed whole, the released slots
// past the length included, so that nothing delivered stays reachable and
// a slot marked basic holds zeros beyond its basic fields; the forgotten
// connection keeps none of it.
func TestNewConnTakesForgottenQueues(t *testing.T) {
	w := &World{spareQueues: &spares[spareQueues]{list: make([]spareQueues, 0, queueStores.max)}}
	old := &netConn{id: 1}
	w.conns = []*netConn{old}
	req := Request{Xid: 1, Op: OpGetData, Path: "/a", Data: []byte("x")}
	w.sendRequest(old, &req, 0, true)
	w.sendRequest(old, &req, 0, true)
	old.toServer.drop()
	old.toServer.drop()
	w.queued -= 2
	old.toClient.push(Output{Conn: 1, Kind: OutReply, Reply: Response{Xid: 1, Data: []byte("x")}})
	old.toClient.drop()
	toServer, toClient := old.toServer.items[:cap(old.toServer.items)], old.toClient.items[:cap(old.toClient.items)]
	w.keepQueues(old)
	if old.toServer.items != nil || old.toClient.items != nil {
		t.Fatalf("the forgotten connection keeps its storage")
	}
	conn := w.newConn(2, nil)
	if conn.toServer.len() != 0 || conn.toClient.len() != 0 || cap(conn.toServer.items) != len(toServer) || &conn.toServer.items[:1][0] != &toServer[0] || &conn.toClient.items[:1][0] != &toClient[0] {
		t.Fatalf("the new connection has not the forgotten one's storage, empty")
	}
	for i := range toServer {
		if !reflect.ValueOf(toServer[i]).IsZero() {
			t.Fatalf("to-server slot %d holds %+v, want zero", i, toServer[i])
		}
	}
	for i := range toClient {
		if !reflect.ValueOf(toClient[i]).IsZero() {
			t.Fatalf("to-client slot %d holds %+v, want zero", i, toClient[i])
		}
	}
	if other := w.newConn(3, nil); other.toServer.items != nil || other.toClient.items != nil {
		t.Fatalf("a second connection took storage already taken")
	}
}

// A world that closes gives its connections' queue storage back to the
// pool (releaseQueues), leaving every connection with none: a client's
// Close after the world's pushes its close onto storage of its own, not
// onto storage another world may have taken since.
func TestClosedWorldGivesQueuesBack(t *testing.T) {
	w, c := runCreate(t, "/a", nil)
	conns := slices.Clone(w.conns)
	if len(conns) == 0 || cap(conns[0].toServer.items) == 0 || cap(conns[0].toClient.items) == 0 {
		t.Fatalf("the client's connection has no queue storage to give back: %+v", conns)
	}
	w.Close()
	if w.spareQueues != nil {
		t.Fatalf("the closed world keeps its queue store")
	}
	for _, conn := range conns {
		if conn.toServer.items != nil || conn.toClient.items != nil {
			t.Fatalf("conn%d keeps its queues' storage after the world closed", conn.id)
		}
	}
	c.Close()
	if n := conns[0].toServer.len(); n > 1 {
		t.Fatalf("%d messages on the closed world's connection", n)
	}
}
