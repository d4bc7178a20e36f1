package sim

import (
	"fmt"
	"slices"
)

type wireKind int

const (
	wireConnect wireKind = iota + 1
	wireRequest
	wireFin // the client closed its end; the server learns it after what came before
)

// wireMsg is one message on its way to the server. It holds its request
// by value, as bytes on a wire are the sender's no longer: the client
// reuses a call's record once the call has ended, and a call may end (its
// connection given up) while its request is still on the old connection,
// which delivers it later all the same.
type wireMsg struct {
	kind wireKind
	// basic is set when every field but kind and the request's basic
	// ones (those pending.setBasic writes: Xid, Op, Path, Data, Mode,
	// Version, Watch, ACL) is zero, connect included. A request whose
	// own other fields are zero is then written into the slot by its
	// basic fields alone (sendRequest): copying the whole message, some
	// 400 bytes, for every call was a fortieth of BenchmarkSimThroughput.
	// A message pushed whole leaves it false, which is always safe.
	basic bool
	// size is the request's packetLen as the client measured it before it
	// sent it, which the server checks against jute.maxbuffer; 0 when not
	// measured. Measuring it again there was some 30 instructions a
	// request (BenchmarkSimThroughput). Nothing changes a request on its
	// way.
	size    int32
	connect ConnectRequest
	req     Request
}

// netConn is one TCP connection between a client and the server: two
// ordered queues. Messages on one connection stay in order; the scheduler
// interleaves different connections.
type netConn struct {
	id           ConnID
	client       *Client
	toServer     fifo[wireMsg]
	toClient     fifo[Output]
	clientClosed bool // the client has closed its end and reads nothing more
	// attach is set on a connection that attached the client's session
	// elsewhere (World.AttachSession): what comes on it goes there, not
	// to the client.
	attach *Attachment
}

// dial opens a connection for c if the server can be reached: it reports
// the connection, or nil and whether the attempt fails at once (refused)
// rather than after the connect timeout (no answer: a partition).
func (w *World) dial(c *Client) (conn *netConn, refused bool) {
	switch {
	case !w.serverUp || w.nowNs < c.dialBlockedUntilNs:
		return nil, true
	case c.partitioned():
		return nil, false
	}
	if w.ens != nil {
		return w.dialMember(c)
	}
	w.connSeq++
	conn = w.newConn(w.connSeq, c)
	w.conns = append(w.conns, conn)
	w.server.OpenFrom(conn.id, c.addr())
	return conn, false
}

// newConn returns a connection of c's with id, its queues' storage that
// of a connection forgotten before, by this world (pruneConns) or by one
// closed (Close), if there is one: a new connection's first message and
// first reply allocated storage for one (some 450 and 380 bytes), and
// grew it as more came, in every world an exploration makes, and a run's
// clients connect again after every fault that breaks their connection.
func (w *World) newConn(id ConnID, c *Client) *netConn {
	conn := &netConn{id: id, client: c}
	q := queueStores.take(&w.spareQueues).pop()
	conn.toServer.items, conn.toClient.items = q.toServer, q.toClient
	return conn
}

// spareQueues is the storage of a forgotten connection's two queues,
// emptied and zeroed.
type spareQueues struct {
	toServer []wireMsg
	toClient []Output
}

// queueStores holds the storage of forgotten connections' queues, 16
// connections' to a list: a world takes a list at its first connection
// and gives it back, with its connections' storage, when it closes.
var queueStores = sparePool[spareQueues]{max: 16}

// queueSlotsKeptMax bounds the slots of a queue's that queueStores
// keeps: a queue that grew past it in a burst is let go.
const queueSlotsKeptMax = 16

