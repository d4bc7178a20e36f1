package recipes

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// The limits of the common core. Each bounds a loop that would otherwise
// only be bounded by the caller's context.
const (
	// connectionRetriesMax bounds the connection losses one step of a
	// recipe (a create, a listing, a delete) survives before it gives up.
	connectionRetriesMax = 64
	// sessionChangesMax bounds the session changes awaitSession sits
	// through while it waits for a live session.
	sessionChangesMax = 256
	// sessionRestartsMax bounds how often one acquire starts over after
	// the session its node belonged to expired.
	sessionRestartsMax = 8
	// waitRoundsMax bounds the list-and-wait rounds of one acquire: each
	// round follows a notification or a vanished node, so a lock queue of
	// a million waiters would still fit.
	waitRoundsMax = 1 << 20
	// cleanupTimeoutMin is the least time a cleanup (deleting the node of
	// an acquire that failed, timed out or was cancelled) is given, on the
	// backend's clock; it gets at least twice the session timeout, by
	// which time the node is deleted or its session is known gone.
	cleanupTimeoutMin = 10 * time.Second
)

// Errors of the recipes. Compare them with errors.Is.
var (
	// ErrNotAcquired: TryAcquire found the lock taken; nothing was left
	// behind.
	ErrNotAcquired = errors.New("recipes: not acquired: the lock is taken")
	// ErrLeaseLost: the session that held the lease expired before the
	// lease was released, so another client may have held the lock at the
	// same time. Release returns it, once the lock node is known gone.
	ErrLeaseLost = errors.New("recipes: lease lost: its session expired while it was held")
	// ErrUpgrade: a handle that holds a read lease asked for the write
	// lease, which would wait on itself forever.
	ErrUpgrade = errors.New("recipes: a read lease cannot be upgraded to a write lease")
	// ErrGaveUp: a step of a recipe hit one of its named limits.
	ErrGaveUp = errors.New("recipes: gave up after too many retries")
	// errSessionGone: the session a lock node belonged to is gone, and the
	// node with it; the acquire starts over in the new session.
	errSessionGone = errors.New("recipes: the session of the lock node is gone")
)

// openACL is the ACL of every node a recipe creates.
var openACL = zk.WorldACL(zk.PermAll)

// isConnectionLoss reports an error after which a request may or may not
// have been applied (zk.ErrConnectionClosed) or was never sent
// (zk.ErrNoServer). Both are settled the same way: wait for the
// connection, then look.
func isConnectionLoss(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer)
}

// isSessionLoss reports an error that says the session is gone.
func isSessionLoss(err error) bool {
	return errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved)
}

// awaitSession returns the client's session once it is connected, waiting
// through disconnects and session changes, until ctx is done.
func awaitSession(ctx context.Context, c Conn) (Session, error) {
	for range sessionChangesMax {
		s := c.Session()
		if s.Connected() {
			return s, nil
		}
		if err := ctx.Err(); err != nil {
			return s, err
		}
		if _, err := c.WaitSession(ctx, s); err != nil {
			return s, err
		}
	}
	return c.Session(), fmt.Errorf("awaiting a session: %w", ErrGaveUp)
}

// cleanupContext derives the context a cleanup runs with: it survives the
// cancellation of ctx (the acquire being cancelled is why the cleanup
// runs) and is bounded on the backend's clock.
func cleanupContext(ctx context.Context, c Conn) (context.Context, context.CancelFunc) {
	d := cleanupTimeoutMin
	if t := 2 * time.Duration(c.Session().TimeoutMs) * time.Millisecond; t > d {
		d = t
	}
	return c.WithTimeout(context.WithoutCancel(ctx), d)
}

