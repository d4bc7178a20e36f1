package scenarios

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// blame names, for the liveness check, what the waiters are stuck
// behind: the node at the head of each queue of the lock's tree as the
// probe found it after the run, the session that owns it (and that
// session's client), and the history that left it there, from the facts:
// the lease that stands on it, the create call that made it (the
// clients' own record of their calls, and on the simulator the server's
// record of the node's life), and what the waiter does. The causes it
// tells apart:
//
//   - held: a lease stands on it and was never released;
//   - a failed release: its lease's release returned an error, or never
//     returned, or returned with the node still there;
//   - an error after create: the client's create returned the node, and
//     the acquire that made it then failed;
//   - a lost create reply: the server made the node, but the create that
//     asked for it got no answer the client could read (the client does
//     not know the node is its own);
//   - a waiter waiting on itself: the waiter's own node, made by the
//     acquire that waits, heads the queue.
//
// On a real server the probe and the clients' calls are all there is:
// the node's owner comes from the probe, its maker from the session that
// owns it; the step at which the server made it is the simulator's only.
func (r *runner) blame(waiters []int) string {
	if !r.probed {
		return ""
	}
	heads := map[string]probeNode{}
	var dirs []string
	for _, n := range r.probe {
		if !n.isQueue {
			continue
		}
		dir := path.Dir(n.path)
		h, ok := heads[dir]
		if !ok {
			dirs = append(dirs, dir)
		}
		if !ok || seqOf(n.path) < seqOf(h.path) {
			heads[dir] = n
		}
	}
	if len(dirs) == 0 {
		for _, n := range r.probe {
			if n.owner != 0 || len(r.probe) == 1 {
				return "the lock node " + r.describeNode(n, waiters)
			}
		}
		return "no lock node is left: the waiters wait on nothing"
	}
	var parts []string
	for _, d := range dirs {
		parts = append(parts, "queue head "+r.describeNode(heads[d], waiters))
	}
	return strings.Join(parts, "; ")
}

func seqOf(p string) string { return p[len(p)-10:] }

// nodeFacts is what is known of a node the probe found.
type nodeFacts struct {
	n       probeNode
	owner   int64 // the owning session (0: persistent)
	client  int   // the client of the owning session, or of the create
	known   bool  // client is known
	life    *znodeLife
	lease   *lockRec   // the last lease that stood on the node
	create  *createRec // the create that returned the node's name
	lost    *createRec // a create of the client's that asked for it and got no name back
	acquire *lockRec   // the acquire during which the node was made
}

func (r *runner) factsOf(n probeNode) nodeFacts {
	f := nodeFacts{n: n, owner: n.owner}
	if r.real == nil {
		for _, z := range r.obs.tree.lives {
			if z.path == n.path && z.czxid == n.czxid {
				f.life = z
			}
		}
	}
	if f.owner != 0 {
		f.client, f.known = r.obs.sessionClient[f.owner]
	}
	if f.life != nil && f.life.created && f.life.creator != 0 {
		f.client, f.known = f.life.creator, true
	}
	for _, l := range r.hist.locks {
		if !l.granted || !slices.Contains(l.nodes, n.path) {
			continue
		}
		if f.life != nil && len(l.lives) > 0 && !slices.Contains(l.lives, f.life) {
			continue // a lease on an earlier node of that name
		}
		f.lease = l
	}
	for i := range r.obs.creates {
		c := &r.obs.creates[i]
		if c.name == n.path && (!f.known || c.client == f.client) {
			f.create = c
		}
	}
	if f.create == nil && f.known {
		// The create that asked for the node and got no name back: the
		// last of the client's before the server made the node.
		for i := range r.obs.creates {
			c := &r.obs.creates[i]
			if c.client != f.client || c.name != "" || !asksFor(c.path, n.path) {
				continue
			}
			if f.life != nil && f.life.created && c.call > f.life.createStep {
				continue
			}
			f.lost = c
		}
	}
	made := f.create
	if made == nil {
		made = f.lost
	}
	if made != nil {
		for _, l := range r.hist.locks {
			if l.client == made.client && l.acquireCall <= made.call && (!l.returned || made.call <= l.acquireReturn) {
				f.acquire = l
			}
		}
	}
	return f
}