// keepQueues keeps the storage of the queues of conn, which the world
// forgets, for a new connection (newConn), when there is room: conn is
// left with none, so that a push onto it (after Close, say) could not
// write into another connection's. The storage is zeroed whole, past its
// length too: a released slot holds a delivered message (fifo), a queue
// of a world closed may hold undelivered ones, and a to-server slot
// marked basic must hold zeros beyond its basic fields (sendRequest).
func (w *World) keepQueues(conn *netConn) {
	toServer, toClient := conn.toServer.items[:cap(conn.toServer.items)], conn.toClient.items[:cap(conn.toClient.items)]
	conn.toServer, conn.toClient = fifo[wireMsg]{}, fifo[Output]{}
	sp := queueStores.take(&w.spareQueues)
	if len(toServer) > queueSlotsKeptMax {
		toServer = nil
	}
	if len(toClient) > queueSlotsKeptMax {
		toClient = nil
	}
	if sp.full() || len(toServer)+len(toClient) == 0 {
		return
	}
	clear(toServer)
	clear(toClient)
	sp.keep(spareQueues{toServer: toServer[:0], toClient: toClient[:0]})
}

// releaseQueues gives the storage of every connection's queues back to
// queueStores, as the world closes: nothing delivers or reads a message
// after, and a client call that pushes one (a Close, say) finds its
// connection without storage and allocates its own.
func (w *World) releaseQueues() {
	for _, conn := range w.conns {
		w.keepQueues(conn)
	}
	w.queued = 0
	queueStores.give(&w.spareQueues)
}