// ensureDir creates dir and its missing ancestors as container nodes (the
// server deletes a container once its last child is gone, so an unused
// lock leaves no garbage behind; Curator's creatingParentContainersIfNeeded).
func ensureDir(ctx context.Context, c Conn, dir string) error {
	if dir == "/" || dir == "" {
		return nil
	}
	for range connectionRetriesMax {
		_, err := c.CreateContainer(ctx, dir, nil, zk.FlagContainer, openACL)
		switch {
		case err == nil, errors.Is(err, zk.ErrNodeExists):
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if err := ensureDir(ctx, c, path.Dir(dir)); err != nil {
				return err
			}
		case isConnectionLoss(err):
			if _, err := awaitSession(ctx, c); err != nil {
				return err
			}
		case isSessionLoss(err):
			// The next attempt runs in the new session.
		default:
			return fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	return fmt.Errorf("creating %s: %w", dir, ErrGaveUp)
}

// --- lock node names ---

// sequenceDigits is the width of the counter ZooKeeper appends to a
// sequential node's name.
const sequenceDigits = 10

// protectedPrefix marks a protected name, as Curator's and go-zookeeper's
// "_c_" does.
const protectedPrefix = "_c_"

// protectedPath is the path a protected create in dir asks for: the name
// is the GUID of the attempt and the session it is made in, then the
// kind; ZooKeeper appends the sequence. The GUID finds the node again
// after a create whose reply was lost; the session keeps a node of a dead
// session from being adopted by the next one (CURATOR-498).
func protectedPath(dir, guid string, session int64, kind string) string {
	var buf [protectedPathBuf]byte
	b := append(buf[:0], dir...)
	b = append(b, '/')
	return string(appendProtected(b, guid, session, kind))
}

// protectedPathBuf is the room on the stack a protected path is built in
// (a lock's directory and a name of 60 bytes fit); a longer one is built
// on the heap.
const protectedPathBuf = 160

// protectedTag is what every node of one create attempt starts with.
func protectedTag(guid string, session int64) string {
	var buf [protectedPathBuf]byte
	return string(appendProtected(buf[:0], guid, session, ""))
}

// appendProtected appends protectedPrefix, guid, "-", the session as 16
// hex digits, "-" and kind to b, so that a path is built in one
// allocation, its string's (fmt's "%016x" makes several, and a name
// joined to its directory one more, once per lock node; a
// strings.Builder checked itself at each of the digits).
func appendProtected(b []byte, guid string, session int64, kind string) []byte {
	b = append(b, protectedPrefix...)
	b = append(b, guid...)
	b = append(b, '-')
	var word [8]byte
	binary.BigEndian.PutUint64(word[:], uint64(session))
	b = hex.AppendEncode(b, word[:]) // lowercase, two digits a byte: %016x
	b = append(b, '-')
	return append(b, kind...)
}

// A child is one lock node of a directory, parsed from its name. Its
// kind is read from the name when asked (only rw-lock asks): a field for
// it was two fifths of what sortChildren moved, for every listing.
type child struct {
	name string
	seq  int64
}

// kind is the kind of the lock node: "lock-", "read-", "write-",
// "lease-".
func (c child) kind() string {
	kind := c.name[:len(c.name)-sequenceDigits]
	if strings.HasPrefix(kind, protectedPrefix) {
		// _c_<32 hex>-<16 hex>-kind
		header := len(protectedPrefix) + 32 + 1 + 16 + 1
		if len(kind) >= header {
			kind = kind[header:]
		}
	}
	return kind
}

// parseChild parses a sequential node's name; names without a sequence
// (not made by a recipe) are not lock nodes.
func parseChild(name string) (child, bool) {
	if len(name) < sequenceDigits {
		return child{}, false
	}
	seq, ok := parseSequence(name[len(name)-sequenceDigits:])
	if !ok || seq < 0 {
		return child{}, false
	}
	return child{name: name, seq: seq}, true
}

// parseSequence is strconv.ParseInt(digits, 10, 64) for the
// sequenceDigits characters of a name's suffix: an optional sign, then
// decimal digits only. ZooKeeper writes a counter past 2^31 with its sign
// ("-000000001"), which ParseInt reads as negative. Every listing parses
// every child, and ParseInt's general path was 1.6% of an exploration.
func parseSequence(digits string) (int64, bool) {
	if len(digits) == sequenceDigits {
		if n, ok := tenDigits(digits); ok {
			return n, true
		}
	}
	i, neg := 0, false
	if len(digits) > 0 && (digits[0] == '+' || digits[0] == '-') {
		i, neg = 1, digits[0] == '-'
	}
	if i == len(digits) || len(digits) > 18 { // 18 digits cannot overflow
		n, err := strconv.ParseInt(digits, 10, 64)
		return n, err == nil
	}
	var n int64
	for ; i < len(digits); i++ {
		d := digits[i] - '0'
		if d > 9 {
			return 0, false
		}
		n = n*10 + int64(d)
	}
	if neg {
		n = -n
	}
	return n, true
}

// tenDigits reads a sequence of ten decimal digits, the first eight at
// once as the bytes of one word (it reports false for anything else, a
// sign too): a digit at a time was most of a listing's parse.
func tenDigits(s string) (int64, bool) {
	_ = s[9]
	v := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	const high, threes, sixes = 0xf0f0f0f0f0f0f0f0, 0x3030303030303030, 0x0606060606060606
	// Every byte is 0x30 to 0x39: its high half is 3, and adding 6 to its
	// low half carries into the high half past 9 (never into the next byte).
	if v&high != threes || (v+sixes)&high != threes {
		return 0, false
	}
	d8, d9 := s[8]-'0', s[9]-'0'
	if d8 > 9 || d9 > 9 {
		return 0, false
	}
	// The first digit is the lowest byte: join neighbouring digits, then
	// pairs, then fours.
	v -= threes
	v = (v*10 + v>>8) & 0x00ff00ff00ff00ff
	v = (v*100 + v>>16) & 0x0000ffff0000ffff
	v = (v*10000 + v>>32) & 0xffffffff
	return int64(v)*100 + int64(d8)*10 + int64(d9), true
}

// sortChildren parses names into kids, reusing its array, and sorts the
// lock nodes by sequence: the order of creation. Sorting the names
// themselves, as seed 002's code does, is wrong once names carry a GUID.
func sortChildren(kids []child, names []string) []child {
	kids = kids[:0]
	if cap(kids) < len(names) {
		kids = make([]child, 0, len(names))
	}
	for _, n := range names {
		// A recipe's sequence is ten digits: read them here, without
		// parseChild's and parseSequence's calls around tenDigits (a
		// third of the parse); parseChild reads anything else.
		if len(n) >= sequenceDigits {
			if seq, ok := tenDigits(n[len(n)-sequenceDigits:]); ok {
				kids = append(kids, child{name: n, seq: seq})
				continue
			}
		}
		if c, ok := parseChild(n); ok {
			kids = append(kids, c)
		}
	}
	if len(kids) > insertionSortMax {
		slices.SortFunc(kids, compareChildren)
		return kids
	}
	// A listing is a handful of children: an insertion sort, without
	// SortFunc's call of the comparison for each pair (1% of an
	// exploration). The order is total, so any sort gives the same.
	for i := 1; i < len(kids); i++ {
		k, j := kids[i], i
		for ; j > 0 && childBefore(k, kids[j-1]); j-- {
			kids[j] = kids[j-1]
		}
		kids[j] = k
	}
	return kids
}

// childBefore is compareChildren(a, b) < 0, small enough to inline.
func childBefore(a, b child) bool {
	return a.seq < b.seq || a.seq == b.seq && a.name < b.name
}

// insertionSortMax is the most children sortChildren sorts by insertion.
const insertionSortMax = 12

// compareChildren orders lock nodes by sequence, then name.
func compareChildren(a, b child) int {
	if a.seq != b.seq {
		if a.seq < b.seq {
			return -1
		}
		return 1
	}
	return strings.Compare(a.name, b.name)
}

func indexOf(kids []child, name string) int {
	return slices.IndexFunc(kids, func(k child) bool { return k.name == name })
}

// --- lock nodes: create, find again, remove until known ---

// A lockNode is a node a recipe created: its path, the session it was
// created in, and its czxid, the fencing token.
type lockNode struct {
	path      string
	session   int64
	czxid     int64
	ephemeral bool
}

func (n lockNode) name() string { return path.Base(n.path) }

// nameIn is name for a node that is a child of dir, as a queue's nodes
// are: what follows dir and its slash, found without path.Base's walk
// back over a lock node's fifty-byte name (a list-and-wait round asks
// for it each time, and the walk was most of a round's own time).
func (n lockNode) nameIn(dir string) string {
	if len(n.path) > len(dir) && n.path[len(dir)] == '/' && n.path[:len(dir)] == dir {
		if name := n.path[len(dir)+1:]; name != "" && strings.IndexByte(name, '/') < 0 {
			return name
		}
	}
	return n.name()
}

// A nodeMaker creates the sequential lock nodes of one directory.
type nodeMaker struct {
	conn Conn
	dir  string
	// flags are the create flags: FlagEphemeralSequential, or
	// FlagSequence for persistent-lock.
	flags int32
	// protected names the nodes with the GUID and session, so that a
	// create whose reply was lost is found again; unprotected-lock has it
	// off.
	protected bool
	// syncReads calls Sync on the directory before each listing a
	// decision rests on (sync-resume-lock): on an ensemble the connected
	// server may lag behind the leader, and sync makes it catch up first.
	syncReads bool
	// session, when not zero, is the only session create may create in:
	// once the client has another, create gives up with errSessionGone.
	// The semaphore pins its lease node to the session of its gate node,
	// so that a lease node is only ever added in the gate.
	session int64
	// renew, when set, gives the client a new session during a campaign
	// once it has been disconnected for a connection timeout (Curator's
	// reset of its handle; leader-latch). A node made in an earlier
	// session is then not the candidate's own, whatever the listing
	// says: a grant is checked against the node's owner. A request on the
	// handle it replaced fails with zk.ErrClosing (renewedUnder).
	renew *sessionRenewal
}

// renewedUnder reports whether err is the failure of a request made on a
// handle that the campaign's listener has replaced since it read
// renewals (sessionRenewal.count): the request went, if at all, to the
// session the listener gave up, and the client goes on in a new one. On
// a real server this is a request go-zookeeper queued while the
// connection was down and failed when the old handle closed (v1.0.4's
// conn.go, connect: a reconnect loop told to quit fails the requests it
// has not sent with ErrClosing).
func (m *nodeMaker) renewedUnder(err error, renewals uint64) bool {
	return errors.Is(err, zk.ErrClosing) && m.renew.replacedSince(renewals)
}

func (m *nodeMaker) ephemeral() bool { return m.flags&zk.FlagEphemeral != 0 }

// create makes one lock node of the kind and returns it with its token.
// After a connection loss it settles the create: a protected name is
// looked for among the children, in the same session only; an
// unprotected create is simply made again (the unprotected-lock flaw).
// On failure it leaves nothing behind that it can find.
func (m *nodeMaker) create(ctx context.Context, kind string) (lockNode, error) {
	guid := m.conn.GUID()
	ambiguous := int64(0) // the session of a create whose outcome is unknown
	for range connectionRetriesMax {
		renewals := m.renew.count()
		s, err := awaitSession(ctx, m.conn)
		if err != nil {
			m.settleAbandoned(ctx, guid, ambiguous)
			return lockNode{}, err
		}
		if m.session != 0 && s.ID != m.session {
			// The pinned session is gone, and an ambiguous create of it
			// with it.
			return lockNode{}, errSessionGone
		}
		if ambiguous != 0 {
			if ambiguous == s.ID {
				node, found, err := m.find(ctx, guid, s.ID)
				switch {
				case isConnectionLoss(err) || isSessionLoss(err) || m.renewedUnder(err, renewals):
					continue
				case err != nil:
					m.settleAbandoned(ctx, guid, ambiguous)
					return lockNode{}, err
				case found:
					return m.stamp(ctx, node)
				}
				// Not created. The lookup waited on the server, and the
				// session may have changed meanwhile: look at it again,
				// so that the next create's name carries the session it
				// runs in (a create named for the expired session but
				// made in the new one was taken for a node of the old
				// one, orphaned, and waited behind: found exploring
				// stale-resume-lock on 3 servers, seed 3).
				ambiguous = 0
				continue
			}
			// Created in a session that is gone, and gone with it.
			ambiguous = 0
		}
		var p string
		if m.protected {
			p = protectedPath(m.dir, guid, s.ID, kind)
		} else {
			p = m.dir + "/" + kind
		}
		created, err := m.conn.Create(ctx, p, nil, m.flags, openACL)
		switch {
		case err == nil:
			return m.stamp(ctx, lockNode{path: created, session: s.ID, ephemeral: m.ephemeral()})
		case errors.Is(err, zk.ErrNoNode):
			if err := ensureDir(ctx, m.conn, m.dir); err != nil && !m.renewedUnder(err, renewals) {
				return lockNode{}, err
			}
		case isConnectionLoss(err), m.renewedUnder(err, renewals):
			// A create on a handle the listener replaced is as
			// ambiguous as one whose reply was lost, in the session
			// given up: the next attempt, in another session, forgets
			// it (an ephemeral node of that session dies with it).
			if m.protected {
				ambiguous = s.ID
			}
			// Unprotected: a node the lost reply would have named may
			// exist, and nothing can find it again.
		case isSessionLoss(err):
			// Nothing of the old session survives; create again.
		default:
			return lockNode{}, fmt.Errorf("creating a lock node in %s: %w", m.dir, err)
		}
	}
	m.settleAbandoned(ctx, guid, ambiguous)
	return lockNode{}, fmt.Errorf("creating a lock node in %s: %w", m.dir, ErrGaveUp)
}

// settleAbandoned deletes the node of an ambiguous create the caller gives
// up on, if it exists.
func (m *nodeMaker) settleAbandoned(ctx context.Context, guid string, session int64) {
	if session == 0 || !m.protected {
		return
	}
	cctx, cancel := cleanupContext(ctx, m.conn)
	defer cancel()
	for range connectionRetriesMax {
		s, err := awaitSession(cctx, m.conn)
		if err != nil || s.ID != session {
			return
		}
		node, found, err := m.find(cctx, guid, session)
		switch {
		case isConnectionLoss(err) || isSessionLoss(err):
			continue
		case err != nil || !found:
			return
		}
		node.ephemeral = m.ephemeral()
		m.remove(cctx, node)
		return
	}
}

// find looks for the node of a protected create among the children,
// after a sync on the directory whatever syncReads says. The create's
// reply was lost, so the client never saw its zxid, and a server it
// reconnected to need not have applied it (Programmer's Guide,
// "Consistency Guarantees": a client sees its own writes only as far as
// it knows of them; "if it needs to see the latest state, use sync").
// Without the sync, a follower that lags behind the leader lists the
// directory without the node, the create is made again, and the client
// waits behind its own orphan for the session's life (fair-lock on 3
// servers, scenarios/testdata/lost-reply-lagging-follower.scenario).
func (m *nodeMaker) find(ctx context.Context, guid string, session int64) (lockNode, bool, error) {
	if err := syncDir(ctx, m.conn, m.dir); err != nil {
		return lockNode{}, false, err
	}
	names, _, err := m.conn.Children(ctx, m.dir)
	if errors.Is(err, zk.ErrNoNode) {
		return lockNode{}, false, nil
	}
	if err != nil {
		return lockNode{}, false, err
	}
	tag := protectedTag(guid, session)
	for _, n := range names {
		if strings.HasPrefix(n, tag) {
			return lockNode{path: m.dir + "/" + n, session: session, ephemeral: m.ephemeral()}, true, nil
		}
	}
	return lockNode{}, false, nil
}

// stamp reads the node's czxid, its fencing token. If the node is gone
// already, its session is: errSessionGone.
func (m *nodeMaker) stamp(ctx context.Context, node lockNode) (lockNode, error) {
	for range connectionRetriesMax {
		renewals := m.renew.count()
		ok, stat, err := m.conn.Exists(ctx, node.path)
		switch {
		case err == nil && ok:
			node.czxid = stat.Czxid
			return node, nil
		case err == nil:
			return node, errSessionGone
		case isConnectionLoss(err):
			s, err := awaitSession(ctx, m.conn)
			if err != nil {
				m.abandon(ctx, node)
				return node, err
			}
			if node.ephemeral && sessionGone(s, node.session) {
				return node, errSessionGone
			}
		case isSessionLoss(err):
			if node.ephemeral {
				return node, errSessionGone
			}
		case m.renewedUnder(err, renewals):
			// The listener gave the node's session up: an ephemeral
			// node is not the candidate's own any more (await's check
			// of its owner), and lives only until that session expires.
			if node.ephemeral {
				return node, errSessionGone
			}
		default:
			m.abandon(ctx, node)
			return node, err
		}
	}
	m.abandon(ctx, node)
	return node, fmt.Errorf("reading %s: %w", node.path, ErrGaveUp)
}

// abandon removes the node of an acquire that failed, with a cleanup
// context.
func (m *nodeMaker) abandon(ctx context.Context, node lockNode) error {
	cctx, cancel := cleanupContext(ctx, m.conn)
	defer cancel()
	return m.remove(cctx, node)
}

// remove deletes node until it is known gone: deleted, or found missing,
// or its session known gone (an ephemeral dies with its session). It never
// gives up while the node may still exist, except when ctx is done or a
// limit is hit, and then it says so: the caller keeps the node to try
// again (CURATOR-486). It returns ErrLeaseLost when the node went with its
// session.
func (m *nodeMaker) remove(ctx context.Context, node lockNode) error {
	return removeNode(ctx, m.conn, node)
}

func removeNode(ctx context.Context, c Conn, node lockNode) error {
	for range connectionRetriesMax {
		s := c.Session()
		if node.ephemeral && sessionGone(s, node.session) {
			return ErrLeaseLost
		}
		if !s.Connected() {
			if _, err := c.WaitSession(ctx, s); err != nil {
				return err
			}
			continue
		}
		if node.ephemeral && s.ID != node.session {
			return ErrLeaseLost
		}
		err := c.Delete(ctx, node.path, -1)
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return nil
		case isConnectionLoss(err), isSessionLoss(err):
			// Loop: a delete whose reply was lost is settled by the next
			// one (it finds the node missing).
		case errors.Is(err, zk.ErrClosing) && node.ephemeral:
			// The client is closed, and its session ends with it.
			return ErrLeaseLost
		default:
			return fmt.Errorf("deleting %s: %w", node.path, err)
		}
	}
	return fmt.Errorf("deleting %s: %w", node.path, ErrGaveUp)
}

// sessionGone reports whether the client knows that the session id is
// gone: it was told of the expiry, or it has another session now.
func sessionGone(s Session, id int64) bool {
	return s.State == zk.StateExpired || (s.ID != 0 && s.ID != id)
}

// --- waiting ---

// waitStyle is how a waiter waits for its turn.
type waitStyle int

const (
	// waitPredecessor: getData with a watch on the one node in the way; a
	// node already gone sets no watch (Curator's choice), so nothing
	// leaks and nothing is missed.
	waitPredecessor waitStyle = iota + 1
	// waitChildren: getChildren with a watch on the directory: every
	// change wakes every waiter, the herd.
	waitChildren
	// waitLostWakeup: exists with a watch on the node in the way, waiting
	// on the watch even when the node is already gone: the flaw of
	// lost-wakeup-lock.
	waitLostWakeup
)

// A predicate decides from the sorted children and the index of the
// caller's node whether the caller holds the lock; if not, it names the
// node in the way (the one to watch).
type predicate func(kids []child, me int) (blocker string, granted bool)

// mutexPredicate grants the lowest node; the node in the way is the
// immediate predecessor (ZooKeeper's lock recipe).
func mutexPredicate(kids []child, me int) (string, bool) {
	if me == 0 {
		return "", true
	}
	return kids[me-1].name, false
}

// queue is a directory of sequential lock nodes and how its waiters wait:
// the core of every sequential recipe.
type queue struct {
	nodeMaker
	style waitStyle
	// trustOldNode is old-session-latch's flaw: after a new session it
	// keeps its node of the old session and leads on it, without
	// comparing the node's owner (its ephemeralOwner) with its current
	// session.
	trustOldNode bool
	// kids is the last round's listing, whose array the next round
	// reuses: a round reads its listing only while it runs.
	kids []child
	// waitOn holds the watch a round waits on, during Wait.
	waitOn [1]<-chan zk.Event
}

// acquire creates a node of the kind and waits until pred grants it. With
// block false it gives up instead of waiting (TryAcquire). On any failure,
// timeout or cancellation it removes its node; if the session of its node
// expires, it starts over in the new session.
func (q *queue) acquire(ctx context.Context, kind string, pred predicate, block bool) (lockNode, error) {
	for range sessionRestartsMax {
		node, err := q.acquireOnce(ctx, kind, pred, block)
		if errors.Is(err, errSessionGone) {
			continue
		}
		return node, err
	}
	return lockNode{}, fmt.Errorf("acquiring %s: the session expired %d times: %w", q.dir, sessionRestartsMax, ErrGaveUp)
}

// acquireOnce is one attempt of acquire: errSessionGone when the session
// of its node went away, and the node with it.
func (q *queue) acquireOnce(ctx context.Context, kind string, pred predicate, block bool) (lockNode, error) {
	node, err := q.create(ctx, kind)
	if err != nil {
		return lockNode{}, err
	}
	err = q.await(ctx, &node, pred, block)
	switch {
	case err == nil:
		return node, nil
	case errors.Is(err, errSessionGone) && node.ephemeral:
		return lockNode{}, err
	default:
		// A persistent node outlives its session, so it is removed here
		// too (waiting behind it in the new session is the
		// persistent-lock flaw only when its owner crashed).
		if rerr := q.abandon(ctx, node); rerr != nil && !errors.Is(rerr, ErrLeaseLost) {
			return lockNode{}, errors.Join(err, fmt.Errorf("removing %s after a failed acquire: %w", node.path, rerr))
		}
		return lockNode{}, err
	}
}

// await is the list-and-wait loop: list the children, ask pred, and wait
// for the node in the way (or for any change, in the herd style).
func (q *queue) await(ctx context.Context, node *lockNode, pred predicate, block bool) error {
	losses := 0
	for range waitRoundsMax {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s := q.conn.Session(); node.ephemeral && sessionGone(s, node.session) {
			if !q.trustOldNode {
				return errSessionGone
			}
			// The flaw: the node of the old session is taken for the
			// new session's own.
			if s.Connected() {
				node.session = s.ID
			}
		}
		renewals := q.renew.count()
		waited, err := q.round(ctx, *node, pred, block)
		switch {
		case err == nil && !waited && q.renew != nil && node.ephemeral:
			// The owner check: the node's ephemeralOwner is the session
			// its create ran in (its protected name carries it). A grant
			// read in another session stands on a node that is not the
			// candidate's own: the old session's, which dies with it.
			if s := q.conn.Session(); s.ID != node.session {
				if !q.trustOldNode {
					return errSessionGone
				}
				node.session = s.ID
			}
			return nil
		case err == nil && !waited:
			return nil
		case q.renewedUnder(err, renewals):
			// The listener replaced the handle (NewSession): its
			// requests failed and its watches ended. Look again in the
			// new session.
			if _, err := awaitSession(ctx, q.conn); err != nil {
				return err
			}
		case err == nil:
			losses = 0
		case isConnectionLoss(err):
			losses++
			if losses > connectionRetriesMax {
				return fmt.Errorf("waiting in %s: %w", q.dir, ErrGaveUp)
			}
			if _, err := awaitSession(ctx, q.conn); err != nil {
				return err
			}
		case isSessionLoss(err):
			return errSessionGone
		default:
			return err
		}
	}
	return fmt.Errorf("waiting in %s: %w", q.dir, ErrGaveUp)
}

// round is one list-and-wait round. It reports waited false when the lock
// is granted, true after a wait (or a blocker found gone) that calls for
// another round.
func (q *queue) round(ctx context.Context, node lockNode, pred predicate, block bool) (waited bool, err error) {
	kids, err := q.list(ctx, q.kids)
	if err != nil {
		return false, err
	}
	q.kids = kids
	me := indexOf(kids, node.nameIn(q.dir))
	if me < 0 {
		return false, errSessionGone
	}
	blocker, granted := pred(kids, me)
	if granted {
		return false, nil
	}
	if !block {
		return false, ErrNotAcquired
	}
	var watch <-chan zk.Event
	switch q.style {
	case waitPredecessor:
		_, _, watch, err = q.conn.GetW(ctx, q.dir+"/"+blocker)
		if errors.Is(err, zk.ErrNoNode) {
			return true, nil // gone already: no watch was set; list again
		}
	case waitLostWakeup:
		// The flaw: the answer of exists is ignored, and a watch on a
		// node that is already gone waits for its creation, forever.
		_, _, watch, err = q.conn.ExistsW(ctx, q.dir+"/"+blocker)
	case waitChildren:
		// The first listing set no watch, so the one that grants leaves
		// none behind; list again with the watch, and look again.
		var names []string
		names, _, watch, err = q.conn.ChildrenW(ctx, q.dir)
		if err == nil {
			kids = sortChildren(kids, names)
			q.kids = kids
			if me = indexOf(kids, node.nameIn(q.dir)); me < 0 {
				return false, errSessionGone
			}
			if _, granted := pred(kids, me); granted {
				return false, nil // the watch leaks: one spurious event later
			}
		}
	}
	if err != nil {
		return false, err
	}
	// The watch goes to Wait in the queue's own one-channel array: the
	// variadic argument's array escapes through the interface, and was
	// allocated at every wait.
	q.waitOn[0] = watch
	ev, err := q.conn.Wait(ctx, q.waitOn[:]...)
	q.waitOn[0] = nil
	if err != nil {
		return false, err
	}
	if ev.Type == zk.EventNotWatching {
		switch {
		case isSessionLoss(ev.Err) && node.ephemeral:
			return false, errSessionGone
		case errors.Is(ev.Err, zk.ErrClosing):
			return false, zk.ErrClosing
		}
	}
	return true, nil
}

// list returns the sorted children of the directory, in buf's array if
// it has room.
func (q *queue) list(ctx context.Context, buf []child) ([]child, error) {
	if err := q.sync(ctx); err != nil {
		return nil, err
	}
	names, _, err := q.conn.Children(ctx, q.dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return sortChildren(buf, names), nil
}
