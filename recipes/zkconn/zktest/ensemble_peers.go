package zktest

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// Peer links: each server reaches each other server's quorum and
// election ports through a link of its own (a passthrough TCP relay on
// a loopback address of the pair's own), so that the ensemble can make
// one follower lag: Lag holds the bytes on its links to the other
// servers (the leader's PROPOSALs and COMMITs wait in the relay and in
// the kernel's socket buffers, its ACKs too) without closing anything.
// Server i's config names server j at 127.0.0.(peerHostBase+10i+j), on
// j's own port numbers; j's own line names its real address, where it
// binds. Election traffic passes through links too (a server.N line has
// one host for both ports), never held.

// peerHostBase: server i's link to server j listens on
// 127.0.0.(peerHostBase+10i+j).
const peerHostBase = 100

// peerLinkBufBytes is the relay's copy buffer.
const peerLinkBufBytes = 32 << 10

func peerHost(from, to int) string { return fmt.Sprintf("127.0.0.%d", peerHostBase+10*from+to) }

// A peerLink relays TCP connections from ln to target, both ways; while
// held, it forwards nothing (and closes nothing).
type peerLink struct {
	ln     net.Listener
	target string

	mu        sync.Mutex
	heldUntil time.Time
	changed   chan struct{} // closed and replaced when heldUntil changes
	conns     map[net.Conn]struct{}
	closed    bool
	wg        sync.WaitGroup
}

func startPeerLink(listen, target string) (*peerLink, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	l := &peerLink{ln: ln, target: target, changed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	l.wg.Add(1)
	go l.accept()
	return l, nil
}

func (l *peerLink) accept() {
	defer l.wg.Done()
	for {
		in, err := l.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.DialTimeout("tcp", l.target, 5*time.Second)
		if err != nil {
			in.Close()
			continue
		}
		if !l.track(in, out) {
			return
		}
		l.wg.Add(2)
		go l.pipe(in, out)
		go l.pipe(out, in)
	}
}

// track records a relayed pair; false once the link is closed.
func (l *peerLink) track(conns ...net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		l.conns[c] = struct{}{}
	}
	return true
}

// pipe copies from src to dst, waiting out any hold before each write;
// when either side ends, both close (the peer sees what it would see of
// a direct connection).
func (l *peerLink) pipe(src, dst net.Conn) {
	defer l.wg.Done()
	defer src.Close()
	defer dst.Close()
	buf := make([]byte, peerLinkBufBytes)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			l.waitHeld()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// waitHeld returns once the link is not held.
func (l *peerLink) waitHeld() {
	for {
		l.mu.Lock()
		wait, changed, closed := time.Until(l.heldUntil), l.changed, l.closed
		l.mu.Unlock()
		if wait <= 0 || closed {
			return
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-changed:
		}
		timer.Stop()
	}
}

// hold holds the link's traffic for d from now (d <= 0 releases it).
func (l *peerLink) hold(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.heldUntil = time.Now().Add(d)
	close(l.changed)
	l.changed = make(chan struct{})
}

// cut closes every connection through the link at once, the bytes it
// holds lost; new connections are relayed as before.
func (l *peerLink) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		c.Close()
	}
	l.conns = map[net.Conn]struct{}{}
	close(l.changed) // a pipe waiting out a hold finds its connection closed
	l.changed = make(chan struct{})
}

// close stops the link and every connection through it.
func (l *peerLink) close() {
	l.mu.Lock()
	l.closed = true
	close(l.changed)
	l.changed = make(chan struct{})
	for c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
	l.ln.Close()
	l.wg.Wait()
}

// Lag holds every byte between server id and the other servers for d:
// as a follower, it receives nothing from its leader (no PROPOSAL, no
// COMMIT) and its ACKs do not arrive, while it goes on serving its
// clients' reads from what it has applied: they are stale. Nothing is
// closed; when d is over the bytes flow and it catches up. ZooKeeper
// drops a follower silent for syncLimit (2 s here) and the follower drops
// a leader silent as long, so a lag meant to keep the follower in the
// quorum stays well under that. It returns at once.
func (e *Ensemble) Lag(id int, d time.Duration) {
	e.Member(id) // fails the test for a server the ensemble does not have
	e.requirePeerLinks()
	for _, l := range e.links {
		if l.from == id || l.to == id {
			l.quorum.hold(d)
		}
	}
}

// CutPeers closes every connection between server id and the other
// servers at once, quorum and election alike, and what Lag held on them
// is lost: a PROPOSAL the leader sent but Lag held never reaches a
// follower. Reconnections are relayed as before (and held, while a Lag
// lasts).
func (e *Ensemble) CutPeers(id int) {
	e.Member(id) // fails the test for a server the ensemble does not have
	e.requirePeerLinks()
	for _, l := range e.links {
		if l.from == id || l.to == id {
			l.quorum.cut()
			l.election.cut()
		}
	}
}

// A peerPair is server from's two links to server to.
type peerPair struct {
	from, to         int
	quorum, election *peerLink
}

// startPeerLinks starts server from's links to server to, whose real
// ports are given.
func startPeerLinks(from, to, quorumPort, electionPort int) (peerPair, error) {
	p := peerPair{from: from, to: to}
	var err error
	if p.quorum, err = startPeerLink(net.JoinHostPort(peerHost(from, to), fmt.Sprint(quorumPort)), net.JoinHostPort(ensembleHost(to), fmt.Sprint(quorumPort))); err != nil {
		return p, err
	}
	if p.election, err = startPeerLink(net.JoinHostPort(peerHost(from, to), fmt.Sprint(electionPort)), net.JoinHostPort(ensembleHost(to), fmt.Sprint(electionPort))); err != nil {
		p.quorum.close()
		return p, err
	}
	return p, nil
}

func (p peerPair) close() {
	if p.quorum != nil {
		p.quorum.close()
	}
	if p.election != nil {
		p.election.close()
	}
}

// requirePeerLinks panics on an ensemble without peer links
// (EnsembleOptions.DirectPeers), where Lag and CutPeers could do nothing.
func (e *Ensemble) requirePeerLinks() {
	if len(e.links) == 0 {
		panic("zktest: the ensemble was started with DirectPeers: it has no peer links to hold or cut")
	}
}