func (w *World) connByID(id ConnID) *netConn {
	// Connections are few and kept in creation order; a search keeps the
	// world free of maps that could leak their order. It is written out
	// rather than slices.BinarySearchFunc's, whose comparison through a
	// function value cost more than the search (it runs for every output).
	lo, hi := 0, len(w.conns)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if w.conns[mid].id < id {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(w.conns) && w.conns[lo].id == id {
		return w.conns[lo]
	}
	return nil
}

func (w *World) sendToServer(conn *netConn, m wireMsg) {
	conn.toServer.push(m)
	w.queued++
}

// sendRequest puts a copy of req on the connection: the message is written
// once, in the queue's own slot. basic says that req's fields but the
// basic ones are zero (its call's record is not wide): into a slot whose
// message was such a request too, only the basic fields are written, the
// others being zero already (TestSendRequestIsWholeWrite).
func (w *World) sendRequest(conn *netConn, req *Request, size int, basic bool) {
	m := conn.toServer.pushSlot()
	w.queued++
	m.size = int32(size)
	if basic && m.basic {
		m.kind = wireRequest
		r := &m.req
		r.Xid, r.Op, r.Path, r.Data, r.Mode, r.Version, r.Watch, r.ACL = req.Xid, req.Op, req.Path, req.Data, req.Mode, req.Version, req.Watch, req.ACL
		return
	}
	m.kind, m.basic, m.connect = wireRequest, basic, ConnectRequest{}
	m.req = *req
}

// isBasic reports whether every field of r but the basic ones is zero;
// TestIsBasicSeesEveryField holds it to the fields Request has.
func (r *Request) isBasic() bool {
	return r.TTLMs == 0 && r.Ops == nil && r.RelativeZxid == 0 &&
		r.DataWatches == nil && r.ExistWatches == nil && r.ChildWatches == nil &&
		!r.Malformed && r.AuthScheme == "" && r.AuthData == nil &&
		r.PersistentWatches == nil && r.PersistentRecursiveWatches == nil &&
		r.AddWatchMode == 0 && r.WatcherType == 0 &&
		r.JoiningServers == "" && r.LeavingServers == "" && r.NewMembers == "" &&
		r.CurConfigID == 0 && !r.NewMembersNull
}

// checkWireSlots asserts what sendRequest relies on: a message marked
// basic has its connect and its request's other fields zero. It looks at
// every slot of one connection's to-server queue, the released ones
// beyond its length included, as a push may reuse them; each call takes
// the next connection in turn (checking them all every 64 steps cost
// more than the marks save in BenchmarkExplore5x10).
func (w *World) checkWireSlots() {
	if len(w.conns) == 0 {
		return
	}
	conn := w.conns[(w.step/64)%uint64(len(w.conns))]
	slots := conn.toServer.items[:cap(conn.toServer.items)]
	for i := range slots {
		m := &slots[i] // not a copy: a message is some 400 bytes
		if m.basic && (m.connect.SessionID != 0 || m.connect.Passwd != nil || m.connect.TimeoutMs != 0 || m.connect.LastZxidSeen != 0 || !m.req.isBasic()) {
			panic(fmt.Sprintf("sim: invariant: conn%d's to-server slot %d is marked basic but holds %+v", conn.id, i, *m))
		}
	}
}

// closeClientEnd closes the client's end of a connection: it reads
// nothing more, and the server learns of the close after the messages
// already on their way, which it still receives and applies.
func (w *World) closeClientEnd(conn *netConn) {
	if conn.clientClosed {
		return
	}
	conn.clientClosed = true
	w.connsClosed = true
	w.queued -= conn.toClient.len()
	conn.toClient.clear()
	conn.toServer.push(wireMsg{kind: wireFin})
	w.queued++
}

// reset breaks a connection at once for both ends (an RST): what was on
// its way is lost, the server drops the connection and its watches now,
// and the client sees the connection fail.
func (w *World) reset(conn *netConn, why string) {
	w.clearConn(conn)
	w.disconnectServer(conn.id)
	conn.clientClosed = true
	w.connsClosed = true
	w.pruneConns()
	if conn.attach != nil {
		conn.attach.closed(why)
	}
	if c := conn.client; c.conn == conn {
		c.connectionLost(why)
	}
}

// clearConn drops what is on its way on conn, both ways.
func (w *World) clearConn(conn *netConn) {
	w.queued -= conn.toServer.len() + conn.toClient.len()
	conn.toServer.clear()
	conn.toClient.clear()
}

func (w *World) pruneConns() {
	if !w.connsClosed {
		return
	}
	w.connsClosed = false
	w.conns = slices.DeleteFunc(w.conns, func(c *netConn) bool {
		gone := c.clientClosed && c.toServer.len() == 0 && !w.serverHasConn(c.id)
		if !gone && c.clientClosed {
			w.connsClosed = true // look again once its last messages are through
		}
		if gone {
			w.keepQueues(c)
		}
		return gone
	})
}

// drainServer routes what the server sent onto its connections; output
// for a connection the client has closed is lost.
func (w *World) drainServer() { w.drainServerFor(nil) }

// drainServerFor is drainServer after a message on conn (nil: none),
// the connection its outputs are most likely for: a request's reply.
func (w *World) drainServerFor(conn *netConn) {
	outputs, from := w.serverOutputs()
	if from != nil && w.moveOutputs(from, outputs, conn) {
		return
	}
	for i := range outputs {
		o := &outputs[i] // not a copy: an Output is some 370 bytes
		conn := w.connByID(o.Conn)
		if conn == nil || conn.clientClosed {
			w.emit(Event{Kind: "lost", Detail: fmt.Sprintf("server->conn%d %s", o.Conn, describeOutput(*o))})
			continue
		}
		conn.toClient.push(*o)
		w.queued++
	}
}

// moveOutputs queues outputs, all from server from, without a copy when
// they are all for one open connection whose to-client queue is empty,
// which a request's reply is but for watch events: the queue takes the
// server's storage, and the server the queue's (BenchmarkSimThroughput
// spent 2% of its time copying replies into the queue). On an ensemble,
// the member that answered is the one server with outputs. It reports
// whether it did. hint, if not nil, is the connection they are likely
// for, taken without a search when it is theirs: a connection is taken
// out of w.conns only once its client has closed it, which moveOutputs
// looks at, so it acts on hint as on the search's answer.
func (w *World) moveOutputs(from *Server, outputs []Output, hint *netConn) bool {
	if len(outputs) == 0 {
		return true
	}
	id := outputs[0].Conn
	for i := 1; i < len(outputs); i++ {
		if outputs[i].Conn != id {
			return false
		}
	}
	conn := hint
	if conn == nil || conn.id != id {
		conn = w.connByID(id)
	}
	if conn == nil || conn.clientClosed || conn.toClient.len() > 0 {
		return false
	}
	q := &conn.toClient
	from.KeepOutputs(q.items)
	q.items, q.head = outputs, 0
	w.queued += len(outputs)
	return true
}

// enumerate lists the enabled steps in a fixed order: tasks by creation,
// the server's own work, connections by creation (to-server before
// to-client), due timers by time and creation.
func (w *World) enumerate() []Step {
	if w.step%64 == 0 {
		w.checkUnwoken()
	}
	// The list is built where it is kept: a local slice stored back at
	// the end cost a write barrier's check and three stores a step.
	w.enabled = w.enabled[:0]
	e := &w.enabled
	// A task not woken is not ready since last asked (task.await): most
	// tasks. They are counted (World.woken), so that a step with none
	// woken, half of those of BenchmarkExplore5x10, looks at no task, and
	// the others stop at the last woken.
	if left := w.woken; left > 0 {
		for _, t := range w.tasks {
			if !t.wake {
				continue
			}
			if !t.done && t.ready != nil && (t.killed || t.client == nil || !(t.client.paused() || t.client.crashed)) {
				if t.ready.ready() {
					st := addStep(e)
					st.Kind, st.Client, st.Task, st.task = StepRunTask, t.client.number(), t.name, t
				} else if !t.pollAlways {
					t.unwake()
				}
			}
			if left--; left == 0 {
				break
			}
		}
	}
	if w.ens != nil {
		w.ens.appendSteps(e)
	} else if w.serverUp && w.server.HasInternal() {
		*e = append(*e, Step{Kind: StepServerInternal})
	}
	// Most connections have nothing on their way: the messages on their
	// queues are counted (World.queued), so that a step with none, a
	// third of those of BenchmarkSimThroughput and more of an
	// exploration's, looks at no connection.
	if w.queued > 0 {
		for _, conn := range w.conns {
			// Their queues are looked at before their client.
			toServer, toClient := conn.toServer.nonEmpty(), conn.toClient.nonEmpty()
			if !toServer && !toClient {
				continue
			}
			c := conn.client
			if c.partitioned() {
				continue
			}
			if toServer && w.serverUp {
				st := addStep(e)
				st.Kind, st.Client, st.Conn, st.conn = StepToServer, c.number(), conn.id, conn
			}
			if toClient && !c.paused() {
				st := addStep(e)
				st.Kind, st.Client, st.Conn, st.conn = StepToClient, c.number(), conn.id, conn
			}
		}
	}
	if len(w.timers) > 0 && w.timers[0].atNs <= w.nowNs { // dueTimers' common case, inline: none due
		w.dueBuf = w.dueTimers(w.dueBuf[:0])
		for _, t := range w.dueBuf {
			*e = append(*e, Step{Kind: StepTimer, Client: t.owner.number(), timer: t})
		}
	}
	return *e
}

// checkUnwoken asserts that no blocked task that nothing has woken is
// ready: enumerate does not ask them (task.await), and checks the claim
// every 64 steps, and that World.woken counts the tasks woken. It checks
// then too the marks of the to-server queues' slots (checkWireSlots),
// that every connection's queues that are empty are rewound
// (fifo.nonEmpty), the step limit (World.stepLimit), that Run's
// waiter is ready only if World.askMain says to ask it, and the
// ensemble's marks of what it could do next (Ensemble.checkStepMasks),
// as enumerate lists its steps from them.
func (w *World) checkUnwoken() {
	woken := 0
	for _, t := range w.tasks {
		if !t.wake && !t.done && t.ready != nil && t.ready.ready() {
			panic(fmt.Sprintf("sim: invariant: task %q is ready at step %d, but nothing woke it", t.name, w.step))
		}
		if t.wake {
			woken++
		}
	}
	if woken != w.woken {
		panic(fmt.Sprintf("sim: invariant: %d tasks woken at step %d, but World.woken counts %d", woken, w.step, w.woken))
	}
	w.checkWireSlots()
	queued := 0
	for _, conn := range w.conns {
		if conn.toServer.nonEmpty() != (conn.toServer.len() > 0) || conn.toClient.nonEmpty() != (conn.toClient.len() > 0) {
			panic(fmt.Sprintf("sim: invariant: conn%d has a queue emptied but not rewound", conn.id))
		}
		queued += conn.toServer.len() + conn.toClient.len()
	}
	if queued != w.queued {
		panic(fmt.Sprintf("sim: invariant: %d messages on the connections at step %d, but World.queued counts %d", queued, w.step, w.queued))
	}
	if w.stepLimit != w.stepLimitNow() {
		panic(fmt.Sprintf("sim: invariant: step limit %d at %v, want %d", w.stepLimit, w.Now(), w.stepLimitNow()))
	}
	if !w.askMain && w.main.ready == &w.run && w.run.ready() {
		panic(fmt.Sprintf("sim: invariant: the Run caller may go on at step %d, but the scheduler would not ask", w.step))
	}
	if w.ens != nil {
		if err := w.ens.checkStepMasks(); err != nil {
			panic(fmt.Sprintf("%v, at step %d", err, w.step))
		}
	}
}

// addStep appends a zero step to e and returns it, to be filled in place: a
// step built aside and copied in was most of enumerate's time (the copy
// reads it back in wider words than it was written in, which the CPU
// cannot forward from its store buffer).
//
// A list with room is lengthened in place (*e = (*e)[:n+1] writes only
// the length back, where append writes the pointer and capacity too,
// through a write barrier's check): the list is reused from step to
// step, so it nearly always has room.
func addStep(e *[]Step) *Step {
	n := len(*e)
	if n < cap(*e) { // (not n == cap: this way the compiler sees n+1 <= cap)
		*e = (*e)[:n+1]
		st := &(*e)[:n+1][n]
		*st = Step{}
		return st
	}
	*e = append(*e, Step{})
	return &(*e)[n]
}

// take performs one step other than running a task. It reads st before
// it acts: the step lies in the enabled list, which the next listing
// overwrites.
func (w *World) take(st *Step) {
	switch st.Kind {
	case StepToServer:
		w.deliverToServer(st.conn)
	case StepToClient:
		w.deliverToClient(st.conn)
	case StepTimer:
		w.timers.remove(st.timer.index)
		st.timer.run()
	case StepApply, StepPeer:
		w.takeEnsembleStep(st)
	case StepServerInternal:
		if w.ens != nil {
			w.takeEnsembleStep(st)
			break
		}
		id := w.server.StepInternal(w.nowMs())
		w.emit(Event{Kind: "server", Session: id, Detail: "closeSession applied: session expired", Zxid: w.server.LastZxid()})
		w.drainServer()
	}
	if w.connsClosed { // pruneConns' common case, inline: nothing to prune
		w.pruneConns()
	}
}

func (w *World) deliverToServer(conn *netConn) {
	// The message is handled where it lies in the queue, and dropped
	// after: delivering to the server pushes only onto the connections'
	// to-client queues, never onto a to-server one, and a connection is
	// reset (its queues cleared) only after the message is dropped.
	m := conn.toServer.front()
	c := conn.client
	// A standalone server's connection is looked up once: whether it is
	// open, and its session, which receiveOn takes (nothing in between
	// touches the server's connections: a TraceSink changes nothing).
	var sessID int64
	var open bool
	if w.ens == nil {
		sessID, open = w.server.connOf(conn.id)
	} else {
		open = w.ens.HasConn(conn.id)
	}
	if !open {
		if m.kind != wireFin {
			e := Event{Kind: "lost", Client: c.number(), Detail: fmt.Sprintf("conn%d closed by the server", conn.id)}
			if m.kind == wireRequest {
				e.Op, e.Xid = m.req.Op.String(), m.req.Xid
			}
			w.emit(e)
		}
		conn.toServer.drop()
		w.queued--
		return
	}
	switch m.kind {
	case wireConnect:
		if w.ens != nil {
			w.ens.Connect(w.nowMs(), conn.id, m.connect)
			break
		}
		w.server.Connect(w.nowMs(), conn.id, m.connect)
	case wireRequest:
		if m.req.Xid >= 0 && c.dropRequests > 0 {
			c.dropRequests--
			w.emit(Event{Kind: "fault", Client: c.number(), Op: m.req.Op.String(), Xid: m.req.Xid, Path: m.req.Path, Detail: "request dropped before the server saw it; connection broken"})
			conn.toServer.drop()
			w.queued--
			w.reset(conn, "request dropped")
			return
		}
		if w.trace.on() {
			e := Event{Kind: "apply", Client: c.number(), Session: c.sessionID, Op: m.req.Op.String(), Xid: m.req.Xid, Path: m.req.Path}
			if w.ens != nil {
				e.Detail = memberName(w.ens.ServerOf(conn.id))
			}
			w.emit(e)
		}
		if w.ens != nil {
			w.ens.receive(w.nowMs(), conn.id, &m.req)
			break
		}
		w.server.receiveOn(w.nowMs(), conn.id, sessID, &m.req, int(m.size))
	case wireFin:
		w.disconnectServer(conn.id)
		w.emit(Event{Kind: "server", Client: c.number(), Detail: fmt.Sprintf("conn%d closed by the client", conn.id)})
	}
	conn.toServer.drop()
	w.queued--
	w.drainServerFor(conn)
}

func (w *World) deliverToClient(conn *netConn) {
	o := conn.toClient.front()
	c := conn.client
	if conn.attach != nil {
		// Dropped first: receiving a close closes the client's end,
		// which clears the queue.
		out := *o
		conn.toClient.drop()
		w.queued--
		conn.attach.receive(&out)
		return
	}
	if o.Kind == OutReply && o.Reply.Xid >= 0 && c.dropReplies > 0 {
		c.dropReplies--
		w.emit(Event{Kind: "fault", Client: c.number(), Xid: o.Reply.Xid, Zxid: o.Reply.Zxid, Detail: "reply dropped after the server applied the request; connection broken"})
		conn.toClient.drop()
		w.queued--
		w.reset(conn, "reply dropped")
		return
	}
	if o.Kind == OutReply {
		// A reply is read where it lies in the queue: the client copies
		// it once, into its call's record, and the queue drops it before
		// the client acts on it (which may close the connection and
		// clear the queue).
		p := c.takeReply(conn, &o.Reply)
		conn.toClient.drop()
		w.queued--
		if p != nil {
			c.completeReply(p)
		}
		return
	}
	m := *o
	conn.toClient.drop()
	w.queued--
	c.receive(conn, &m)
}

func describeOutput(o Output) string {
	switch o.Kind {
	case OutConnect:
		return fmt.Sprintf("connect session=%#x timeout=%dms", o.Connect.SessionID, o.Connect.TimeoutMs)
	case OutReply:
		return fmt.Sprintf("reply xid=%d zxid=%#x err=%v", o.Reply.Xid, o.Reply.Zxid, o.Reply.Err)
	case OutEvent:
		return fmt.Sprintf("event %v %s", o.Event.Type, o.Event.Path)
	case OutClose:
		return "close"
	}
	return "?"
}