// asksFor reports whether a create of asked can have made node: the
// same path, or a sequential node of that prefix.
func asksFor(asked, node string) bool {
	if asked == node {
		return true
	}
	return strings.HasPrefix(node, asked) && len(node) == len(asked)+10 && sequentialName(node)
}

func (r *runner) describeNode(n probeNode, waiters []int) string {
	f := r.factsOf(n)
	var b strings.Builder
	b.WriteString(n.path)
	if f.owner == 0 {
		fmt.Fprintf(&b, " is persistent (czxid %#x): no session end will remove it", n.czxid)
	} else {
		fmt.Fprintf(&b, " is owned by session %#x", f.owner)
		if c, ok := r.obs.sessionClient[f.owner]; ok {
			fmt.Fprintf(&b, " of c%d", c)
			if r.obs.crashed(c) {
				b.WriteString(" (crashed, its session still open)")
			}
		}
	}
	switch {
	case f.life != nil && f.life.created && f.life.creator != 0:
		fmt.Fprintf(&b, ", made by the server at step %d for c%d", f.life.createStep, f.life.creator)
	case f.life != nil && f.life.created:
		fmt.Fprintf(&b, ", made by the server at step %d", f.life.createStep)
	}
	b.WriteString(": ")
	b.WriteString(r.cause(f, waiters))
	return b.String()
}

// cause tells the history that left the node where it is.
func (r *runner) cause(f nodeFacts, waiters []int) string {
	if l := f.lease; l != nil {
		// An election's lease is a term: its holder leads, and gives
		// leadership up by abdicating.
		held, holds, lease, releasing, released, release := "held", "holds", "lease", "releasing it", "released", "release"
		if r.sc.Election() {
			held, holds, lease, releasing, released, release = "led on", "leads on", "term", "abdicating", "abdicated", "abdication"
		}
		switch {
		case !l.releaseCalled && r.obs.crashed(l.client):
			return fmt.Sprintf("c%d %s it (its %s from step %d) and crashed at step %d before %s", l.client, held, lease, l.acquireReturn, r.obs.crashStep[l.client], releasing)
		case !l.releaseCalled && slices.Contains(waiters, l.client):
			return fmt.Sprintf("c%d %s it (its %s from step %d) and waits behind it for another grant: the waiter waits on itself (a self-deadlock)", l.client, holds, lease, l.acquireReturn)
		case !l.releaseCalled:
			return fmt.Sprintf("c%d %s it (its %s from step %d), never %s", l.client, holds, lease, l.acquireReturn, released)
		case !l.releaseReturned:
			return fmt.Sprintf("c%d's %s from step %d never returned (a failed %s)", l.client, release, l.releaseCall, release)
		case l.releaseErr != nil:
			return fmt.Sprintf("c%d's %s at step %d failed (%v) and left it (a failed %s)", l.client, release, l.releaseCall, l.releaseErr, release)
		default:
			return fmt.Sprintf("c%d's %s at step %d returned without removing it (a failed %s)", l.client, release, l.releaseCall, release)
		}
	}
	waiting := f.known && slices.Contains(waiters, f.client)
	if c := f.create; c != nil {
		a := f.acquire
		switch {
		case a != nil && a.returned && !a.granted:
			return fmt.Sprintf("c%d's acquire from step %d created it (its create returned at step %d) and then failed at step %d (%v) without removing it (an error after create)",
				c.client, a.acquireCall, c.ret, a.acquireReturn, a.acquireErr)
		case a != nil && !a.returned && waiting:
			return fmt.Sprintf("c%d's own node, made by the acquire that waits (from step %d): the waiter waits on itself, for a watch that will not fire", c.client, a.acquireCall)
		}
		return fmt.Sprintf("c%d's create returned it at step %d, and no lease stands on it: orphaned", c.client, c.ret)
	}
	if c := f.lost; c != nil {
		why := "the call never returned"
		if c.err != nil {
			why = c.err.Error()
		}
		s := fmt.Sprintf("c%d's create at step %d asked for it and lost its reply (%s): the server made the node, and c%d does not know it is its own (a lost create reply)", c.client, c.call, why, c.client)
		if waiting {
			s += fmt.Sprintf("; c%d waits behind it", c.client)
		}
		return s
	}
	if f.owner != 0 && !f.known {
		return "a session no client of the run had: orphaned"
	}
	return "no create of any client returned it, and no lease stands on it: orphaned"
}
